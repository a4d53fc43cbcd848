package agui

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
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

// appendRunFinished encodes the run's last event. The result is encoded by hand (it
// carries the run's output, often its whole final text); usage and outcome go through
// encoding/json, which is clearer and only runs when they are present.
func appendRunFinished(dst []byte, e RunFinished) ([]byte, error) {
	dst = append(dst, `{"type":"RUN_FINISHED","threadId":`...)
	dst = appendString(dst, e.ThreadID)
	dst = append(dst, `,"runId":`...)
	dst = appendString(dst, e.RunID)
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

// appendRunResult encodes r as json.Marshal does. An output that is a JSON string
// exactly as json.Marshal writes one (the usual case: the run's final text) is copied
// after a single scan; any other output goes through json.Marshal, which validates,
// compacts and HTML-escapes it.
func appendRunResult(dst []byte, r *RunResult) ([]byte, error) {
	if math.IsNaN(r.Cost) || math.IsInf(r.Cost, 0) {
		return dst, fmt.Errorf("cost %v is not a JSON number", r.Cost)
	}
	dst = append(dst, `{"cost":`...)
	dst = appendFloat(dst, r.Cost)
	dst = append(dst, `,"stopReason":`...)
	dst = appendString(dst, string(r.StopReason))
	if len(r.Output) > 0 {
		dst = append(dst, `,"output":`...)
		if isMarshalledString(r.Output) {
			dst = append(dst, r.Output...)
		} else {
			b, err := json.Marshal(r.Output)
			if err != nil {
				return dst, fmt.Errorf("output: %w", err)
			}
			dst = append(dst, b...)
		}
	}
	return append(dst, '}'), nil
}

// appendFloat writes f as encoding/json writes a float64: the shortest representation,
// in exponent form only below 1e-6 or from 1e21, with a one-digit negative exponent
// when it fits (1e-7, not 1e-07).
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// isMarshalledString reports whether b is one JSON string that json.Marshal of b (as a
// json.RawMessage) returns unchanged: quoted, no control characters, only JSON's escapes,
// and none of the characters encoding/json escapes for HTML (<, >, &, U+2028, U+2029).
// Anything after the closing quote, even whitespace, makes it false.
func isMarshalledString(b []byte) bool {
	if len(b) < 2 || b[0] != '"' {
		return false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i == len(b)-1
		case c < 0x20, c == '<', c == '>', c == '&':
			return false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			return false
		case c == '\\':
			if i+1 >= len(b) {
				return false
			}
			i++
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return false
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

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
