package sseline

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// endless is a body that never ends and holds no newline: a server sending one event
// forever.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += len(p)
	return len(p), nil
}

func (e *endless) Close() error { return nil }

// A line past the bound fails the read once the bound is passed: the rest of an endless
// line is never read.
func TestALongLineFailsAtTheBound(t *testing.T) {
	t.Parallel()
	body := &endless{}
	_, err := io.ReadAll(Limit(body, 1<<20))
	var tooLong *TooLongError
	if !errors.As(err, &tooLong) || tooLong.Max != 1<<20 {
		t.Fatalf("err = %v, want a *TooLongError of 1 MiB", err)
	}
	if body.read > 2<<20 { // past the bound by at most one read of the caller's buffer
		t.Fatalf("read %d bytes of an endless line bounded at 1 MiB", body.read)
	}
	if !strings.Contains(err.Error(), "longer than 1048576 bytes") {
		t.Fatalf("message %q", err)
	}
}

// check reads in through a bound of max, one byte at a time and in whole, and reports
// what came out and the error.
func check(t *testing.T, in []byte, max int) {
	t.Helper()
	longest := 0
	for _, line := range bytes.Split(in, []byte("\n")) {
		longest = len(line)
		if longest > max {
			break
		}
	}
	for _, r := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
		out, err := io.ReadAll(Limit(io.NopCloser(r), max))
		if longest > max {
			var tooLong *TooLongError
			if !errors.As(err, &tooLong) || !bytes.HasPrefix(in, out) {
				t.Fatalf("a line of %d bytes over %d: err %v, out %q not a prefix", longest, max, err, out)
			}
			continue
		}
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("lines within %d bytes: err %v, out %q, want %q", max, err, out, in)
		}
	}
}

func TestLinesWithinTheBoundPass(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "data: a\n\n", "abcd\nabcd\n", "abcd", "\n\n\n", "abcd\nabcde\n", "abcde"} {
		check(t, []byte(in), 4)
	}
}

func TestDefaultMax(t *testing.T) {
	t.Parallel()
	if r := Limit(io.NopCloser(strings.NewReader("")), 0).(*reader); r.max != DefaultMax {
		t.Fatalf("max %d, want DefaultMax", r.max)
	}
}

func FuzzLimit(f *testing.F) {
	for _, s := range []string{"", "data: {}\n\n", "xxxxxxxxxxxxxxxxx", "a\nbb\nccc\ndddd\neeeee", "\n"} {
		f.Add([]byte(s), 4)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 64 {
			max = 1 + (max%64+64)%64
		}
		check(t, in, max)
	})
}
