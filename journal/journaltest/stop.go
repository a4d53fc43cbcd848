package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bbc28f59/engine/journal"
)

func stopCases() []testCase {
	return []testCase{
		{"Stop/RequestIsStoredAndWakesTheHolder", stopRequestIsStoredAndWakesTheHolder},
		{"Stop/UnknownAndFinishedStreams", stopUnknownAndFinishedStreams},
		{"Stop/RetentionRemovesTheRequestWithItsStream", stopRetentionRemovesTheRequestWithItsStream},
		{"Stop/ParkedRunIsCancelledAndResumedOnce", stopParkedRunIsCancelledAndResumedOnce},
		{"Stop/DecisionBeforeStopKeepsTheDecision", stopDecisionBeforeStopKeepsTheDecision},
		{"Stop/WaitOfAStoppedRunReturnsErrStopped", stopWaitOfAStoppedRunReturnsErrStopped},
		{"Threads/RunsInOrderWithoutGapAndWake", threadsRunsInOrderWithoutGapAndWake},
		{"Threads/StreamNamingAThreadIsItsNextRun", threadsStreamNamingAThreadIsItsNextRun},
	}
}

// stopRequestIsStoredAndWakesTheHolder is the case "Stop/RequestIsStoredAndWakesTheHolder": request is stored and wakes the holder.
func stopRequestIsStoredAndWakesTheHolder(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	e.stream(a, "s1", "")
	ch, cancel := a.SubscribeStop("s1")
	defer cancel()
	fch := make(chan struct{}, 1)
	unsubscribe, byFunc := a.SubscribeStopFunc("s1", func() {
		select {
		case fch <- struct{}{}:
		default:
		}
	})
	if byFunc {
		defer unsubscribe()
	} else {
		t.Log("the driver cannot call back: SubscribeStopFunc reports it, SubscribeStop serves")
	}
	if got, err := a.StopRequested(e.ctx, "s1"); err != nil || got {
		t.Fatalf("StopRequested before any request = %v, %v", got, err)
	}
	must(t, "RequestStop", b.RequestStop(e.ctx, "s1"))
	woken(t, ch, "a stop request made through another journal")
	if byFunc {
		woken(t, fch, "a stop request made through another journal, to a function subscription")
	}
	if got, err := a.StopRequested(e.ctx, "s1"); err != nil || !got {
		t.Fatalf("StopRequested after a request = %v, %v", got, err)
	}
	first, err := e.d.StopRequested(e.ctx, "s1")
	must(t, "StopRequested", err)
	e.clock.Advance(1)
	must(t, "second RequestStop", b.RequestStop(e.ctx, "s1"))
	if again, _ := e.d.StopRequested(e.ctx, "s1"); !again.Equal(first) || !first.Equal(e.clock.Now().Add(-1)) {
		t.Fatalf("a second request moved the time: first %v, now %v", first, again)
	}
	e.stream(a, "s2", "")
	if got, _ := a.StopRequested(e.ctx, "s2"); got {
		t.Fatal("a stop of s1 reached s2")
	}
}

// stopUnknownAndFinishedStreams is the case "Stop/UnknownAndFinishedStreams": unknown and finished streams.
func stopUnknownAndFinishedStreams(t *testing.T, e *env) {
	a := e.journal("a")
	if err := a.RequestStop(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("unknown stream: %v, want ErrNotFound", err)
	}
	e.stream(a, "s1", "")
	must(t, "Finish", a.FinishStream(e.ctx, "s1"))
	if err := a.RequestStop(e.ctx, "s1"); !errors.Is(err, journal.ErrRunFinished) {
		t.Fatalf("finished stream: %v, want ErrRunFinished", err)
	}
	if got, _ := a.StopRequested(e.ctx, "s1"); got {
		t.Fatal("a refused request was stored")
	}
}

// stopRetentionRemovesTheRequestWithItsStream is the case "Stop/RetentionRemovesTheRequestWithItsStream": retention removes the request with its stream.
func stopRetentionRemovesTheRequestWithItsStream(t *testing.T, e *env) {
	a := e.journal("a")
	e.stream(a, "s1", "")
	e.stream(a, "s2", "")
	must(t, "RequestStop s1", a.RequestStop(e.ctx, "s1"))
	must(t, "RequestStop s2", a.RequestStop(e.ctx, "s2"))
	must(t, "Finish", a.FinishStream(e.ctx, "s1"))
	e.clock.Advance(1)
	n, err := e.d.DeleteFinishedStreams(e.ctx, e.clock.Now(), 10)
	if err != nil || n != 1 {
		t.Fatalf("DeleteFinishedStreams = %d, %v; want 1", n, err)
	}
	if at, err := e.d.StopRequested(e.ctx, "s1"); err != nil || !at.IsZero() {
		t.Fatalf("the deleted stream's stop request stayed: %v, %v", at, err)
	}
	if at, err := e.d.StopRequested(e.ctx, "s2"); err != nil || at.IsZero() {
		t.Fatalf("a live stream's stop request went with another's retention: %v, %v", at, err)
	}
}

