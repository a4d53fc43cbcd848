package agui

import "encoding/json"

// TypeMessagesSnapshot is the type of [MessagesSnapshot].
const TypeMessagesSnapshot Type = "MESSAGES_SNAPSHOT"

// MessagesSnapshot carries the whole conversation of the run so far as AG-UI messages:
// what the client had sent and what the run added (assistant text and tool calls, tool
// results). The engine sends it before the RUN_FINISHED that carries an interrupt, as
// AG-UI 1.0's interrupt rules ask, so a client that answers the interrupt later starts
// from the conversation as the run left it.
type MessagesSnapshot struct {
	Messages []InputMessage `json:"messages"`
}

// Type reports [TypeMessagesSnapshot].
func (MessagesSnapshot) Type() Type { return TypeMessagesSnapshot }
func (MessagesSnapshot) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e MessagesSnapshot) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// appendMessagesSnapshot encodes a MESSAGES_SNAPSHOT; an absent list is sent empty.
func appendMessagesSnapshot(dst []byte, e MessagesSnapshot) ([]byte, error) {
	msgs := e.Messages
	if msgs == nil {
		msgs = []InputMessage{}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"type":"MESSAGES_SNAPSHOT","messages":`...)
	dst = append(dst, b...)
	return append(dst, '}'), nil
}
