package jsonx

import (
	"encoding/json"
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
