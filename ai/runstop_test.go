package ai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// wantStopped checks that a transcript ends with the RUN_FINISHED of a stopped run.
func wantStopped(t *testing.T, tr transcript) {
	t.Helper()
	types := tr.types()
	if len(types) == 0 || types[len(types)-1] != "RUN_FINISHED" {
		t.Fatalf("stream does not end with RUN_FINISHED: %s", joined(types))
	}
	fin := tr.finished(t)
	if fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeCancelled {
		t.Fatalf("RUN_FINISHED.outcome = %+v, want cancelled\n%s", fin.Outcome, tr.raw)
	}
	if fin.Result == nil || fin.Result.StopReason != agui.StopCancelled {
		t.Fatalf("RUN_FINISHED.result = %+v, want stopReason cancelled", fin.Result)
	}
	eq(t, "RUN_ERROR events", len(of[agui.RunError](tr)), 0)
}

// TestStopRunningRun stops a run mid-reply through the stop route: the model request is
// aborted, the live stream and the stored log end with RUN_FINISHED cancelled, keeping
// the text streamed so far, and a second stop is Conflict.
func TestStopRunningRun(t *testing.T) {
	t.Parallel()
	paths := map[string]string{"plain": "/chat/plain", "durable": "/chat"}
	for _, kind := range providerKinds {
		for flow, path := range paths {
			t.Run(kind+"/"+flow, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, turns: []turn{{Text: strings.Repeat("tick ", 400), Delay: 10 * time.Millisecond}}})
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res := w.open(t, ctx, path, `{"message":"count"}`)
				defer res.Body.Close()
				var runID string
				var live []string
				var last agui.Event
				stopSent := false
				for f, err := range agent.ReadFrames(res.Body) {
					if err != nil {
						t.Fatalf("reading the live stream: %v", err)
					}
					live = append(live, string(f.Event.Type()))
					last = f.Event
					if s, ok := f.Event.(agui.RunStarted); ok {
						runID = s.RunID
					}
					if _, ok := f.Event.(agui.TextMessageContent); ok && !stopSent {
						stopSent = true
						status, body := w.post(t, "/agent/runs/"+runID+"/stop", `{}`)
						if status != http.StatusOK || !strings.Contains(body, `"ok":true`) {
							t.Fatalf("stop: %d %s", status, body)
						}
					}
				}
				select {
				case <-w.model.Disconnected():
				case <-time.After(10 * time.Second):
					t.Fatal("the model request was not aborted")
				}
				if fin, ok := last.(agui.RunFinished); !ok || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeCancelled {
					t.Fatalf("the live stream ended with %+v: %s", last, joined(live))
				}
				tr := w.follow(t, runID, "")
				verifyAGUI(t, tr.raw, true)
				wantStopped(t, tr)
				if len(of[agui.TextMessageContent](tr)) == 0 || len(of[agui.TextMessageEnd](tr)) != 1 {
					t.Fatalf("the text so far is not in the log as a closed message: %s", joined(tr.types()))
				}
				eq(t, "model requests", w.model.RequestCount(), 1)
				status, body := w.post(t, "/agent/runs/"+runID+"/stop", `{}`)
				if status != http.StatusConflict || !strings.Contains(body, `"Conflict"`) {
					t.Fatalf("stopping a finished run: %d %s, want 409 Conflict", status, body)
				}
				if flow == "durable" {
					w.wantCancelled(t, runID)
				}
			})
		}
	}
}

// TestStopParkedRun stops a run that waits for an approval: the run ends cancelled in
// its log and in the journal, the tool never runs, and approving afterwards is Conflict.
func TestStopParkedRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Calls: []call{{ID: "c1", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}},
		{Text: "Sent."},
	}})
	tr := w.stream(t, "/chat", `{"message":"pay bob 500"}`)
	fin := tr.finished(t)
	if fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 {
		t.Fatalf("want one interrupt: %s", tr.raw)
	}
	runID, interrupt := tr.started(t).RunID, fin.Outcome.Interrupts[0]
	status, body := w.post(t, "/agent/runs/"+runID+"/stop", `{}`)
	if status != http.StatusOK {
		t.Fatalf("stop: %d %s", status, body)
	}
	followed := w.follow(t, runID, "")
	verifyAGUI(t, followed.raw, true)
	wantStopped(t, followed)
	status, body = w.post(t, "/agent/approvals/approve", `{"id":"`+interrupt.ID+`"}`)
	if status != http.StatusConflict {
		t.Fatalf("approving a stopped run's call: %d %s, want 409", status, body)
	}
	eq(t, "transfers", w.count("transfer"), 0)
	eq(t, "model requests", w.model.RequestCount(), 1)
	w.wantCancelled(t, runID)
}

// wantCancelled waits for the durable run that owns the agent run's log to end
// cancelled in the journal.
func (w *world) wantCancelled(t *testing.T, runID string) {
	t.Helper()
	st, err := w.journal.Driver().GetStream(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the durable run to end cancelled", func() bool {
		rec, err := w.journal.GetRun(context.Background(), st.RunID)
		return err == nil && rec.Status == journal.StatusCancelled
	})
}

