package ai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
)

// TestClientDisconnectAbortsModelCall checks rule 8: when the HTTP client goes away
// mid-run the in-flight provider request is cancelled (the slow fake sees the
// disconnect), no further model call is made, and the stored log ends with RUN_ERROR
// code AbortError, whether the flow is durable or not.
func TestClientDisconnectAbortsModelCall(t *testing.T) {
	t.Parallel()
	paths := map[string]string{"plain": "/chat/plain", "durable": "/chat"}
	for _, kind := range providerKinds {
		for flow, path := range paths {
			t.Run(kind+"/"+flow, func(t *testing.T) {
				t.Parallel()
				long := strings.Repeat("tick ", 200)
				w := newWorld(t, setup{kind: kind, turns: []turn{{Text: long, Delay: 20 * time.Millisecond}}})

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				res := w.open(t, ctx, path, `{"message":"count"}`)
				var runID string
				for f, err := range agent.ReadFrames(res.Body) {
					if err != nil {
						t.Fatalf("reading the live stream: %v", err)
					}
					if s, ok := f.Event.(agui.RunStarted); ok {
						runID = s.RunID
					}
					if _, ok := f.Event.(agui.TextMessageContent); ok {
						break // the model is mid-reply: hang up
					}
				}
				if runID == "" {
					t.Fatal("no RUN_STARTED before the first delta")
				}
				cancel()
				res.Body.Close()

				select {
				case <-w.model.Disconnected():
				case <-time.After(10 * time.Second):
					t.Fatal("the provider request was not cancelled: the fake never saw the client go away")
				}
				tr := w.follow(t, runID, "")
				verifyAGUI(t, tr.raw, true)
				types := tr.types()
				eq(t, "last stored event", types[len(types)-1], "RUN_ERROR")
				re := tr.runError(t)
				eq(t, "RUN_ERROR.code", re.Code, ai.CodeAbortError)
				eq(t, "RUN_FINISHED events", len(of[agui.RunFinished](tr)), 0)
				eq(t, "model requests", w.model.RequestCount(), 1)
				if flow == "durable" {
					// The aborted durable run must end, not wait to be resumed by recovery
					// (which would call the model again for nobody).
					ctx := context.Background()
					st, err := w.journal.Driver().GetStream(ctx, runID)
					if err != nil {
						t.Fatal(err)
					}
					var rec journal.RunRecord
					waitFor(t, "the durable run to end", func() bool {
						rec, err = w.journal.GetRun(ctx, st.RunID)
						return err == nil && rec.Status.Final()
					})
					eq(t, "durable run status", rec.Status, journal.StatusFailed)
				}
				for _, f := range tr.frames {
					if f.Seq == 0 {
						t.Errorf("stored frame without an integer id: %+v", f)
					}
				}
			})
		}
	}
}
