package ai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx/agent"
)

// TestContinueOnDisconnect: a durable agent declared with ai.ContinueOnDisconnect goes on
// when its client hangs up mid-reply; a follower reads the run to its completed end, and
// the model request was never aborted.
func TestContinueOnDisconnect(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("tick ", 60)
	w := newWorld(t, setup{turns: []turn{{Text: long, Delay: 5 * time.Millisecond}}, agentOpts: []ai.AgentOption{ai.ContinueOnDisconnect()}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := w.open(t, ctx, "/chat", `{"message":"count"}`)
	var runID string
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.Event.(agui.RunStarted); ok {
			runID = s.RunID
		}
		if _, ok := f.Event.(agui.TextMessageContent); ok {
			break // hang up mid-reply
		}
	}
	cancel()
	res.Body.Close()
	tr := w.follow(t, runID, "")
	verifyAGUI(t, tr.raw, true)
	if fin := tr.finished(t); fin.Result == nil || fin.Result.StopReason != agui.StopCompleted {
		t.Fatalf("the run did not complete after the client left: %s", joined(tr.types()))
	}
	var text strings.Builder
	for _, d := range of[agui.TextMessageContent](tr) {
		text.WriteString(d.Delta)
	}
	eq(t, "text", text.String(), long)
	select {
	case <-w.model.Disconnected():
		t.Fatal("the model request was aborted")
	default:
	}
}
