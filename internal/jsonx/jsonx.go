// Package jsonx writes JSON exactly as encoding/json does, faster where the engine
// encodes the same shapes on every token or every run (agent events, the run event log):
// strings, floats, and values that are already in encoding/json's form.
package jsonx

import (
	"encoding/json"
	"fmt"
	"math"
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
	if len(b) < 2 || b[0] != '"' {
		return false
	}
	for i := 1; i < len(b); i++ {
		c := b[i]
		if plain[c] {
			continue
		}
		switch {
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
		b := s[i]
		if plain[b] {
			i++
			continue
		}
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
