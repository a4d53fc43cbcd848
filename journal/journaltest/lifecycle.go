package journaltest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

func lifecycleCases() []testCase {
	return []testCase{
		{"Lifecycle/CloseWaitsForResumers", lifecycleCloseWaitsForResumers},
		{"Lifecycle/CloseCancelsResumersWhenItsContextEnds", lifecycleCloseCancelsResumersWhenItsContextEnds},
		{"Lifecycle/RunLeftOpenIsReleasedAndRetried", lifecycleRunLeftOpenIsReleasedAndRetried},
	}
}

// lifecycleCloseWaitsForResumers is the case "Lifecycle/CloseWaitsForResumers": close waits for resumers.
func lifecycleCloseWaitsForResumers(t *testing.T, e *env) {
	release := make(chan struct{})
	var finished atomic.Bool
	started := make(chan struct{})
	j := e.journal("a", func(o *journal.Options) {
		o.Resumer = func(ctx context.Context, r *journal.Run) {
			close(started)
			<-release
			_ = r.Complete(ctx, nil)
			finished.Store(true)
		}
	})
	r := e.parked(j, time.Time{}, "k")
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k", journal.Decision{Kind: journal.DecisionApprove}))
	<-started
	closed := make(chan error, 1)
	go func() { closed <- j.Close(context.Background()) }()
	close(release)
	must(t, "Close", <-closed)
	if !finished.Load() {
		t.Fatal("Close returned before the resumer finished")
	}
	if e.run(r.ID).Status != journal.StatusCompleted {
		t.Fatal("resumer's completion lost")
	}
}

// lifecycleCloseCancelsResumersWhenItsContextEnds is the case "Lifecycle/CloseCancelsResumersWhenItsContextEnds": close cancels resumers when its context ends.
func lifecycleCloseCancelsResumersWhenItsContextEnds(t *testing.T, e *env) {
	var sawCancel atomic.Bool
	started := make(chan struct{})
	j := e.journal("a", func(o *journal.Options) {
		o.Resumer = func(ctx context.Context, r *journal.Run) {
			close(started)
			<-ctx.Done()
			sawCancel.Store(true)
		}
	})
	r := e.parked(j, time.Time{}, "k")
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k", journal.Decision{Kind: journal.DecisionApprove}))
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close err = %v, want context.Canceled", err)
	}
	if !sawCancel.Load() {
		t.Fatal("the resumer's context was not cancelled")
	}
	// The abandoned run was released, so another instance can take it at once.
	if rec := e.run(r.ID); rec.LeaseOwner != "" {
		t.Fatalf("lease still held by %q", rec.LeaseOwner)
	}
}

// lifecycleRunLeftOpenIsReleasedAndRetried is the case "Lifecycle/RunLeftOpenIsReleasedAndRetried": run left open is released and retried.
func lifecycleRunLeftOpenIsReleasedAndRetried(t *testing.T, e *env) {
	var calls atomic.Int32
	j := e.journal("a", func(o *journal.Options) {
		o.Resumer = func(ctx context.Context, r *journal.Run) {
			if calls.Add(1) == 2 {
				_ = r.Complete(ctx, nil)
			}
		}
	})
	r := e.parked(j, time.Time{}, "k")
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k", journal.Decision{Kind: journal.DecisionApprove}))
	waitFor(t, "the first resume to release the run", func() bool {
		rec := e.run(r.ID)
		return calls.Load() == 1 && rec.LeaseOwner == "" && rec.Status == journal.StatusRunning
	})
	n, err := j.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	if n != 1 {
		t.Fatalf("recovered %d runs, want 1", n)
	}
	waitFor(t, "the retry to complete", e.completed(r.ID))
}
