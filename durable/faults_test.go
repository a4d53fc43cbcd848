package durable_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

type boomOut struct {
	X float64 `json:"x"`
}

var (
	faults    = engine.NewUnit("faults")
	panicFlow = engine.Define[PlaceIn, boomOut](faults, "panic", engine.POST("/panic"), engine.Public(), engine.Durable())
	nanFlow   = engine.Define[PlaceIn, boomOut](faults, "nan", engine.POST("/nan"), engine.Public(), engine.Durable())
	slowTick  = engine.Define[durable.Tick, struct{}](faults, "slowTick", engine.Durable())
)

// faultApp serves panicFlow and nanFlow on a memory journal owned by "a"; the handlers
// report their run's id through seen.
func faultApp(t *testing.T, seen *atomic.Value) (*httptest.Server, *journal.Journal) {
	t.Helper()
	j, err := journal.New(memory.New(), journal.Options{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.Serve(t,
		engine.WithLogger(discardLogger()),
		durable.With(j),
		engine.Bind(panicFlow, func(fx *engine.Fx, in PlaceIn) (boomOut, error) {
			seen.Store(durable.RunOf(fx).ID)
			panic("the handler's bug")
		}),
		engine.Bind(nanFlow, func(fx *engine.Fx, in PlaceIn) (boomOut, error) {
			seen.Store(durable.RunOf(fx).ID)
			return boomOut{X: math.NaN()}, nil
		}),
	)
	return srv, j
}

// A durable call that cannot end well answers 500 and fails its run, neither leaving it
// held by an execution that is gone (renewed, so never recovered, for the life of the
// process) nor recording a completion with no result: a handler that panics, and an
// output JSON cannot carry (the caller is told which field).
func TestADurableCallThatCannotEndWellFailsItsRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ path, wantErr string }{
		{"/panic", "the handler's bug"},
		{"/nan", "NaN"},
	} {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			var seen atomic.Value
			srv, j := faultApp(t, &seen)
			res, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(`{"item":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500", res.StatusCode)
			}
			id, _ := seen.Load().(string)
			rec, err := j.GetRun(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != journal.StatusFailed || rec.LeaseOwner != "" || !strings.Contains(rec.Error, c.wantErr) {
				t.Fatalf("run: status %s, lease owner %q, error %q, output %s; want failed, no owner, an error naming %q",
					rec.Status, rec.LeaseOwner, rec.Error, rec.Output, c.wantErr)
			}
		})
	}
}

// Close bounded by a context returns when the context ends, even while a tick's handler
// waits for its context to end: the tick is cancelled and its run left to resume.
func TestCloseDoesNotWaitForeverForATick(t *testing.T) {
	t.Parallel()
	j, err := journal.New(memory.New(), journal.Options{Owner: "a"})
	if err != nil {
		t.Fatal(err)
	}
	every, err := durable.Every(20 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 100)
	app, err := engine.New(engine.WithLogger(discardLogger()), durable.With(j),
		durable.Clock(slowTick, every, func(fx *engine.Fx, in durable.Tick) (struct{}, error) {
			started <- durable.RunOf(fx).ID
			<-fx.Context().Done()
			return struct{}{}, fx.Context().Err()
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var id string
	select {
	case id = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("no tick started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Close(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v, want the context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits for the tick 10 s on")
	}
	rec, err := j.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != journal.StatusRunning || rec.LeaseOwner != "" {
		t.Fatalf("the cut-off tick's run: status %s, owner %q; want running and released, to resume elsewhere", rec.Status, rec.LeaseOwner)
	}
}

var leaveFlow = engine.Define[PlaceIn, boomOut](faults, "leave", engine.POST("/leave"), engine.Public(), engine.Durable())

// A caller that goes away mid-call cuts the execution off, not the run: the run is
// released with its recorded steps and the recovery loop finishes it, running again only
// the step that was cut off.
func TestACallerLeavingMidCallLeavesTheRunToFinish(t *testing.T) {
	t.Parallel()
	j, err := journal.New(memory.New(), journal.Options{Owner: "a", PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var first, second atomic.Int64
	var runID atomic.Value
	entered := make(chan struct{})
	srv := testenv.Serve(t, engine.WithLogger(discardLogger()), durable.With(j),
		engine.Bind(leaveFlow, func(fx *engine.Fx, in PlaceIn) (boomOut, error) {
			runID.Store(durable.RunOf(fx).ID)
			if _, err := durable.Step(fx, "first", func(context.Context) (int64, error) { return first.Add(1), nil }); err != nil {
				return boomOut{}, err
			}
			n, err := durable.Step(fx, "second", func(ctx context.Context) (int64, error) {
				if second.Add(1) == 1 {
					close(entered)
					<-ctx.Done() // the caller leaves while this step runs
					return 0, ctx.Err()
				}
				return 2, nil
			})
			return boomOut{X: float64(n)}, err
		}))

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/leave", strings.NewReader(`{"item":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	<-entered
	cancel()
	<-done
	id, _ := runID.Load().(string)
	deadline := time.Now().Add(10 * time.Second)
	var rec journal.RunRecord
	for time.Now().Before(deadline) {
		if rec, err = j.GetRun(context.Background(), id); err == nil && rec.Status.Final() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rec.Status != journal.StatusCompleted || string(rec.Output) != `{"x":2}` {
		t.Fatalf("run after its caller left: %s %s (%s), want completed {\"x\":2}", rec.Status, rec.Output, rec.Error)
	}
	if first.Load() != 1 || second.Load() != 2 {
		t.Fatalf("steps ran %d and %d times, want the recorded one once and the cut-off one twice", first.Load(), second.Load())
	}
}
