package ai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/journal"
)

// Input is the object form of an agent's input ([agui.Input]): one new user message,
// or a whole conversation, or AG-UI's RunAgentInput as an AG-UI client sends it.
type Input = agui.Input

// InputMessage is one message of a conversation passed as input ([agui.InputMessage]).
type InputMessage = agui.InputMessage

// ContentPart is one AG-UI content part ([agui.ContentPart]).
type ContentPart = agui.ContentPart

// InputToolCall is a tool call of an assistant message ([agui.InputToolCall]).
type InputToolCall = agui.InputToolCall

// ContextItem is one piece of AG-UI context ([agui.ContextItem]).
type ContextItem = agui.ContextItem

// ClientTool is a tool the client offers ([agui.ClientTool]).
type ClientTool = agui.ClientTool

// ResumeEntry answers one interrupt ([agui.ResumeEntry]).
type ResumeEntry = agui.ResumeEntry

// The statuses of a [ResumeEntry].
const (
	ResumeResolved  = agui.ResumeResolved
	ResumeCancelled = agui.ResumeCancelled
)

// ResumePayload is the payload of a [ResumeEntry] the engine reads ([agui.ResumePayload]).
type ResumePayload = agui.ResumePayload

// ErrMessageAndMessages is returned when an input carries both forms.
var ErrMessageAndMessages = errors.New("ai: pass message or messages, not both")

// invalid reports a bad agent input as a ValidationError, so a flow that passes its
// caller's input straight to [Run] answers 400, not 500.
func invalid(err error, path string) error {
	return engine.Invalid(engine.ValidationIssue{Path: path, Message: err.Error()}).WithCause(err)
}

// runInput is an agent input as the run uses it.
type runInput struct {
	messages []Message
	threadID string
	tools    []ClientTool
	context  []ContextItem
	state    json.RawMessage
	resume   []ResumeEntry
	// clientRunID is the runId an AG-UI client sent: unused as an id, it marks the client.
	clientRunID string
}

// decodeInput turns an agent input (a string, an [Input], or any value that encodes to
// the same JSON object) into an [Input].
func decodeInput(input any) (Input, error) {
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
			return in, fmt.Errorf("ai: encoding agent input: %w", err)
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			in.Message = s
			break
		}
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			return in, invalid(errors.New("ai: agent input must be a string, {message} or {messages}"), "")
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, invalid(fmt.Errorf("ai: agent input: %w", err), "")
		}
	}
	return in, nil
}

// conversation turns an agent input into the opening messages, the thread id it names,
// and the rest of what AG-UI's run input carries.
func conversation(input any) (runInput, error) {
	in, err := decodeInput(input)
	if err != nil {
		return runInput{}, err
	}
	if !journal.ValidID(in.ThreadID) {
		return runInput{}, invalid(errors.New("ai: threadId may not hold a NUL character"), "threadId")
	}
	out := runInput{threadID: in.ThreadID, clientRunID: in.RunID}
	if len(in.Resume) > 0 {
		out.resume = in.Resume
		return out, nil
	}
	if in.Message != "" && len(in.Messages) > 0 {
		return runInput{}, invalid(ErrMessageAndMessages, "")
	}
	if err := checkRunExtras(in); err != nil {
		return runInput{}, err
	}
	out.tools, out.context = in.Tools, in.Context
	if s := bytes.TrimSpace(in.State); len(s) > 0 && string(s) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, s); err != nil {
			return runInput{}, invalid(fmt.Errorf("ai: state: %w", err), "state")
		}
		out.state = buf.Bytes()
	}
	if in.Message != "" {
		out.messages = []Message{{Role: RoleUser, Content: in.Message}}
		return out, nil
	}
	if len(in.Messages) == 0 {
		return runInput{}, invalid(errors.New("ai: agent input needs a message or messages"), "message")
	}
	if out.messages, err = history(in.Messages); err != nil {
		return runInput{}, err
	}
	return out, nil
}

