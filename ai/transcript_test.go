package ai_test

import (
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx/agent"
)

// transcript is one SSE response: its raw bytes and its frames as clientx/agent reads them.
type transcript struct {
	raw    string
	frames []agent.Frame
}

// events returns the events of the transcript in order.
func (tr transcript) events() []agui.Event {
	out := make([]agui.Event, len(tr.frames))
	for i, f := range tr.frames {
		out[i] = f.Event
	}
	return out
}

// types returns the event types in order.
func (tr transcript) types() []string {
	out := make([]string, len(tr.frames))
	for i, f := range tr.frames {
		out[i] = string(f.Event.Type())
	}
	return out
}

// started returns the RUN_STARTED event.
func (tr transcript) started(t *testing.T) agui.RunStarted {
	t.Helper()
	for _, f := range tr.frames {
		if ev, ok := f.Event.(agui.RunStarted); ok {
			return ev
		}
	}
	t.Fatalf("no RUN_STARTED in:\n%s", tr.raw)
	return agui.RunStarted{}
}

// finished returns the last RUN_FINISHED event.
func (tr transcript) finished(t *testing.T) agui.RunFinished {
	t.Helper()
	for i := len(tr.frames) - 1; i >= 0; i-- {
		if ev, ok := tr.frames[i].Event.(agui.RunFinished); ok {
			return ev
		}
	}
	t.Fatalf("no RUN_FINISHED in:\n%s", tr.raw)
	return agui.RunFinished{}
}

// result returns the last RUN_FINISHED result, failing when it has none.
func (tr transcript) result(t *testing.T) *agui.RunResult {
	t.Helper()
	res := tr.finished(t).Result
	if res == nil {
		t.Fatalf("RUN_FINISHED has no result:\n%s", tr.raw)
	}
	return res
}

// runError returns the RUN_ERROR event, failing when there is none.
func (tr transcript) runError(t *testing.T) agui.RunError {
	t.Helper()
	for _, f := range tr.frames {
		if ev, ok := f.Event.(agui.RunError); ok {
			return ev
		}
	}
	t.Fatalf("no RUN_ERROR in:\n%s", tr.raw)
	return agui.RunError{}
}

// of returns the events of type T in order.
func of[T agui.Event](tr transcript) []T {
	var out []T
	for _, f := range tr.frames {
		if ev, ok := f.Event.(T); ok {
			out = append(out, ev)
		}
	}
	return out
}

// parse reads raw SSE text with clientx/agent.ReadFrames.
func parse(t *testing.T, raw string) transcript {
	t.Helper()
	tr := transcript{raw: raw}
	for f, err := range agent.ReadFrames(strings.NewReader(raw)) {
		if err != nil {
			t.Fatalf("reading frames: %v\n%s", err, raw)
		}
		tr.frames = append(tr.frames, f)
	}
	return tr
}