// stopParkedRunIsCancelledAndResumedOnce is the case "Stop/ParkedRunIsCancelledAndResumedOnce": parked run is cancelled and resumed once.
func stopParkedRunIsCancelledAndResumedOnce(t *testing.T, e *env) {
	resumed := make(chan *journal.Decision, 4)
	resumer := func(ctx context.Context, r *journal.Run) {
		resumed <- r.Decision("k1")
		r.MarkStopped()
		_ = r.Complete(ctx, json.RawMessage(`"stopped"`))
	}
	a := e.journal("a")
	b := e.journal("b", func(o *journal.Options) { o.Resumer = resumer })
	r := e.parked(a, e.clock.Now().Add(1e12), "k1", "k2")
	e.stream(a, "log", r.ID)
	must(t, "RequestStop", b.RequestStop(e.ctx, "log"))
	d := <-resumed
	if d == nil || d.Kind != journal.DecisionCancel {
		t.Fatalf("resumed run saw decision %+v, want cancel", d)
	}
	waitFor(t, "the stopped run to end cancelled", func() bool {
		rec, err := e.d.GetRun(e.ctx, r.ID)
		return err == nil && rec.Status == journal.StatusCancelled && rec.Status.Final()
	})
	for _, k := range []string{"k1", "k2"} {
		if err := a.Decide(e.ctx, r.ID, k, journal.Decision{Kind: journal.DecisionApprove}); !errors.Is(err, journal.ErrConflict) {
			t.Fatalf("approving %s of a stopped run: %v, want ErrConflict", k, err)
		}
	}
	if _, err := a.Claim(e.ctx, r.ID); !errors.Is(err, journal.ErrRunFinished) {
		t.Fatalf("claiming a cancelled run: %v, want ErrRunFinished", err)
	}
	select {
	case d := <-resumed:
		t.Fatalf("resumed twice (%+v)", d)
	default:
	}
}

// stopDecisionBeforeStopKeepsTheDecision is the case "Stop/DecisionBeforeStopKeepsTheDecision": decision before stop keeps the decision.
func stopDecisionBeforeStopKeepsTheDecision(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.parked(a, e.clock.Now().Add(1e12), "k1", "k2")
	e.stream(a, "log", r.ID)
	must(t, "Decide k1", a.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}))
	must(t, "RequestStop", a.RequestStop(e.ctx, "log"))
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if len(parks) != 2 || parks[0].Decision.Kind != journal.DecisionApprove || parks[1].Decision.Kind != journal.DecisionCancel {
		t.Fatalf("parks after approve then stop: %+v", parks)
	}
}

// stopWaitOfAStoppedRunReturnsErrStopped is the case "Stop/WaitOfAStoppedRunReturnsErrStopped": wait of a stopped run returns err stopped.
func stopWaitOfAStoppedRunReturnsErrStopped(t *testing.T, e *env) {
	got := make(chan error, 2)
	resumer := func(ctx context.Context, r *journal.Run) {
		_, err := r.WaitSignal(ctx, "go", "k", e.clock.Now().Add(1e12))
		got <- err
		_ = r.Release(ctx)
	}
	a := e.journal("a", func(o *journal.Options) { o.Resumer = resumer })
	r := e.begin(a)
	d, err := r.WaitSignal(e.ctx, "go", "k", e.clock.Now().Add(1e12))
	must(t, "WaitSignal", err)
	if d != nil {
		t.Fatalf("unset signal decided: %+v", d)
	}
	must(t, "Suspend", r.Suspend(e.ctx))
	e.stream(a, "log", r.ID)
	must(t, "RequestStop", a.RequestStop(e.ctx, "log"))
	if err := <-got; !errors.Is(err, journal.ErrStopped) {
		t.Fatalf("the resumed wait: %v, want ErrStopped", err)
	}
}

