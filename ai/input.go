package ai

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine"
)

// Input is the object form of an agent's input: one new user message, or a whole
// conversation. A string input is the same turn as {Message: s}.
type Input struct {
	Message  string         `json:"message,omitempty"`
	Messages []InputMessage `json:"messages,omitempty"`
	ThreadID string         `json:"threadId,omitempty"`
}

// InputMessage is one message of a conversation passed as input.
type InputMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ErrMessageAndMessages is returned when an input carries both forms.
var ErrMessageAndMessages = errors.New("ai: pass message or messages, not both")

// invalid reports a bad agent input as a ValidationError, so a flow that passes its
// caller's input straight to [Run] answers 400, not 500.
func invalid(err error, path string) error {
	return engine.Invalid(engine.ValidationIssue{Path: path, Message: err.Error()}).WithCause(err)
}

// conversation turns an agent input (a string, an [Input], or any value that encodes to
// the same JSON object) into the opening messages and the thread id it names, if any.
func conversation(input any) ([]Message, string, error) {
	var in Input
	switch v := input.(type) {
	case string:
		in.Message = v
	case Input:
		in = v
	case *Input:
		if v != nil {
			in = *v
		}
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, "", fmt.Errorf("ai: encoding agent input: %w", err)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			in.Message = s
			break
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, "", invalid(errors.New("ai: agent input must be a string, {message} or {messages}"), "")
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, "", invalid(fmt.Errorf("ai: agent input: %w", err), "")
		}
	}
	if in.Message != "" && len(in.Messages) > 0 {
		return nil, "", invalid(ErrMessageAndMessages, "")
	}
	if in.Message != "" {
		return []Message{{Role: RoleUser, Content: in.Message}}, in.ThreadID, nil
	}
	if len(in.Messages) == 0 {
		return nil, "", invalid(errors.New("ai: agent input needs a message or messages"), "message")
	}
	out := make([]Message, 0, len(in.Messages))
	for i, m := range in.Messages {
		switch Role(m.Role) {
		case RoleUser, RoleAssistant, RoleSystem:
		default:
			return nil, "", invalid(fmt.Errorf("ai: role must be user, assistant or system, got %q", m.Role), fmt.Sprintf("messages[%d].role", i))
		}
		out = append(out, Message{Role: Role(m.Role), Content: m.Content})
	}
	return out, in.ThreadID, nil
}
