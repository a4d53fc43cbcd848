package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/journal"
)

// TestStreamTextFrames checks the text-stream variant: every frame's data is a JSON
// string of plain text (not an agent event), and data: [DONE] ends the stream.
func TestStreamTextFrames(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const text = "Roses are red, <violets> & blue."
			w := newWorld(t, setup{kind: kind, turns: []turn{{Text: text}}})
			status, raw := w.post(t, "/chat/text", `{"message":"a poem"}`)
			eq(t, "status", status, http.StatusOK)
			bs := blocks(t, raw)
			if len(bs) < 2 {
				t.Fatalf("%d frames, want text frames then [DONE]:\n%s", len(bs), raw)
			}
			eq(t, "last frame", bs[len(bs)-1].data, "[DONE]")
			var got strings.Builder
			for _, b := range bs[:len(bs)-1] {
				var s string
				if err := json.Unmarshal([]byte(b.data), &s); err != nil {
					t.Fatalf("frame %q is not a JSON string: %v", b.data, err)
				}
				got.WriteString(s)
			}
			eq(t, "streamed text", got.String(), text)
			if !strings.HasSuffix(raw, "data: [DONE]\n\n") {
				t.Errorf("stream does not end with data: [DONE]")
			}
		})
	}
}

// TestStreamTextProviderFailure checks that a failed text stream ends without [DONE], so
// a client can tell it from a complete reply.
func TestStreamTextProviderFailure(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Half a ", ErrMsg: "gone"}}})
	_, raw := w.post(t, "/chat/text", `{"message":"a poem"}`)
	if strings.Contains(raw, "[DONE]") {
		t.Errorf("a failed text stream sent [DONE]:\n%s", raw)
	}
}

// TestAskBudgetExceeded checks that ai.Ask with MaxCostPerCall fails with
// *ai.BudgetExceededError, whose message is "ai: prompt <name> exceeded maxCostPerCall",
// when the call cost more, whether the spend was reported or priced from tokens.
func TestAskBudgetExceeded(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			// openai reports 0.002 spent; anthropic reports 2000 input tokens at 1 per million.
			w := newWorld(t, setup{kind: kind, maxCost: 0.001, modelOpts: []ai.ModelOption{ai.WithPricing(1, 1)},
				turns: []turn{{Text: "Expensive words.", Usage: &usage{In: 2000, Cost: spend(0.002)}}}})
			status, body := w.post(t, "/chat/prompt", `{"message":"summarise"}`)
			if status < 400 {
				t.Errorf("status %d, want a failure: %s", status, body)
			}
			w.mu.Lock()
			errs := append([]error(nil), w.askErrs...)
			w.mu.Unlock()
			if len(errs) != 1 {
				t.Fatalf("ai.Ask errors = %v, want one", errs)
			}
			var be *ai.BudgetExceededError
			if !errors.As(errs[0], &be) {
				t.Fatalf("error %T %v is not *ai.BudgetExceededError", errs[0], errs[0])
			}
			eq(t, "message", be.Error(), "ai: prompt summary exceeded maxCostPerCall")
			eq(t, "name", be.Name(), "AiBudgetExceededError")
			eq(t, "max", be.Max, 0.001)
			if be.Cost <= be.Max {
				t.Errorf("cost %v should exceed max %v", be.Cost, be.Max)
			}
		})
	}
}

// TestAskWithinBudget checks that a prompt under its MaxCostPerCall succeeds.
func TestAskWithinBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{maxCost: 0.01, turns: []turn{{Text: "Cheap.", Usage: &usage{In: 10, Cost: spend(0.002)}}}})
	_, _ = w.post(t, "/chat/prompt", `{"message":"summarise"}`)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.askErrs) != 0 {
		t.Errorf("ai.Ask failed under budget: %v", w.askErrs)
	}
}

// TestAskReplayDoesNotCallModel checks that inside a durable flow ai.Ask is a journal
// step: the flow parks after asking, and when the run resumes the prompt's answer comes
// from the journal without a second model request.
func TestAskReplayDoesNotCallModel(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: []turn{{Text: "A short summary."}}})
			_, _ = w.post(t, "/chat/prompt", `{"message":"summarise"}`)
			w.mu.Lock()
			runID := w.runID
			w.mu.Unlock()
			ctx := context.Background()
			waitFor(t, "the prompt flow to park", func() bool {
				rec, err := w.journal.GetRun(ctx, runID)
				return err == nil && rec.Status == journal.StatusParked
			})
			eq(t, "model requests before the resume", w.model.RequestCount(), 1)
			if err := w.journal.Decide(ctx, runID, "continue", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
				t.Fatal(err)
			}
			var rec journal.RunRecord
			waitFor(t, "the resumed run to complete", func() bool {
				var err error
				rec, err = w.journal.GetRun(ctx, runID)
				return err == nil && rec.Status.Final()
			})
			eq(t, "status", rec.Status, journal.StatusCompleted)
			eq(t, "output", string(rec.Output), `"A short summary."`)
			eq(t, "model requests after the resume", w.model.RequestCount(), 1)
		})
	}
}

// TestStreamTextDisconnect checks that a client leaving a text stream cancels the
// provider request.
func TestStreamTextDisconnect(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: []turn{{Text: strings.Repeat("la ", 200), Delay: 20 * time.Millisecond}}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := w.open(t, ctx, "/chat/text", `{"message":"sing"}`)
			r := httpx.NewSSEReader(res.Body)
			if _, err := r.Next(); err != nil {
				t.Fatalf("no first frame: %v", err)
			}
			cancel()
			res.Body.Close()
			select {
			case <-w.model.Disconnected():
			case <-time.After(10 * time.Second):
				t.Fatal("the provider request was not cancelled")
			}
		})
	}
}
