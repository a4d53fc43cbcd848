package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/bbc28f59/engine/journal"
)

func runCases() []testCase {
	return []testCase{
		{"Runs/BeginStoresRunWithLease", runsBeginStoresRunWithLease},
		{"Runs/BeginRejectsDuplicateIDAndMissingFlow", runsBeginRejectsDuplicateIDAndMissingFlow},
		{"Runs/CompleteAndFailAreFinal", runsCompleteAndFailAreFinal},
		{"Runs/UnknownRun", runsUnknownRun},
		{"Runs/ClosedJournalRefusesWork", runsClosedJournalRefusesWork},
	}
}

// runsBeginStoresRunWithLease is the case "Runs/BeginStoresRunWithLease": begin stores run with lease.
func runsBeginStoresRunWithLease(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	rec := e.run(r.ID)
	if rec.Flow != "f" || rec.Tenant != "t1" || !jsonEq(rec.Input, []byte(`{"n":1}`)) || !jsonEq(rec.Principal, []byte(`{"id":"u1"}`)) {
		t.Fatalf("stored run = %+v", rec)
	}
	if rec.Status != journal.StatusRunning || rec.LeaseOwner != "a" || rec.Epoch != 1 || r.Epoch() != 1 {
		t.Fatalf("status %s owner %q epoch %d", rec.Status, rec.LeaseOwner, rec.Epoch)
	}
	if want := e.clock.Now().Add(leaseTTL); !rec.LeaseExpires.Equal(want) {
		t.Fatalf("lease expires %v, want %v", rec.LeaseExpires, want)
	}
	if !rec.CreatedAt.Equal(e.clock.Now()) || !r.CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("created at %v", rec.CreatedAt)
	}
}

// runsBeginRejectsDuplicateIDAndMissingFlow is the case "Runs/BeginRejectsDuplicateIDAndMissingFlow": begin rejects duplicate ID and missing flow.
func runsBeginRejectsDuplicateIDAndMissingFlow(t *testing.T, e *env) {
	j := e.journal("a")
	_, err := j.Begin(e.ctx, journal.NewRun{ID: "r1", Flow: "f"})
	must(t, "Begin", err)
	if _, err := j.Begin(e.ctx, journal.NewRun{ID: "r1", Flow: "f"}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("duplicate Begin err = %v, want ErrConflict", err)
	}
	if _, err := j.Begin(e.ctx, journal.NewRun{}); err == nil {
		t.Fatal("Begin without flow succeeded")
	}
}

// runsCompleteAndFailAreFinal is the case "Runs/CompleteAndFailAreFinal": complete and fail are final.
func runsCompleteAndFailAreFinal(t *testing.T, e *env) {
	j := e.journal("a")
	r1, r2 := e.begin(j), e.begin(j)
	must(t, "Complete", r1.Complete(e.ctx, json.RawMessage(`{"ok":true}`)))
	must(t, "Fail", r2.Fail(e.ctx, "boom"))
	rec1, rec2 := e.run(r1.ID), e.run(r2.ID)
	if rec1.Status != journal.StatusCompleted || !jsonEq(rec1.Output, []byte(`{"ok":true}`)) || rec1.LeaseOwner != "" {
		t.Fatalf("completed run = %+v", rec1)
	}
	if rec2.Status != journal.StatusFailed || rec2.Error != "boom" || rec2.LeaseOwner != "" {
		t.Fatalf("failed run = %+v", rec2)
	}
	if r1.Status() != journal.StatusCompleted {
		t.Fatalf("Run.Status = %s", r1.Status())
	}
	if _, err := j.Claim(e.ctx, r1.ID); !errors.Is(err, journal.ErrRunFinished) {
		t.Fatalf("Claim finished run err = %v", err)
	}
	if _, err := r1.Step(e.ctx, "late", func(context.Context) (json.RawMessage, error) { return nil, nil }); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("Step after Complete err = %v", err)
	}
}

// runsUnknownRun is the case "Runs/UnknownRun": unknown run.
func runsUnknownRun(t *testing.T, e *env) {
	j := e.journal("a")
	if _, err := j.Claim(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Claim err = %v", err)
	}
	if _, err := j.GetRun(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("GetRun err = %v", err)
	}
}

// runsClosedJournalRefusesWork is the case "Runs/ClosedJournalRefusesWork": closed journal refuses work.
func runsClosedJournalRefusesWork(t *testing.T, e *env) {
	j := e.journal("a")
	must(t, "Close", j.Close(e.ctx))
	if _, err := j.Begin(e.ctx, journal.NewRun{Flow: "f"}); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Begin after Close err = %v", err)
	}
}
