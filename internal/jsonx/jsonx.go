// Package jsonx writes JSON exactly as encoding/json does, faster where the engine
// encodes the same shapes on every token or every run (agent events, the run event log):
// strings, floats, and values that are already in encoding/json's form.
package jsonx

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// AppendValue appends v as json.Marshal writes a json.RawMessage: a JSON string already
// in that form (the usual case: a run's final text) is copied after one scan; anything
// else goes through json.Marshal, which validates, compacts and HTML-escapes it.
func AppendValue(dst []byte, v json.RawMessage) ([]byte, error) {
	if IsMarshalledString(v) {
		return append(dst, v...), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Marshal is json.Marshal, with the same result, for a value whose type has a
// MarshalJSON method: what the method returns is used as it is when [IsMarshalled]
// accepts it, instead of going through encoding/json's pass that validates, compacts
// and HTML-escapes it. On an agent run's output (its whole final text, twice) that pass
// costs several times what the method does.
func Marshal(v any) ([]byte, error) {
	m, ok := v.(json.Marshaler)
	if !ok {
		return json.Marshal(v)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return json.Marshal(v) // "null", without calling the method
	}
	b, err := m.MarshalJSON()
	if err != nil || !IsMarshalled(b) {
		// The method's error as encoding/json words it, or its pass: the method is
		// called again.
		return json.Marshal(v)
	}
	return b, nil
}

// AppendFloat writes f as encoding/json writes a float64: the shortest representation,
// in exponent form only below 1e-6 or from 1e21, with a one-digit negative exponent
// when it fits (1e-7, not 1e-07). NaN and infinities are not JSON: an error.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("%v is not a JSON number", f)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst, nil
}

// IsMarshalledString reports whether b is one JSON string that json.Marshal of b (as a
// json.RawMessage) returns unchanged: quoted, no control characters, only JSON's escapes,
// and none of the characters encoding/json escapes for HTML (<, >, &, U+2028, U+2029).
// Anything after the closing quote, even whitespace, makes it false.
func IsMarshalledString(b []byte) bool {
	end, ok := marshalledString(b, 0)
	return ok && end == len(b)
}

// IsMarshalled reports whether b is one JSON value that json.Marshal of b (as a
// json.RawMessage) returns unchanged: valid, with no space between tokens, and its
// strings as [IsMarshalledString] says. What a MarshalJSON method returns goes through
// that same pass of encoding/json, so a value it accepts may be used as the method
// returned it, with no second scan: a false only means that the pass must run.
func IsMarshalled(b []byte) bool {
	end, ok := marshalledValue(b, 0, 0)
	return ok && end == len(b)
}

// maxDepth is how deeply arrays and objects may nest in a value [IsMarshalled] accepts:
// encoding/json refuses more than 10000 levels; deeper than this goes to its own pass.
const maxDepth = 1000

// marshalledValue checks the value that starts at b[i] and returns where it ends.
func marshalledValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return marshalledString(b, i)
	case c == '{', c == '[':
		if depth >= maxDepth {
			return i, false
		}
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		i++
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i, ok = marshalledString(b, i); !ok || i >= len(b) || b[i] != ':' {
					return i, false
				}
				i++
			}
			if i, ok = marshalledValue(b, i, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i++
			case closing:
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == 't':
		return ScanLiteral(b, i, "true")
	case c == 'f':
		return ScanLiteral(b, i, "false")
	case c == 'n':
		return ScanLiteral(b, i, "null")
	default:
		return ScanNumber(b, i)
	}
}

// ScanLiteral checks that the literal word (true, false or null) stands at b[i] and
// returns where it ends.
func ScanLiteral(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// ScanNumber checks a JSON number at b[i], -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
// and returns where it ends.
func ScanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// marshalledString checks the string that starts at b[i] (see [IsMarshalledString]) and
// returns where it ends.
func marshalledString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		if i = skipPlain(b, i); i == len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20, c == '<', c == '>', c == '&':
			return i, false
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			i++
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

const hexDigits = "0123456789abcdef"

// plain marks the bytes encoding/json copies into a string unchanged and that start no
// multi-byte rune: ASCII from space up, except '"', '\\', '<', '>' and '&'. One table
// lookup per byte keeps the loops over long texts (a run's final output) tight.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// skipPlain returns the index of the first byte from i on that is not plain, testing
// eight bytes at a time: a run's final text is thousands of plain bytes, scanned several
// times as a run ends.
func skipPlain[S string | []byte](s S, i int) int {
	for ; i+8 <= len(s); i += 8 {
		_ = s[i+7]
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte's high bit is set in t when the byte is 0x80 or above, below 0x20, '"' or
		// '&' (0x22 and 0x26 are the bytes that OR 0x04 makes 0x26), '<' or '>' (0x3C
		// and 0x3E, likewise with 0x02), or '\\'. Once no byte has its high bit set, the
		// tests for below and for equal are exact.
		qa, lg, bs := w|0x04*ones^0x26*ones, w|0x02*ones^0x3E*ones, w^'\\'*ones
		t := w | (w-0x20*ones)&^w | (qa-ones)&^qa | (lg-ones)&^lg | (bs-ones)&^bs
		if t&high != 0 {
			break
		}
	}
	for i < len(s) && plain[s[i]] {
		i++
	}
	return i
}

const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// AppendString writes s as a JSON string exactly as encoding/json does: HTML-sensitive
// characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// AppendBytes is [AppendString] for text held in a byte slice, without copying it to a
// string first.
func AppendBytes(dst, text []byte) []byte { return appendString(dst, text) }

func appendString[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
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
		// At most UTFMax bytes: for a []byte the conversion stays on the stack.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
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
