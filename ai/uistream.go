package ai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/uimessage"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/internal/bufpool"
)

// StreamUI runs agent on an AI SDK chat request in the handler of a streaming flow, as
// [Stream] does, and writes the run to out as the Vercel AI SDK's UI message stream
// (package uimessage): what useChat and the AI SDK's DefaultChatTransport read. It is an
// opt-in second encoding of the same run: the run, its durable steps, its approvals and
// its log (AG-UI, served by the follow route) are those of [Stream].
//
//	var ChatUI = engine.DefineStream[uimessage.Request, uimessage.Chunk, ai.RunResult](Chat, "ui", engine.POST("/chat/ui"), engine.Durable())
//
//	engine.BindStream(ChatUI, func(fx *engine.Fx, in uimessage.Request, out *engine.Stream[uimessage.Chunk]) (ai.RunResult, error) {
//		return ai.StreamUI(fx, assistant, in, out, ai.RunOptions{})
//	})
//
// The request's id is the run's thread id. Its messages are the conversation: text
// parts, tool parts with their input and output (output-error and output-denied parts
// reach the model as the error and the denial it saw), and steps (step-start) splitting
// an assistant message into the model turns it came from; reasoning, data, source and
// file parts of assistant messages are not sent back to the model, a file part of a
// user message is a ValidationError (the providers take text only), and a tool call
// with no output yet is left out.
//
// A tool that needs approval ([Approval]) parks the run: its tool part gets a
// tool-approval-request whose approvalId is the interrupt id, and the stream finishes.
// The client answers with its next request (the AI SDK's addToolApprovalResponse, then
// sendMessage or sendAutomaticallyWhen): when the last message is an assistant message
// whose tool parts are in state approval-responded, the request decides those
// interrupts as a resume input does (RunAgentInput.resume, with the same checks: the
// tool's gates for the caller, every interrupt of the run answered, the right to read
// the run), and the response continues the same assistant message with the resumed
// run's events: an approved call's output, or tool-output-denied for a denied one (the
// model sees the denial and its reason), then the model's next turn.
//
// Failures before the first chunk (a bad request, an unknown interrupt) are answered
// with the envelope and its status, which the AI SDK's transport reports as an error; a
// run that fails later sends an error chunk.
func StreamUI(fx *engine.Fx, agent *AgentDef, req uimessage.Request, out *engine.Stream[uimessage.Chunk], opts RunOptions) (RunResult, error) {
	if out == nil {
		return RunResult{}, errors.New("ai: StreamUI: nil stream")
	}
	in, enc, err := uiInput(req)
	if err != nil {
		return RunResult{}, err
	}
	r, err := prepare(fx, agent, in, opts, true)
	if err != nil {
		return RunResult{}, refuse(err, func() wire {
			out.Header().Set(uimessage.Header, uimessage.HeaderValue)
			return &uiWire{sse: out.SSE(), enc: enc}
		}, out)
	}
	out.Header().Set(uimessage.Header, uimessage.HeaderValue)
	if err := r.streamTo(out.Live(), &uiWire{sse: out.SSE(), enc: enc}, out); err != nil {
		return RunResult{}, err
	}
	return r.result, nil
}

// uiWire writes a run's events as UI message chunks; the frames carry no id, since the
// AI SDK resumes a stream by a route of its own, not by Last-Event-ID.
type uiWire struct {
	sse    *httpx.SSEWriter
	enc    *uimessage.Encoder
	chunks []uimessage.Chunk
}

func (w *uiWire) event(_ int64, ev agui.Event, _ []byte) error {
	w.chunks = w.enc.Event(w.chunks[:0], ev)
	buf := bufpool.Get() // the SSE writer copies the frame: a waiting stream holds no buffer
	defer bufpool.Put(buf)
	for _, c := range w.chunks {
		var err error
		if *buf, err = uimessage.AppendJSON((*buf)[:0], c); err != nil {
			return err
		}
		if err := w.sse.WriteEvent(0, *buf); err != nil {
			return err
		}
	}
	return nil
}

func (w *uiWire) delta(seq int64, typ agui.Type, id, text string) error {
	var ev agui.Event
	switch typ {
	case agui.TypeTextMessageContent:
		ev = agui.TextMessageContent{MessageID: id, Delta: text}
	case agui.TypeReasoningMessageContent:
		ev = agui.ReasoningMessageContent{MessageID: id, Delta: text}
	case agui.TypeToolCallArgs:
		ev = agui.ToolCallArgs{ToolCallID: id, Delta: text}
	default:
		return nil
	}
	return w.event(seq, ev, nil)
}

func (w *uiWire) stored(seq int64, data []byte) error {
	ev, err := agui.Decode(data)
	if err != nil {
		return nil // not an event of ours: nothing to show
	}
	return w.event(seq, ev, data)
}

// uiInput turns an AI SDK chat request into the agent's input, and the encoder of its
// response: a resume when the last message answers approvals, else the conversation.
func uiInput(req uimessage.Request) (Input, *uimessage.Encoder, error) {
	in := Input{ThreadID: req.ID}
	enc := &uimessage.Encoder{}
	if len(req.Messages) == 0 {
		return in, nil, invalid(errors.New("ai: a chat request needs messages"), "messages")
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == uimessage.RoleAssistant {
		enc.MessageID = last.ID // the response continues the message
		for j, p := range last.Parts {
			if _, tool := p.IsTool(); !tool || p.State != uimessage.StateApprovalResponded {
				continue
			}
			path := fmt.Sprintf("messages[%d].parts[%d].approval", len(req.Messages)-1, j)
			if p.Approval == nil || p.Approval.ID == "" || p.Approval.Approved == nil {
				return in, nil, invalid(errors.New("ai: an answered approval needs its id and approved"), path)
			}
			e := ResumeEntry{InterruptID: p.Approval.ID, Status: ResumeResolved}
			if !*p.Approval.Approved {
				e.Status = ResumeCancelled
				payload, _ := json.Marshal(ResumePayload{Reason: p.Approval.Reason})
				e.Payload = payload
				if enc.Denied == nil {
					enc.Denied = map[string]bool{}
				}
				enc.Denied[p.ToolCallID] = true
			}
			in.Resume = append(in.Resume, e)
		}
		if len(in.Resume) > 0 {
			return in, enc, nil
		}
	}
	msgs, err := uiHistory(req.Messages)
	if err != nil {
		return in, nil, err
	}
	in.Messages = msgs
	return in, enc, nil
}

// uiHistory turns UI messages into the conversation an [Input] carries.
func uiHistory(msgs []uimessage.Message) ([]InputMessage, error) {
	var out []InputMessage
	for i, m := range msgs {
		path := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case uimessage.RoleUser, uimessage.RoleSystem:
			var text strings.Builder
			for j, p := range m.Parts {
				switch {
				case p.Type == uimessage.PartText:
					text.WriteString(p.Text)
				case p.Type == "file":
					return nil, invalid(errors.New("ai: file parts are not supported: the providers take text only"), fmt.Sprintf("%s.parts[%d]", path, j))
				}
			}
			out = append(out, InputMessage{ID: m.ID, Role: m.Role, Content: text.String()})
		case uimessage.RoleAssistant:
			out = append(out, assistantTurns(m)...)
		default:
			return nil, invalid(fmt.Errorf("ai: role must be user, assistant or system, got %q", m.Role), path+".role")
		}
	}
	return out, nil
}

// assistantTurns splits an assistant UI message into the model turns it came from (one
// per step): each turn's text and the tool calls that have an outcome, then a tool
// message per outcome.
func assistantTurns(m uimessage.Message) []InputMessage {
	var out, results []InputMessage
	turn := InputMessage{ID: m.ID, Role: string(RoleAssistant)}
	flush := func() {
		if turn.Content != "" || len(turn.ToolCalls) > 0 {
			out = append(out, turn)
			out = append(out, results...)
		}
		turn, results = InputMessage{Role: string(RoleAssistant)}, nil
	}
	for _, p := range m.Parts {
		if p.Type == uimessage.PartStepStart {
			flush()
			continue
		}
		if p.Type == uimessage.PartText {
			turn.Content += p.Text
			continue
		}
		name, tool := p.IsTool()
		if !tool || name == "" || p.ToolCallID == "" {
			continue
		}
		result := InputMessage{Role: string(RoleTool), ToolCallID: p.ToolCallID}
		switch p.State {
		case uimessage.StateOutputAvailable:
			result.Content = textOf(p.Output)
		case uimessage.StateOutputError:
			result.Error = p.ErrorText
			if result.Error == "" {
				result.Error = "the tool failed"
			}
		case uimessage.StateOutputDenied:
			reason := "denied"
			if p.Approval != nil && p.Approval.Reason != "" {
				reason = p.Approval.Reason
			}
			result.Content = fedBack("Denied", map[string]any{"reason": reason}).Content
		default:
			continue // no outcome yet: the call is left out
		}
		call := InputToolCall{ID: p.ToolCallID, Type: "function"}
		call.Function.Name = name
		call.Function.Arguments = textOf(p.Input)
		if call.Function.Arguments == "" {
			call.Function.Arguments = "{}"
		}
		turn.ToolCalls = append(turn.ToolCalls, call)
		results = append(results, result)
	}
	flush()
	return out
}

// textOf is a tool input or output as the text the model saw: a JSON string's content,
// any other JSON value as it is.
func textOf(v json.RawMessage) string {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
