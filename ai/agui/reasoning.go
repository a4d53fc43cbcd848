package agui

// The reasoning events of AG-UI 1.0: a model's reasoning (OpenAI-compatible servers'
// reasoning text, Anthropic's extended thinking) streams as its own messages, inside a
// span:
//
//	REASONING_START, REASONING_MESSAGE_START, REASONING_MESSAGE_CONTENT…,
//	REASONING_MESSAGE_END, [REASONING_ENCRYPTED_VALUE], REASONING_END
//
// The engine opens one span per reasoning message and gives both the message's id (m-N,
// from the run's message numbering). A provider's opaque artefact (Anthropic's thinking
// signature, or the data of a redacted thinking block) follows the message as
// REASONING_ENCRYPTED_VALUE with subtype "message", as AG-UI clients store it on the
// message and can send it back.

// RoleReasoning is the role of reasoning messages; AG-UI requires it on
// REASONING_MESSAGE_START.
const RoleReasoning = "reasoning"

// The subtypes of [ReasoningEncryptedValue]: what its EntityID names.
const (
	EncryptedMessage  = "message"
	EncryptedToolCall = "tool-call"
)

// ReasoningStart opens a span of reasoning, which holds one or more reasoning messages.
type ReasoningStart struct {
	MessageID string `json:"messageId"`
}

// Type reports [TypeReasoningStart].
func (ReasoningStart) Type() Type { return TypeReasoningStart }
func (ReasoningStart) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ReasoningStart) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ReasoningMessageStart opens a reasoning message. Its role is always
// [RoleReasoning], which the encoding writes.
type ReasoningMessageStart struct {
	MessageID string `json:"messageId"`
}

// Type reports [TypeReasoningMessageStart].
func (ReasoningMessageStart) Type() Type { return TypeReasoningMessageStart }
func (ReasoningMessageStart) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ReasoningMessageStart) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ReasoningMessageContent carries one piece of reasoning text. Delta is always sent,
// even when empty, because AG-UI requires it.
type ReasoningMessageContent struct {
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// Type reports [TypeReasoningMessageContent].
func (ReasoningMessageContent) Type() Type { return TypeReasoningMessageContent }
func (ReasoningMessageContent) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ReasoningMessageContent) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ReasoningMessageEnd closes a reasoning message.
type ReasoningMessageEnd struct {
	MessageID string `json:"messageId"`
}

// Type reports [TypeReasoningMessageEnd].
func (ReasoningMessageEnd) Type() Type { return TypeReasoningMessageEnd }
func (ReasoningMessageEnd) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ReasoningMessageEnd) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ReasoningEnd closes a span of reasoning.
type ReasoningEnd struct {
	MessageID string `json:"messageId"`
}

// Type reports [TypeReasoningEnd].
func (ReasoningEnd) Type() Type { return TypeReasoningEnd }
func (ReasoningEnd) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ReasoningEnd) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ReasoningEncryptedValue carries a provider's opaque reasoning artefact, which a client
// keeps and may send back without being able to read it. Subtype says what EntityID
// names: a message ([EncryptedMessage]) or a tool call ([EncryptedToolCall]).
type ReasoningEncryptedValue struct {
	Subtype        string `json:"subtype"`
	EntityID       string `json:"entityId"`
	EncryptedValue string `json:"encryptedValue"`
}

// Type reports [TypeReasoningEncryptedValue].
func (ReasoningEncryptedValue) Type() Type { return TypeReasoningEncryptedValue }
func (ReasoningEncryptedValue) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ReasoningEncryptedValue) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }
