package agui_test

import (
	"errors"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
)

func TestInterruptIDRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct{ run, call string }{
		{"run-1", "call_abc"},
		{"01J9Z", "agent:step:0"},
		{"r", "call.with.dots"},
	}
	for _, tc := range cases {
		id, err := agui.NewInterruptID(tc.run, tc.call)
		if err != nil {
			t.Fatalf("NewInterruptID(%q, %q): %v", tc.run, tc.call, err)
		}
		run, call, err := agui.ParseInterruptID(id)
		if err != nil || run != tc.run || call != tc.call {
			t.Fatalf("ParseInterruptID(%q) = %q, %q, %v; want %q, %q", id, run, call, err, tc.run, tc.call)
		}
	}
	// The contract's encoding: base64url of "<run>.<call>".
	if id, _ := agui.NewInterruptID("run-a", "c-1"); id != "cnVuLWEuYy0x" {
		t.Fatalf("NewInterruptID = %q", id)
	}
}

func TestInterruptIDRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ run, call string }{{"", "c"}, {"r", ""}, {"r.1", "c"}} {
		if _, err := agui.NewInterruptID(tc.run, tc.call); !errors.Is(err, agui.ErrBadInterruptID) {
			t.Errorf("NewInterruptID(%q, %q) error = %v, want ErrBadInterruptID", tc.run, tc.call, err)
		}
	}
	for _, id := range []string{"", "!!!", "bm9kb3Q", "LmM", "ci4"} { // "", bad b64, "nodot", ".c", "r."
		if _, _, err := agui.ParseInterruptID(id); !errors.Is(err, agui.ErrBadInterruptID) {
			t.Errorf("ParseInterruptID(%q) error = %v, want ErrBadInterruptID", id, err)
		}
	}
}

func FuzzParseInterruptID(f *testing.F) {
	f.Add("cnVuLWEuYy0x")
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, id string) {
		run, call, err := agui.ParseInterruptID(id)
		if err != nil {
			return
		}
		again, err := agui.NewInterruptID(run, call)
		if err != nil {
			t.Fatalf("parsed %q into %q, %q which NewInterruptID rejects: %v", id, run, call, err)
		}
		if r2, c2, err := agui.ParseInterruptID(again); err != nil || r2 != run || c2 != call {
			t.Fatalf("round trip of %q changed: %q %q %v", id, r2, c2, err)
		}
	})
}

func FuzzDecode(f *testing.F) {
	for _, tc := range wireCases {
		f.Add(tc.want)
	}
	f.Add(`{"type":"X"}`)
	f.Fuzz(func(t *testing.T, in string) {
		ev, err := agui.Decode([]byte(in))
		if err != nil {
			return
		}
		if ev.Type() == "" {
			t.Fatalf("Decode(%q) gave an event with no type", in)
		}
		if got := agui.TypeOf([]byte(in)); got != ev.Type() {
			t.Fatalf("TypeOf(%q) = %q, Decode's event has type %q", in, got, ev.Type())
		}
	})
}

// TypeOf reads the leading type member and falls back to decoding any other object.
func TestTypeOf(t *testing.T) {
	for in, want := range map[string]agui.Type{
		`{"type":"RUN_FINISHED","threadId":"t"}`:     agui.TypeRunFinished,
		`{ "threadId":"t", "type" : "RUN_ERROR" }`:   agui.TypeRunError,
		`{"type":"TEXT\u005fMESSAGE_CONTENT"}`:       "TEXT_MESSAGE_CONTENT",
		`{"threadId":"t"}`:                           "",
		`not json`:                                   "",
		`{"type":"journal.truncated","maxRows":100}`: "journal.truncated",
	} {
		if got := agui.TypeOf([]byte(in)); got != want {
			t.Errorf("TypeOf(%s) = %q, want %q", in, got, want)
		}
	}
}
