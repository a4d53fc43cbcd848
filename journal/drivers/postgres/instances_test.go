package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// instance is one application instance: its own pool, driver and journal.
type instance struct {
	d *postgres.Driver
	j *journal.Journal
}

// twoInstances opens two instances on the same tables of the test database, sharing a
// fake clock. Only the first drops the tables at cleanup.
func twoInstances(t *testing.T, clock *journaltest.Clock, resumer func(context.Context, *journal.Run)) (a, b instance) {
	t.Helper()
	prefix := uniquePrefix()
	open := func(owner string, first bool) instance {
		var d *postgres.Driver
		if first {
			d = newDriver(t, openDB(t), prefix)
		} else {
			url := dsn(t)
			var err error
			d, err = postgres.New(openDB(t), postgres.Options{TablePrefix: prefix, PollInterval: time.Hour,
				Listener: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close() })
		}
		j, err := journal.New(d, journal.Options{Owner: owner, LeaseTTL: 10 * time.Second, Now: clock.Now, Resumer: resumer})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = j.Close(context.Background()) })
		return instance{d: d, j: j}
	}
	return open("a", true), open("b", false)
}

// counter counts step executions by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) step(ctx context.Context, r *journal.Run, name string) error {
	_, err := r.Step(ctx, name, func(context.Context) (json.RawMessage, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[name]++
		return json.RawMessage(`"` + name + `"`), nil
	})
	return err
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func TestTwoInstancesParkDecideResume(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := journaltest.NewClock()
	var steps counter
	done := make(chan error, 1)
	handler := func(ctx context.Context, r *journal.Run) error {
		if err := steps.step(ctx, r, "plan"); err != nil {
			return err
		}
		d, err := r.Park(ctx, "call-1", time.Time{}, json.RawMessage(`{"tool":"send"}`))
		if err != nil || d == nil {
			if err == nil {
				err = r.Suspend(ctx)
			}
			return err
		}
		if err := steps.step(ctx, r, "send"); err != nil {
			return err
		}
		return r.Complete(ctx, json.RawMessage(`{"decision":"`+string(d.Kind)+`"}`))
	}
	a, b := twoInstances(t, clock, func(ctx context.Context, r *journal.Run) { done <- handler(ctx, r) })

	// b follows the run's stream from its own connection: LISTEN/NOTIFY carries the wake-up.
	r, err := a.j.Begin(ctx, journal.NewRun{Flow: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.j.CreateStream(ctx, journal.Stream{ID: "s-" + r.ID, RunID: r.ID}); err != nil {
		t.Fatal(err)
	}
	wake, cancel := b.j.Subscribe("s-" + r.ID)
	defer cancel()
	select { // the listener signals once when LISTEN is in place
	case <-wake:
	case <-time.After(20 * time.Second):
		t.Fatal("listener never connected")
	}
	if err := a.j.AppendEvents(ctx, "s-"+r.ID, r, journal.EventRow{Seq: 1, Event: json.RawMessage(`{"type":"RUN_STARTED"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(20 * time.Second):
		t.Fatal("b was not woken by a's append")
	}

	if err := handler(ctx, r); err != nil {
		t.Fatalf("first execution: %v", err)
	}
	if rec, _ := b.j.GetRun(ctx, r.ID); rec.Status != journal.StatusParked {
		t.Fatalf("status after park = %s", rec.Status)
	}
	if err := b.j.Decide(ctx, r.ID, "call-1", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
		t.Fatalf("b Decide: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("resumed execution: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b did not resume the run")
	}
	rec, err := a.j.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != journal.StatusCompleted || rec.Epoch != 2 || string(rec.Output) != `{"decision":"approve"}` {
		t.Fatalf("run = %s epoch %d output %s", rec.Status, rec.Epoch, rec.Output)
	}
	if steps.get("plan") != 1 || steps.get("send") != 1 {
		t.Fatalf("step executions = %v, want each once", steps.n)
	}
	if err := a.j.Decide(ctx, r.ID, "call-1", journal.Decision{Kind: journal.DecisionDeny}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("second decision from a: %v", err)
	}
}

func TestTwoInstancesTakeOverAbandonedRun(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := journaltest.NewClock()
	var steps counter
	done := make(chan error, 1)
	handler := func(ctx context.Context, r *journal.Run) error {
		for _, name := range []string{"one", "two", "three"} {
			if err := steps.step(ctx, r, name); err != nil {
				return err
			}
		}
		return r.Complete(ctx, nil)
	}
	a, b := twoInstances(t, clock, func(ctx context.Context, r *journal.Run) { done <- handler(ctx, r) })

	r, err := a.j.Begin(ctx, journal.NewRun{Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if err := steps.step(ctx, r, "one"); err != nil {
		t.Fatal(err)
	}
	if err := steps.step(ctx, r, "two"); err != nil {
		t.Fatal(err)
	}
	// a dies: no renewal, no release, no Close before the takeover.
	if n, err := b.j.RecoverOnce(ctx); err != nil || n != 0 {
		t.Fatalf("b recovered a live run: %d %v", n, err)
	}
	if _, err := b.j.Claim(ctx, r.ID); !errors.Is(err, journal.ErrLeaseBusy) {
		t.Fatalf("b claimed a live run: %v", err)
	}
	clock.Advance(11 * time.Second)
	if n, err := b.j.RecoverOnce(ctx); err != nil || n != 1 {
		t.Fatalf("b RecoverOnce = %d, %v; want 1 run", n, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("b's execution: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b did not resume the abandoned run")
	}
	for _, name := range []string{"one", "two", "three"} {
		if steps.get(name) != 1 {
			t.Fatalf("step %s ran %d times, want 1", name, steps.get(name))
		}
	}
	if err := steps.step(ctx, r, "three"); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("a's late write after takeover: %v", err)
	}
	if rec, _ := a.j.GetRun(ctx, r.ID); rec.Status != journal.StatusCompleted || rec.LeaseOwner != "" {
		t.Fatalf("run = %+v", rec)
	}
}