// TestStopAccess: who may stop a run is who may follow it. A run nobody started and
// another user's run are both NotFound; a caller without credentials is Unauthorized;
// the starter and an operator may stop.
func TestStopAccess(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, runID, _ := e.parkedRun(t)
	for _, c := range []struct {
		user, run string
		want      int
	}{
		{apAlice, "run_nope", http.StatusNotFound},
		{apMallory, runID, http.StatusNotFound},
		{"", runID, http.StatusUnauthorized},
		{apAlice, runID, http.StatusOK},
		{apAlice, runID, http.StatusConflict},
	} {
		res, body := e.request(t, http.MethodPost, "/agent/runs/"+c.run+"/stop", c.user, nil, "{}")
		if res.StatusCode != c.want {
			t.Fatalf("%q stops %s: %d %s, want %d", c.user, c.run, res.StatusCode, body, c.want)
		}
		if c.want == http.StatusOK {
			// The stop ends the parked run (on this instance); a second stop is Conflict.
			waitFor(t, "the stopped run's log to finish", func() bool {
				st, err := e.j.GetStream(context.Background(), runID)
				return err == nil && st.FinishedAt != nil
			})
		}
	}
	// Without a journal there is no run to stop.
	w := newWorld(t, setup{noJournal: true})
	if status, body := w.post(t, "/agent/runs/run_nope/stop", `{}`); status != http.StatusNotFound {
		t.Fatalf("stop without a journal: %d %s", status, body)
	}
}

// TestStopClient stops a run through the Go client (clientx/agent.Stop).
func TestStopClient(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, runID, _ := e.parkedRun(t)
	ctx := context.Background()
	c := e.client(t, apAlice)
	if err := agent.Stop(ctx, c, runID); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitFor(t, "the stopped run's log to finish", func() bool {
		st, err := e.j.GetStream(ctx, runID)
		return err == nil && st.FinishedAt != nil
	})
	if err := agent.Stop(ctx, c, runID); !errors.Is(err, agent.ErrConflict) {
		t.Fatalf("second Stop: %v, want ErrConflict", err)
	}
	var ee *engine.Error
	if err := agent.Stop(ctx, c, "run_nope"); !errors.As(err, &ee) || ee.Code != engine.CodeNotFound {
		t.Fatalf("Stop of an unknown run: %v, want NotFound", err)
	}
}

// finishKiller is a dyingDriver that dies right after a stream's end is stored: the
// instance ended the run's log and never recorded the run's end.
type finishKiller struct{ *dyingDriver }

func (d finishKiller) FinishStream(ctx context.Context, id string, f *journal.Fence, rows []journal.EventRow, now time.Time) (int64, error) {
	if d.gone() {
		return 0, journal.ErrLeaseLost
	}
	last, err := d.Driver.FinishStream(ctx, id, f, rows, now)
	if err == nil && len(rows) > 0 {
		d.once.Do(func() { close(d.dead) })
	}
	return last, err
}

// TestStopTakenOverAfterTheLogEnded: the instance that ends a stopped run mid-reply dies
// after its log's RUN_FINISHED is stored and before the journal records the run's end;
// the instance that takes the run over records it cancelled, without calling the model
// again or adding to the log.
func TestStopTakenOverAfterTheLogEnded(t *testing.T) {
	t.Parallel()
	model := openaitest.NewServer(openaitest.Turn{Text: strings.Repeat("tick ", 400), Delay: 10 * time.Millisecond})
	t.Cleanup(model.Close)
	shared := memory.New()
	tk := &takeover{clock: journaltest.NewClock(), dying: newDyingDriver(shared, "never")}
	opts := func(owner string) journal.Options {
		return journal.Options{Owner: owner, Now: tk.clock.Now, LeaseTTL: 10 * time.Second}
	}
	tk.a = newApEnv(t, apConfig{driver: finishKiller{tk.dying}, jopts: opts("a"), model: model})
	tk.b = newApEnv(t, apConfig{driver: shared, jopts: opts("b"), model: model})
	t.Cleanup(func() { close(tk.dying.release) }) // before the apps' Close: a's blocked writes end

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := tk.a.openChat(t, ctx, "count")
	var runID string
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.Event.(agui.RunStarted); ok {
			runID = s.RunID
		}
		if _, ok := f.Event.(agui.TextMessageContent); ok {
			break
		}
	}
	if res, body := tk.a.request(t, http.MethodPost, "/agent/runs/"+runID+"/stop", apAlice, nil, "{}"); res.StatusCode != http.StatusOK {
		t.Fatalf("stop: %d %s", res.StatusCode, body)
	}
	tk.die(t)
	st, err := tk.b.j.GetStream(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to be recorded cancelled", func() bool {
		rec, err := tk.b.j.GetRun(t.Context(), st.RunID)
		return err == nil && rec.Status == journal.StatusCancelled
	})
	frames := tk.storedLog(t, runID)
	if n := count(frames, agui.TypeRunFinished, ""); n != 1 {
		t.Fatalf("RUN_FINISHED events = %d, want 1: %v", n, apTypes(frames))
	}
	if n := model.RequestCount(); n != 1 {
		t.Fatalf("the model was called %d times, want once", n)
	}
}
