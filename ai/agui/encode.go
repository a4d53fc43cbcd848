package agui

import (
	"encoding/json"
	"fmt"

	"github.com/bbc28f59/engine/internal/jsonx"
)

// AppendDelta appends the wire JSON of a TEXT_MESSAGE_CONTENT or
// REASONING_MESSAGE_CONTENT (id is the messageId) or TOOL_CALL_ARGS (id is the
// toolCallId) event, the same bytes [AppendJSON] writes for them, without boxing the
// event in an interface: the per-token path of a stream. Any other typ appends nothing.
func AppendDelta(dst []byte, typ Type, id, delta string) []byte {
	switch typ {
	case TypeTextMessageContent:
		dst = append(dst, `{"type":"TEXT_MESSAGE_CONTENT","messageId":`...)
	case TypeReasoningMessageContent:
		dst = append(dst, `{"type":"REASONING_MESSAGE_CONTENT","messageId":`...)
	case TypeToolCallArgs:
		dst = append(dst, `{"type":"TOOL_CALL_ARGS","toolCallId":`...)
	default:
		return dst
	}
	dst = jsonx.AppendString(dst, id)
	dst = append(dst, `,"delta":`...)
	dst = jsonx.AppendString(dst, delta)
	return append(dst, '}')
}

// AppendJSON appends the wire JSON of ev to dst: the same bytes json.Marshal produces,
// without reflection or allocations for the events a run streams per token, so a stream
// can reuse one buffer for every frame.
func AppendJSON(dst []byte, ev Event) ([]byte, error) {
	switch e := ev.(type) {
	case TextMessageContent:
		return AppendDelta(dst, TypeTextMessageContent, e.MessageID, e.Delta), nil
	case ToolCallArgs:
		return AppendDelta(dst, TypeToolCallArgs, e.ToolCallID, e.Delta), nil
	case ReasoningMessageContent:
		return AppendDelta(dst, TypeReasoningMessageContent, e.MessageID, e.Delta), nil
	case ReasoningStart:
		dst = append(dst, `{"type":"REASONING_START","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
	case ReasoningMessageStart:
		dst = append(dst, `{"type":"REASONING_MESSAGE_START","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
		dst = append(dst, `,"role":"reasoning"`...)
	case ReasoningMessageEnd:
		dst = append(dst, `{"type":"REASONING_MESSAGE_END","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
	case ReasoningEnd:
		dst = append(dst, `{"type":"REASONING_END","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
	case ReasoningEncryptedValue:
		dst = append(dst, `{"type":"REASONING_ENCRYPTED_VALUE","subtype":`...)
		dst = jsonx.AppendString(dst, e.Subtype)
		dst = append(dst, `,"entityId":`...)
		dst = jsonx.AppendString(dst, e.EntityID)
		dst = append(dst, `,"encryptedValue":`...)
		dst = jsonx.AppendString(dst, e.EncryptedValue)
	case RunStarted:
		dst = append(dst, `{"type":"RUN_STARTED","threadId":`...)
		dst = jsonx.AppendString(dst, e.ThreadID)
		dst = append(dst, `,"runId":`...)
		dst = jsonx.AppendString(dst, e.RunID)
	case StepStarted:
		dst = append(dst, `{"type":"STEP_STARTED","stepName":`...)
		dst = jsonx.AppendString(dst, e.StepName)
	case StepFinished:
		dst = append(dst, `{"type":"STEP_FINISHED","stepName":`...)
		dst = jsonx.AppendString(dst, e.StepName)
	case TextMessageStart:
		dst = append(dst, `{"type":"TEXT_MESSAGE_START","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
		dst = appendOptional(dst, `,"role":`, e.Role)
	case TextMessageEnd:
		dst = append(dst, `{"type":"TEXT_MESSAGE_END","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
	case ToolCallStart:
		dst = append(dst, `{"type":"TOOL_CALL_START","toolCallId":`...)
		dst = jsonx.AppendString(dst, e.ToolCallID)
		dst = append(dst, `,"toolCallName":`...)
		dst = jsonx.AppendString(dst, e.ToolCallName)
		dst = appendOptional(dst, `,"parentMessageId":`, e.ParentMessageID)
	case ToolCallEnd:
		dst = append(dst, `{"type":"TOOL_CALL_END","toolCallId":`...)
		dst = jsonx.AppendString(dst, e.ToolCallID)
	case ToolCallResult:
		dst = append(dst, `{"type":"TOOL_CALL_RESULT","messageId":`...)
		dst = jsonx.AppendString(dst, e.MessageID)
		dst = append(dst, `,"toolCallId":`...)
		dst = jsonx.AppendString(dst, e.ToolCallID)
		dst = append(dst, `,"content":`...)
		dst = jsonx.AppendString(dst, e.Content)
		dst = appendOptional(dst, `,"role":`, e.Role)
	case RunError:
		dst = append(dst, `{"type":"RUN_ERROR","message":`...)
		dst = jsonx.AppendString(dst, e.Message)
		dst = appendOptional(dst, `,"code":`, e.Code)
	case RunFinished:
		return appendRunFinished(dst, e)
	case MessagesSnapshot:
		return appendMessagesSnapshot(dst, e)
	case Custom:
		dst = append(dst, `{"type":"CUSTOM","name":`...)
		dst = jsonx.AppendString(dst, e.Name)
		dst = append(dst, `,"value":`...)
		if len(e.Value) == 0 {
			dst = append(dst, "null"...)
		} else {
			v, err := json.Marshal(e.Value) // validates and compacts, as json.Marshal of the event would
			if err != nil {
				return dst, fmt.Errorf("agui: CUSTOM %q value: %w", e.Name, err)
			}
			dst = append(dst, v...)
		}
	case StateSnapshot:
		dst = append(dst, `{"type":"STATE_SNAPSHOT","snapshot":`...)
		var err error
		if dst, err = appendRaw(dst, e.Snapshot, "STATE_SNAPSHOT snapshot"); err != nil {
			return dst, err
		}
	case StateDelta:
		dst = append(dst, `{"type":"STATE_DELTA","delta":`...)
		if len(e.Delta) == 0 || e.Delta[0] != '[' {
			return dst, fmt.Errorf("agui: STATE_DELTA delta must be a JSON array")
		}
		var err error
		if dst, err = appendRaw(dst, e.Delta, "STATE_DELTA delta"); err != nil {
			return dst, err
		}
	case Unknown:
		b, err := json.Marshal(e)
		if err != nil {
			return dst, fmt.Errorf("agui: %s event: %w", e.TypeName, err)
		}
		return append(dst, b...), nil
	case nil:
		return dst, fmt.Errorf("agui: nil event")
	default:
		// Pointers to the event structs end up here.
		b, err := json.Marshal(ev)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	return append(dst, '}'), nil
}

// appendRunFinished encodes the run's last event. The result is encoded by hand (it
// carries the run's output, often its whole final text); usage and outcome go through
// encoding/json, which is clearer and only runs when they are present.
func appendRunFinished(dst []byte, e RunFinished) ([]byte, error) {
	dst = append(dst, `{"type":"RUN_FINISHED","threadId":`...)
	dst = jsonx.AppendString(dst, e.ThreadID)
	dst = append(dst, `,"runId":`...)
	dst = jsonx.AppendString(dst, e.RunID)
	if e.Result != nil {
		var err error
		if dst, err = appendRunResult(append(dst, `,"result":`...), e.Result); err != nil {
			return dst, fmt.Errorf("agui: RUN_FINISHED result: %w", err)
		}
	}
	for _, m := range []struct {
		key  string
		skip bool
		v    any
	}{
		{`,"usage":`, len(e.Usage) == 0, e.Usage},
		{`,"outcome":`, e.Outcome == nil, e.Outcome},
	} {
		if m.skip {
			continue
		}
		b, err := json.Marshal(m.v)
		if err != nil {
			return dst, fmt.Errorf("agui: RUN_FINISHED%s %w", m.key[:len(m.key)-1], err)
		}
		dst = append(dst, m.key...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// appendRunResult encodes r as json.Marshal does; the output, often the run's whole
// final text, is copied after a single scan when it can be (see jsonx.AppendValue).
func appendRunResult(dst []byte, r *RunResult) ([]byte, error) {
	dst = append(dst, `{"cost":`...)
	dst, err := jsonx.AppendFloat(dst, r.Cost)
	if err != nil {
		return dst, fmt.Errorf("cost: %w", err)
	}
	dst = append(dst, `,"stopReason":`...)
	dst = jsonx.AppendString(dst, string(r.StopReason))
	if len(r.Output) > 0 {
		if dst, err = jsonx.AppendValue(append(dst, `,"output":`...), r.Output); err != nil {
			return dst, fmt.Errorf("output: %w", err)
		}
	}
	return append(dst, '}'), nil
}

// appendRaw appends a raw JSON value, compacted and checked as json.Marshal would; nil
// is null.
func appendRaw(dst []byte, raw json.RawMessage, what string) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	v, err := json.Marshal(raw)
	if err != nil {
		return dst, fmt.Errorf("agui: %s: %w", what, err)
	}
	return append(dst, v...), nil
}

func appendOptional(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return jsonx.AppendString(dst, s)
}
