package agui

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// AppendDelta appends the wire JSON of a TEXT_MESSAGE_CONTENT (id is the messageId) or
// TOOL_CALL_ARGS (id is the toolCallId) event, the same bytes [AppendJSON] writes for
// them, without boxing the event in an interface: the per-token path of a stream. Any
// other typ appends nothing.
func AppendDelta(dst []byte, typ Type, id, delta string) []byte {
	switch typ {
	case TypeTextMessageContent:
		dst = append(dst, `{"type":"TEXT_MESSAGE_CONTENT","messageId":`...)
	case TypeToolCallArgs:
		dst = append(dst, `{"type":"TOOL_CALL_ARGS","toolCallId":`...)
	default:
		return dst
	}
	dst = appendString(dst, id)
	dst = append(dst, `,"delta":`...)
	dst = appendString(dst, delta)
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
	case RunStarted:
		dst = append(dst, `{"type":"RUN_STARTED","threadId":`...)
		dst = appendString(dst, e.ThreadID)
		dst = append(dst, `,"runId":`...)
		dst = appendString(dst, e.RunID)
	case StepStarted:
		dst = append(dst, `{"type":"STEP_STARTED","stepName":`...)
		dst = appendString(dst, e.StepName)
	case StepFinished:
		dst = append(dst, `{"type":"STEP_FINISHED","stepName":`...)
		dst = appendString(dst, e.StepName)
	case TextMessageStart:
		dst = append(dst, `{"type":"TEXT_MESSAGE_START","messageId":`...)
		dst = appendString(dst, e.MessageID)
		dst = appendOptional(dst, `,"role":`, e.Role)
	case TextMessageEnd:
		dst = append(dst, `{"type":"TEXT_MESSAGE_END","messageId":`...)
		dst = appendString(dst, e.MessageID)
	case ToolCallStart:
		dst = append(dst, `{"type":"TOOL_CALL_START","toolCallId":`...)
		dst = appendString(dst, e.ToolCallID)
		dst = append(dst, `,"toolCallName":`...)
		dst = appendString(dst, e.ToolCallName)
		dst = appendOptional(dst, `,"parentMessageId":`, e.ParentMessageID)
	case ToolCallEnd:
		dst = append(dst, `{"type":"TOOL_CALL_END","toolCallId":`...)
		dst = appendString(dst, e.ToolCallID)
	case ToolCallResult:
		dst = append(dst, `{"type":"TOOL_CALL_RESULT","messageId":`...)
		dst = appendString(dst, e.MessageID)
		dst = append(dst, `,"toolCallId":`...)
		dst = appendString(dst, e.ToolCallID)
		dst = append(dst, `,"content":`...)
		dst = appendString(dst, e.Content)
		dst = appendOptional(dst, `,"role":`, e.Role)
	case RunError:
		dst = append(dst, `{"type":"RUN_ERROR","message":`...)
		dst = appendString(dst, e.Message)
		dst = appendOptional(dst, `,"code":`, e.Code)
	case RunFinished:
		return appendRunFinished(dst, e)
	case Custom:
		dst = append(dst, `{"type":"CUSTOM","name":`...)
		dst = appendString(dst, e.Name)
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

// appendRunFinished encodes the run's last event. Its nested members go through
// encoding/json: the event is sent once per run, so clarity wins over speed.
func appendRunFinished(dst []byte, e RunFinished) ([]byte, error) {
	dst = append(dst, `{"type":"RUN_FINISHED","threadId":`...)
	dst = appendString(dst, e.ThreadID)
	dst = append(dst, `,"runId":`...)
	dst = appendString(dst, e.RunID)
	for _, m := range []struct {
		key  string
		skip bool
		v    any
	}{
		{`,"result":`, e.Result == nil, e.Result},
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

func appendOptional(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, key...)
	return appendString(dst, s)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string exactly as encoding/json does: HTML-sensitive
// characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
