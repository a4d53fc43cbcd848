package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine/internal/openschema"
	"github.com/google/jsonschema-go/jsonschema"
)

// Input is the object form of an agent's input: one new user message, or a whole
// conversation. A string input is the same turn as {Message: s}.
//
// Input is also AG-UI's RunAgentInput, accepted as an AG-UI client sends it, so a flow
// whose input type is Input serves any AG-UI frontend unchanged:
//
//   - ThreadID is the thread of RUN_STARTED and RUN_FINISHED (unless the run's options
//     say otherwise).
//   - RunID is accepted and not used as the run's id: the engine names each agent run
//     itself (the run id is the storage key of the run's event log, unique and owned by
//     the server, so a client can neither collide with nor guess another caller's log).
//     The client learns the engine's id from RUN_STARTED.runId, as AG-UI clients do. When
//     RunID is set, the run's message ids are prefixed with the engine's run id, so they
//     stay unique across the runs of a thread, as AG-UI clients need.
//   - Messages take every AG-UI 1.0 role; see [InputMessage].
//   - Tools are client-side tools, offered to the model beside the agent's own; see
//     [ClientTool].
//   - Context reaches the model as system context after the agent's system prompt.
//   - State is the run's starting AG-UI state; its events carry it as STATE_SNAPSHOT and STATE_DELTA.
//   - ForwardedProps is passed through untouched: the agent ignores it, the flow's handler
//     may read it.
//   - Resume answers the approval interrupts of a parked run; see [ResumeEntry]. With
//     Resume set, Messages, Tools, Context and State are not read: the parked run
//     continues with its own.
type Input struct {
	Message  string         `json:"message,omitempty"`
	Messages []InputMessage `json:"messages,omitempty"`
	ThreadID string         `json:"threadId,omitempty"`

	RunID           string          `json:"runId,omitempty"`
	ParentRunID     string          `json:"parentRunId,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	Tools           []ClientTool    `json:"tools,omitempty"`
	Context         []ContextItem   `json:"context,omitempty"`
	State           json.RawMessage `json:"state,omitempty"`
	ForwardedProps  json.RawMessage `json:"forwardedProps,omitempty"`
	Resume          []ResumeEntry   `json:"resume,omitempty"`
}

// InputMessage is one message of a conversation passed as input, in AG-UI 1.0's shape.
// The roles and what becomes of them:
//
//   - user: Content, or text Parts (joined); a non-text part is a ValidationError, since
//     the engine's providers take text only.
//   - assistant: Content (may be empty) and the ToolCalls the model made.
//   - tool: the result of the call named by ToolCallID (Content, or Error when Content is
//     empty). Every call must be answered by tool messages right after its assistant
//     message, and every tool message must answer such a call: anything else is a
//     ValidationError naming the message, before the model is called.
//   - system and developer: system messages (providers have no developer role).
//   - activity and reasoning: dropped. Activity messages are the frontend's own UI
//     records, not conversation; reasoning is a model's private trace, which providers
//     accept back only in their own encrypted forms.
type InputMessage struct {
	ID      string `json:"id,omitempty"`
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts is the content of a message sent as content parts instead of a string.
	Parts      []ContentPart   `json:"-"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []InputToolCall `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Error      string          `json:"error,omitempty"`
	// ActivityType and Activity carry an activity message, which the agent drops.
	ActivityType string          `json:"activityType,omitempty"`
	Activity     json.RawMessage `json:"-"`
}

// ContentPart is one AG-UI content part: {type: "text", text} or a media part, kept as
// sent in Raw.
type ContentPart struct {
	Type string
	Text string
	Raw  json.RawMessage
}

// InputToolCall is a tool call of an assistant message, as AG-UI sends it.
type InputToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ContextItem is one piece of AG-UI context: ambient information for the run.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ClientTool is a tool the client offers (RunAgentInput.tools). The model may call it
// like the agent's own tools; the call is streamed (TOOL_CALL_START/ARGS/END) and the
// run ends, so the client runs the tool and continues with its result in the next run's
// messages. Client tools never run on the server and no gate applies to them. When a
// client tool has the name of one of the agent's tools (its flow id or the name the
// model sees), the agent's tool wins and the client tool is not offered.
type ClientTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ResumeEntry answers one interrupt (RunAgentInput.resume). Status "resolved" approves
// the call, with Payload.args, when given, replacing the tool input; "cancelled" denies
// it, with Payload.reason, when given, as what the model sees. See [ResumePayload].
//
// A resume is sent to the flow that started the run, and its response shows the run's
// events, so its caller needs the follow route's access to the run (its tenant, its
// starter or an operator, the flow's gates) beside the tools' gates; any other caller
// gets the NotFound of an unknown interrupt. Who may approve but not read the run
// decides through the approval routes, which show no events.
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// The statuses of a [ResumeEntry].
const (
	ResumeResolved  = "resolved"
	ResumeCancelled = "cancelled"
)

// ResumePayload is the payload of a [ResumeEntry] the engine reads: the shape the
// interrupts' responseSchema describes.
type ResumePayload struct {
	Args   json.RawMessage `json:"args,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// UnmarshalJSON accepts content as a string, as content parts, or as an activity
// message's object.
func (m *InputMessage) UnmarshalJSON(b []byte) error {
	type fields InputMessage
	var raw struct {
		fields
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = InputMessage(raw.fields)
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(c, &parts); err != nil {
			return err
		}
		m.Parts = make([]ContentPart, 0, len(parts))
		for _, p := range parts {
			var probe struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(p, &probe); err != nil {
				return fmt.Errorf("content part: %w", err)
			}
			m.Parts = append(m.Parts, ContentPart{Type: probe.Type, Text: probe.Text, Raw: p})
		}
	case c[0] == '{':
		m.Activity = append(json.RawMessage(nil), c...)
	default:
		return errors.New("content: expected a string, content parts or an object")
	}
	return nil
}

// MarshalJSON writes the message back as it was received (a durable run stores its
// input and decodes it again when it resumes).
func (m InputMessage) MarshalJSON() ([]byte, error) {
	type fields InputMessage
	out := struct {
		fields
		Content any `json:"content,omitempty"`
	}{fields: fields(m)}
	switch {
	case m.Parts != nil:
		parts := make([]json.RawMessage, len(m.Parts))
		for i, p := range m.Parts {
			if len(p.Raw) > 0 {
				parts[i] = p.Raw
				continue
			}
			b, err := json.Marshal(map[string]string{"type": p.Type, "text": p.Text})
			if err != nil {
				return nil, err
			}
			parts[i] = b
		}
		out.Content = parts
	case m.Activity != nil:
		out.Content = m.Activity
	case m.Content != "":
		out.Content = m.Content
	}
	return json.Marshal(out)
}

// JSONSchema describes Input for flows that take it: AG-UI's RunAgentInput with the
// engine's own forms. Message content may be a string, content parts or an activity
// message's object, state, forwardedProps and resume payloads any JSON value, and the
// members AG-UI adds to its objects (metadata, encryptedValue…) are let through.
func (Input) JSONSchema() *jsonschema.Schema {
	type fields Input
	s := openschema.For[fields]()
	s.Properties["messages"].Items.Properties["content"] = &jsonschema.Schema{Description: "a string, AG-UI content parts, or an activity message's object"}
	return s
}