// threadsRunsInOrderWithoutGapAndWake is the case "Threads/RunsInOrderWithoutGapAndWake": runs in order without gap and wake.
func threadsRunsInOrderWithoutGapAndWake(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	ch, cancel := b.Subscribe(journal.ThreadTopic("t1"))
	defer cancel()
	if runs, err := a.ThreadRuns(e.ctx, "t1", 0, 10); err != nil || len(runs) != 0 {
		t.Fatalf("unknown thread: %v, %v", runs, err)
	}
	pos, err := a.AddThreadRun(e.ctx, "t1", "s1")
	must(t, "AddThreadRun", err)
	woken(t, ch, "a thread's first run")
	if pos != 1 {
		t.Fatalf("first position %d", pos)
	}
	if again, err := b.AddThreadRun(e.ctx, "t1", "s1"); err != nil || again != 1 {
		t.Fatalf("adding the same run again: %d, %v", again, err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		j := []*journal.Journal{a, b}[i%2]
		wg.Go(func() {
			if _, err := j.AddThreadRun(e.ctx, "t1", fmt.Sprintf("c%d", i)); err != nil {
				t.Errorf("concurrent AddThreadRun: %v", err)
			}
		})
	}
	wg.Wait()
	must(t, "other thread", func() error { _, err := a.AddThreadRun(e.ctx, "t2", "x"); return err }())
	runs, err := b.ThreadRuns(e.ctx, "t1", 0, 100)
	must(t, "ThreadRuns", err)
	seen := map[string]bool{}
	for i, r := range runs {
		if r.Pos != int64(i+1) || seen[r.StreamID] {
			t.Fatalf("runs = %+v: positions must be 1..n, each stream once", runs)
		}
		seen[r.StreamID] = true
	}
	if len(runs) != 9 {
		t.Fatalf("%d runs, want 9", len(runs))
	}
	tail, err := a.ThreadRuns(e.ctx, "t1", 7, 1)
	must(t, "ThreadRuns after 7", err)
	if len(tail) != 1 || tail[0].Pos != 8 {
		t.Fatalf("after 7, limit 1: %+v", tail)
	}
}

// threadsStreamNamingAThreadIsItsNextRun is the case "Threads/StreamNamingAThreadIsItsNextRun":
// a stream created with a ThreadID (by CreateStream, by CreateLog, and in a durable
// step's write by CreateLogStep) is recorded as the thread's next run in the same write,
// wakes the thread's subscribers on another instance, and is recorded once however often
// its creation is retried or replayed.
func threadsStreamNamingAThreadIsItsNextRun(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	ch, cancel := b.Subscribe(journal.ThreadTopic("conv"))
	defer cancel()
	_, err := a.AddThreadRun(e.ctx, "conv", "earlier")
	must(t, "AddThreadRun", err)
	woken(t, ch, "the thread's first run")

	must(t, "CreateStream", a.CreateStream(e.ctx, journal.Stream{ID: "plain", Flow: "f", ThreadID: "conv"}))
	woken(t, ch, "a stream created on the thread")
	if err := b.CreateStream(e.ctx, journal.Stream{ID: "plain", Flow: "f", ThreadID: "conv"}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("creating the stream again: %v, want ErrConflict", err)
	}
	w, err := a.CreateLog(e.ctx, journal.Stream{ID: "logged", Flow: "f", ThreadID: "conv"}, nil, journal.LogOptions{})
	must(t, "CreateLog", err)
	must(t, "Finish", w.Finish(e.ctx))

	r := e.begin(a)
	step := func(r *journal.Run) {
		t.Helper()
		w, err := r.CreateLogStep(e.ctx, "log", func() journal.Stream {
			return journal.Stream{ID: "durable", Flow: "f", ThreadID: "conv"}
		}, journal.LogOptions{})
		must(t, "CreateLogStep", err)
		must(t, "Close", w.Close(e.ctx))
	}
	step(r)
	must(t, "Suspend", r.Suspend(e.ctx))
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	step(r2) // the replay finds the step's stream: no second thread run

	runs, err := b.ThreadRuns(e.ctx, "conv", 0, 10)
	must(t, "ThreadRuns", err)
	var got []string
	for i, tr := range runs {
		if tr.Pos != int64(i+1) {
			t.Fatalf("runs = %+v: positions must be 1..n", runs)
		}
		got = append(got, tr.StreamID)
	}
	if fmt.Sprint(got) != "[earlier plain logged durable]" {
		t.Fatalf("thread runs %v, want [earlier plain logged durable]", got)
	}
	if other, err := a.ThreadRuns(e.ctx, "durable", 0, 10); err != nil || len(other) != 0 {
		t.Fatalf("a stream naming a thread has no thread of its own: %+v, %v", other, err)
	}
	if err := a.CreateStream(e.ctx, journal.Stream{ID: "bad", Flow: "f", ThreadID: "a\x00b"}); !errors.Is(err, journal.ErrUnstorableID) {
		t.Fatalf("a thread id no driver can store: %v, want ErrUnstorableID", err)
	}
}
