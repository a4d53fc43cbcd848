package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	if _, err := journal.New(nil, journal.Options{}); err == nil {
		t.Fatal("nil driver accepted")
	}
	for name, o := range map[string]journal.Options{
		"LeaseTTL":         {LeaseTTL: -1},
		"PollInterval":     {PollInterval: -time.Second},
		"ApprovalDeadline": {ApprovalDeadline: -time.Hour},
	} {
		if _, err := journal.New(memory.New(), o); err == nil {
			t.Errorf("negative %s accepted", name)
		}
	}
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Owner() == "" {
		t.Fatal("no default owner")
	}
	j2, _ := journal.New(memory.New(), journal.Options{})
	if j.Owner() == j2.Owner() {
		t.Fatalf("two instances share the default owner %q", j.Owner())
	}
}

func TestLeaseBusyErrorMatches(t *testing.T) {
	t.Parallel()
	err := journal.BusyError("r1", "other", time.Unix(100, 0), time.Unix(97, 0))
	var busy *journal.LeaseBusyError
	if !errors.Is(err, journal.ErrLeaseBusy) || !errors.As(err, &busy) || busy.RetryAfter != 3*time.Second {
		t.Fatalf("err = %#v", err)
	}
	if errors.Is(err, journal.ErrLeaseLost) {
		t.Fatal("busy matches lease lost")
	}
	if err := journal.BusyError("r1", "other", time.Unix(90, 0), time.Unix(97, 0)); err.(*journal.LeaseBusyError).RetryAfter != 0 {
		t.Fatal("negative RetryAfter")
	}
}

func TestStartRunsRecoveryUntilClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	resumed := make(chan string, 1)
	j, err := journal.New(memory.New(), journal.Options{PollInterval: time.Millisecond,
		Resumer: func(ctx context.Context, r *journal.Run) {
			d := r.Decision("k")
			_ = r.Complete(ctx, nil)
			resumed <- string(d.Kind)
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := j.Begin(ctx, journal.NewRun{Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Park(ctx, "k", time.Now().Add(-time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Start(ctx); err == nil {
		t.Fatal("second Start accepted")
	}
	select { // the background recovery loop stores the timeout and resumes
	case kind := <-resumed:
		if kind != string(journal.DecisionTimeout) {
			t.Fatalf("resumed with %q", kind)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the recovery loop never resumed the expired park")
	}
	if err := j.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := j.Start(ctx); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}