// toolNameRe is what providers accept as a tool name; a client tool's name must match it
// once [wireName] has replaced its dots.
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkRunExtras checks the members of AG-UI's run input beside the messages.
func checkRunExtras(in Input) error {
	for i, t := range in.Tools {
		if t.Name == "" {
			return invalid(errors.New("ai: a client tool needs a name"), fmt.Sprintf("tools[%d].name", i))
		}
		if !toolNameRe.MatchString(wireName(t.Name)) {
			return invalid(fmt.Errorf("ai: a client tool's name must be 1 to 64 letters, digits, '_', '-' or '.' (sent to the model as '_'), got %q", t.Name),
				fmt.Sprintf("tools[%d].name", i))
		}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" && !isJSONObject(string(t.Parameters)) {
			return invalid(errors.New("ai: a client tool's parameters must be a JSON Schema object"), fmt.Sprintf("tools[%d].parameters", i))
		}
	}
	return nil
}

// history converts an AG-UI conversation into provider messages, checking that every
// tool call is answered by the tool messages right after it and that every tool message
// answers one.
func history(msgs []InputMessage) ([]Message, error) {
	out := make([]Message, 0, len(msgs))
	pending := map[string]bool{} // calls of the last assistant message without a result
	pendingAt := -1              // index of that assistant message
	unanswered := func() error {
		m := msgs[pendingAt]
		for j, c := range m.ToolCalls {
			if pending[c.ID] {
				return invalid(fmt.Errorf("ai: tool call %q has no result: a tool message with toolCallId %q must follow its assistant message", c.ID, c.ID),
					fmt.Sprintf("messages[%d].toolCalls[%d]", pendingAt, j))
			}
		}
		return nil
	}
	for i, m := range msgs {
		path := fmt.Sprintf("messages[%d]", i)
		if Role(m.Role) != RoleTool && len(pending) > 0 {
			if err := unanswered(); err != nil {
				return nil, err
			}
		}
		switch m.Role {
		case "user", "system", "developer":
			text, err := partsText(m, path)
			if err != nil {
				return nil, err
			}
			role := Role(m.Role)
			if m.Role == "developer" {
				role = RoleSystem
			}
			out = append(out, Message{Role: role, Content: text})
		case "assistant":
			msg := Message{Role: RoleAssistant, Content: m.Content}
			clear(pending)
			for j, c := range m.ToolCalls {
				if c.ID == "" {
					return nil, invalid(errors.New("ai: a tool call needs an id"), fmt.Sprintf("%s.toolCalls[%d].id", path, j))
				}
				if c.Function.Name == "" {
					return nil, invalid(errors.New("ai: a tool call needs a function name"), fmt.Sprintf("%s.toolCalls[%d].function.name", path, j))
				}
				if pending[c.ID] {
					return nil, invalid(fmt.Errorf("ai: tool call id %q is used twice in the message: each call needs an id of its own", c.ID),
						fmt.Sprintf("%s.toolCalls[%d].id", path, j))
				}
				pending[c.ID] = true
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: wireName(c.Function.Name), Arguments: c.Function.Arguments})
			}
			msg.ToolCalls = sendable(msg.ToolCalls)
			pendingAt = i
			out = append(out, msg)
		case "tool":
			if !pending[m.ToolCallID] {
				return nil, invalid(fmt.Errorf("ai: tool message answers no tool call: toolCallId %q names no unanswered call of the assistant message before it", m.ToolCallID),
					path+".toolCallId")
			}
			delete(pending, m.ToolCallID)
			text, err := partsText(m, path)
			if err != nil {
				return nil, err
			}
			if text == "" && m.Error != "" {
				text = errorContent("ToolError", map[string]any{"message": m.Error})
			}
			out = append(out, Message{Role: RoleTool, Content: text, ToolCallID: m.ToolCallID})
		case "activity", "reasoning":
			// Dropped; see InputMessage.
		default:
			return nil, invalid(fmt.Errorf("ai: role must be user, assistant, tool, system, developer, activity or reasoning, got %q", m.Role), path+".role")
		}
	}
	if len(pending) > 0 {
		if err := unanswered(); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, invalid(errors.New("ai: agent input needs a message or messages"), "messages")
	}
	return out, nil
}

// partsText returns a message's text: its content, or its text parts joined.
func partsText(m InputMessage, path string) (string, error) {
	if m.Parts == nil {
		return m.Content, nil
	}
	var b strings.Builder
	for j, p := range m.Parts {
		if p.Type != "text" {
			return "", invalid(fmt.Errorf("ai: content part of type %q: only text parts are supported", p.Type), fmt.Sprintf("%s.content[%d]", path, j))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}
