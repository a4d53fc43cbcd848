package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzAppendString holds AppendString and AppendBytes to encoding/json's output for any
// text, valid UTF-8 or not.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "tok1 ", `say "hi" \ <b>&amp;</b>`, "tab\tnew\nline\r\x00\x1f", "héllo wörld ✓ 🎉",
		"\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x80", "cut rune \xf0\x9f\x8e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
		if got := AppendBytes(nil, []byte(s)); string(got) != string(want) {
			t.Errorf("AppendBytes(%q) = %s, want %s", s, got, want)
		}
	})
}

func TestAppendBytesDoesNotAllocateBeyondItsResult(t *testing.T) {
	text := []byte("héllo wörld ✓ and some ASCII after it, with \"quotes\"")
	dst := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { _ = AppendBytes(dst[:0], text) }); n != 0 {
		t.Errorf("AppendBytes allocated %v times into a buffer that has room", n)
	}
}

// FuzzIsMarshalledString holds IsMarshalledString to its promise: what it accepts,
// json.Marshal of it as a json.RawMessage returns unchanged, and it accepts every string
// json.Marshal writes.
func FuzzIsMarshalledString(f *testing.F) {
	for _, s := range []string{`""`, `"tok1 "`, `"say \"hi\""`, `"\u003cb\u003e"`, `"<b>"`, `"a\/b"`, `"x" `,
		`"\u12"`, `"\q"`, "\"\u2028\"", "\"bad \xff\"", `"tab` + "\t" + `"`, `"end\"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if IsMarshalledString(b) {
			got, err := json.Marshal(json.RawMessage(b))
			if err != nil || string(got) != string(b) {
				t.Errorf("IsMarshalledString(%q) = true, but json.Marshal gives %q, %v", b, got, err)
			}
		}
		want, _ := json.Marshal(string(b))
		if !IsMarshalledString(want) {
			t.Errorf("IsMarshalledString(%q) = false for json.Marshal's own output", want)
		}
	})
}

// FuzzIsMarshalled holds IsMarshalled to its promise: what it accepts, json.Marshal of
// it as a json.RawMessage returns unchanged, and it accepts what json.Marshal writes.
func FuzzIsMarshalled(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,-2.5e+3,true,false,null,"x"]}`, `{"a":1,"b":{"c":[]}}`, `0`, `-0.1E7`,
		`{"a": 1}`, `[1,]`, `{"a"}`, `01`, `1.`, `1e`, `-`, `tru`, `"<b>"`, `[1] `, ` 1`, `{"a":1,}`, `[[[[]]]]`, `nul`,
		`{"text":"tok1 tok2","output":"tok1 tok2","cost":0,"stopReason":"end_turn"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if IsMarshalled(b) {
			got, err := json.Marshal(json.RawMessage(b))
			if err != nil || string(got) != string(b) {
				t.Errorf("IsMarshalled(%q) = true, but json.Marshal gives %q, %v", b, got, err)
			}
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !IsMarshalled(want) {
			t.Errorf("IsMarshalled(%q) = false for json.Marshal's own output", want)
		}
	})
}

// TestSkipPlainStopsAtEveryByteThatIsNotPlain puts each byte value at each position of
// a plain text, across the eight-byte words skipPlain tests at once.
func TestSkipPlainStopsAtEveryByteThatIsNotPlain(t *testing.T) {
	base := []byte("tok1 tok2 tok3 tok4 tok5")
	for c := range 256 {
		for at := range base {
			b := slices.Clone(base)
			b[at] = byte(c)
			for from := range 2 {
				want := len(b)
				for i := from; i < len(b); i++ {
					if !plain[b[i]] {
						want = i
						break
					}
				}
				if got := skipPlain(b, from); got != want {
					t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, from, got, want)
				}
				if got := skipPlain(string(b), from); got != want {
					t.Fatalf("skipPlain(string %q, %d) = %d, want %d", b, from, got, want)
				}
			}
		}
	}
}

// rawMarshaler returns its bytes from MarshalJSON, or its error.
type rawMarshaler struct {
	b   string
	err error
}

func (m rawMarshaler) MarshalJSON() ([]byte, error) { return []byte(m.b), m.err }

func TestMarshalIsJSONMarshal(t *testing.T) {
	for _, v := range []any{
		rawMarshaler{b: `{"text":"tok1 tok2","cost":0.5}`},
		rawMarshaler{b: `{ "text": "<b>" }`}, // compacted and HTML-escaped by encoding/json
		rawMarshaler{b: "\"\u2028\""},
		rawMarshaler{b: `{"a":`},                 // invalid: encoding/json's error
		rawMarshaler{err: errors.New("refused")}, // the method's error
		(*rawMarshaler)(nil),                     // a nil pointer is null
		&rawMarshaler{b: `[1,2]`},
		json.RawMessage(`{"a": [1, 2]}`),
		json.RawMessage(nil),
		map[string]any{"a": "<b>", "n": 1.5},
		"plain",
	} {
		want, wantErr := json.Marshal(v)
		got, err := Marshal(v)
		if string(got) != string(want) || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("Marshal(%#v) = %q, %v; json.Marshal gives %q, %v", v, got, err, want, wantErr)
		}
	}
}

func TestIsMarshalledRefusesDeepNesting(t *testing.T) {
	deep := []byte(strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1))
	if IsMarshalled(deep) {
		t.Errorf("IsMarshalled accepted %d levels of nesting", maxDepth+1)
	}
	if ok := deep[1 : len(deep)-1]; !IsMarshalled(ok) {
		t.Errorf("IsMarshalled refused %d levels of nesting", maxDepth)
	}
}

// benchText is a run's final output: 200 short ASCII words, the agent benchmark's shape.
var benchText = func() string {
	var b []byte
	for i := range 200 {
		b = fmt.Appendf(b, "tok%d ", i%100)
	}
	return string(b)
}()

func BenchmarkAppendString(b *testing.B) {
	dst := make([]byte, 0, 2*len(benchText))
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		dst = AppendString(dst[:0], benchText)
	}
}

func BenchmarkIsMarshalledString(b *testing.B) {
	s := AppendString(nil, benchText)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if !IsMarshalledString(s) {
			b.Fatal("not marshalled")
		}
	}
}

func BenchmarkIsMarshalled(b *testing.B) {
	s := AppendString(nil, benchText)
	v := []byte(`{"text":` + string(s) + `,"output":` + string(s) + `,"cost":0,"stopReason":"end_turn"}`)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		_ = IsMarshalled(v)
	}
}

func BenchmarkAppendStringToken(b *testing.B) {
	dst := make([]byte, 0, 64)
	for b.Loop() {
		dst = AppendString(dst[:0], "tok42 ")
	}
}
