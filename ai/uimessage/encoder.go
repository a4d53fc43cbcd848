package uimessage

import (
	"encoding/json"
	"strings"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/internal/jsonx"
)

// Encoder turns the AG-UI events of one run's response into UI message chunks, in
// order; see the package doc for the mapping. It keeps what the chunks need from earlier
// events (a tool call's name and arguments), so one Encoder serves one response. It is
// not safe for concurrent use.
type Encoder struct {
	// MessageID is the id the start chunk gives the assistant message: the id of the
	// message a request continues (an approval answered, a tool's output added), so the
	// client keeps adding to it; empty means the run id.
	MessageID string
	// Denied names the tool calls the request denied: their results are sent as
	// tool-output-denied, as the AI SDK's own server does.
	Denied map[string]bool

	started bool
	calls   map[string]*toolCall
}

type toolCall struct {
	name string
	args strings.Builder
}

// Event returns the chunks of ev, appended to dst (none for events without a chunk).
func (e *Encoder) Event(dst []Chunk, ev agui.Event) []Chunk {
	switch ev := ev.(type) {
	case agui.RunStarted:
		if e.started {
			return dst // a resumed run opens again; the message goes on
		}
		e.started = true
		id := e.MessageID
		if id == "" {
			id = ev.RunID
		}
		return append(dst, Chunk{Type: ChunkStart, MessageID: id})
	case agui.StepStarted:
		return append(dst, Chunk{Type: ChunkStartStep})
	case agui.StepFinished:
		return append(dst, Chunk{Type: ChunkFinishStep})
	case agui.TextMessageStart:
		return append(dst, Chunk{Type: ChunkTextStart, ID: ev.MessageID})
	case agui.TextMessageContent:
		return append(dst, Chunk{Type: ChunkTextDelta, ID: ev.MessageID, Delta: ev.Delta})
	case agui.TextMessageEnd:
		return append(dst, Chunk{Type: ChunkTextEnd, ID: ev.MessageID})
	case agui.ReasoningMessageStart:
		return append(dst, Chunk{Type: ChunkReasoningStart, ID: ev.MessageID})
	case agui.ReasoningMessageContent:
		return append(dst, Chunk{Type: ChunkReasoningDelta, ID: ev.MessageID, Delta: ev.Delta})
	case agui.ReasoningMessageEnd:
		return append(dst, Chunk{Type: ChunkReasoningEnd, ID: ev.MessageID})
	case agui.ToolCallStart:
		if e.calls == nil {
			e.calls = map[string]*toolCall{}
		}
		e.calls[ev.ToolCallID] = &toolCall{name: ev.ToolCallName}
		return append(dst, Chunk{Type: ChunkToolInputStart, ToolCallID: ev.ToolCallID, ToolName: ev.ToolCallName})
	case agui.ToolCallArgs:
		if c := e.calls[ev.ToolCallID]; c != nil {
			c.args.WriteString(ev.Delta)
		}
		return append(dst, Chunk{Type: ChunkToolInputDelta, ToolCallID: ev.ToolCallID, InputTextDelta: ev.Delta})
	case agui.ToolCallEnd:
		c := e.calls[ev.ToolCallID]
		if c == nil {
			return dst
		}
		return append(dst, Chunk{Type: ChunkToolInputAvailable, ToolCallID: ev.ToolCallID, ToolName: c.name, Input: inputOf(c.args.String())})
	case agui.ToolCallResult:
		if e.Denied[ev.ToolCallID] {
			return append(dst, Chunk{Type: ChunkToolOutputDenied, ToolCallID: ev.ToolCallID})
		}
		return append(dst, Chunk{Type: ChunkToolOutputAvailable, ToolCallID: ev.ToolCallID, Output: valueOf(ev.Content)})
	case agui.RunFinished:
		if ev.Outcome != nil && ev.Outcome.Type == agui.OutcomeInterrupt {
			for _, in := range ev.Outcome.Interrupts {
				dst = append(dst, Chunk{Type: ChunkToolApprovalRequest, ApprovalID: in.ID, ToolCallID: in.ToolCallID, Reason: in.Message})
			}
			return append(dst, Chunk{Type: ChunkFinish, FinishReason: FinishToolCalls})
		}
		return append(dst, Chunk{Type: ChunkFinish, FinishReason: finishReason(ev)})
	case agui.RunError:
		text := ev.Message
		if ev.Code != "" {
			text = ev.Code + ": " + text
		}
		return append(dst, Chunk{Type: ChunkError, ErrorText: text})
	case agui.Custom:
		return append(dst, Chunk{Type: ChunkDataPrefix + ev.Name, Data: ev.Value, Transient: true})
	}
	return dst
}

// finishReason is the AI SDK's name for why the run stopped.
func finishReason(ev agui.RunFinished) string {
	switch {
	case ev.Outcome != nil && ev.Outcome.Type == agui.OutcomeCancelled:
		return FinishInterrupted
	case ev.Outcome != nil && len(ev.Outcome.PendingToolCallIDs) > 0:
		return FinishToolCalls
	case ev.Result == nil:
		return FinishStop
	}
	switch ev.Result.StopReason {
	case agui.StopCompleted:
		return FinishStop
	case agui.StopMaxSteps:
		return FinishToolCalls // the model still wanted tools when the run stopped
	case agui.StopError:
		return FinishError
	}
	return FinishOther
}

// inputOf is a tool call's input as a JSON value: the arguments when they are JSON, {}
// when there are none, else the text the model produced as a JSON string (the tool's
// result says what was wrong with it).
func inputOf(args string) json.RawMessage {
	switch {
	case strings.TrimSpace(args) == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(args)):
		return json.RawMessage(args)
	}
	return jsonx.AppendString(nil, args)
}

// valueOf is a tool result's content as a JSON value: the value it encodes (tools
// return JSON), or the text itself as a JSON string.
func valueOf(content string) json.RawMessage {
	if content != "" && json.Valid([]byte(content)) {
		return json.RawMessage(content)
	}
	return jsonx.AppendString(nil, content)
}
