package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

func leaseCases() []testCase {
	return []testCase{
		{"Leases/ClaimHeldRunIsBusy", leasesClaimHeldRunIsBusy},
		{"Leases/ExpiryAndTakeoverFenceTheOldWriter", leasesExpiryAndTakeoverFenceTheOldWriter},
		{"Leases/RenewalKeepsTheLease", leasesRenewalKeepsTheLease},
		{"Leases/RenewalEndsTheExecutionsThatLostTheirLease", leasesRenewalEndsTheExecutionsThatLostTheirLease},
		{"Leases/CloseReleasesLeases", leasesCloseReleasesLeases},
		{"Leases/RecoveryTakesOverDeadOwnerWithoutRepeatingSteps", leasesRecoveryTakesOverDeadOwnerWithoutRepeatingSteps},
		{"Leases/SchedulerLeaseElectsOneInstance", leasesSchedulerLeaseElectsOneInstance},
	}
}

// leasesClaimHeldRunIsBusy is the case "Leases/ClaimHeldRunIsBusy": claim held run is busy.
func leasesClaimHeldRunIsBusy(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.clock.Advance(3 * time.Second)
	_, err := b.Claim(e.ctx, r.ID)
	var busy *journal.LeaseBusyError
	if !errors.As(err, &busy) || !errors.Is(err, journal.ErrLeaseBusy) {
		t.Fatalf("Claim err = %v, want LeaseBusyError", err)
	}
	if busy.RetryAfter != leaseTTL-3*time.Second || busy.Owner != "a" || busy.RunID != r.ID {
		t.Fatalf("busy = %+v", busy)
	}
	// While an execution on this instance holds it, a second claim there is busy
	// too: two executions of one run never overlap in one process.
	if _, err := a.Claim(e.ctx, r.ID); !errors.As(err, &busy) || busy.Owner != "a" {
		t.Fatalf("second Claim on the holding instance err = %v, want LeaseBusyError", err)
	}
	// A restarted instance under the same owner name (the old process is gone) may
	// claim at once: the epoch moves on.
	r2, err := e.journal("a").Claim(e.ctx, r.ID)
	must(t, "Claim by the holder restarted", err)
	if r2.Epoch() != 2 {
		t.Fatalf("epoch = %d", r2.Epoch())
	}
	if _, err := r.Step(e.ctx, "old", func(context.Context) (json.RawMessage, error) { return nil, nil }); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("older execution still writes: %v", err)
	}
}

// leasesExpiryAndTakeoverFenceTheOldWriter is the case "Leases/ExpiryAndTakeoverFenceTheOldWriter": expiry and takeover fence the old writer.
func leasesExpiryAndTakeoverFenceTheOldWriter(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.clock.Advance(leaseTTL)
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim after expiry", err)
	if r2.Epoch() != 2 || e.run(r.ID).LeaseOwner != "b" {
		t.Fatalf("takeover epoch %d owner %s", r2.Epoch(), e.run(r.ID).LeaseOwner)
	}
	for name, write := range map[string]func() error{
		"Complete": func() error { return r.Complete(e.ctx, nil) },
		"Park":     func() error { _, err := r.Park(e.ctx, "k", time.Time{}, nil); return err },
	} {
		if err := write(); !errors.Is(err, journal.ErrLeaseLost) {
			t.Fatalf("old owner %s err = %v, want ErrLeaseLost", name, err)
		}
	}
	// Fenced driver writes with the old fence are rejected too.
	old := journal.Fence{RunID: r.ID, Owner: "a", Epoch: 1}
	if err := e.d.UpdateRun(e.ctx, old, journal.RunUpdate{Status: journal.StatusFailed}, e.clock.Now()); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("UpdateRun with old fence err = %v", err)
	}
	if err := e.d.RenewLease(e.ctx, old, e.clock.Now().Add(time.Hour)); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("RenewLease with old fence err = %v", err)
	}
	must(t, "new owner Complete", r2.Complete(e.ctx, json.RawMessage(`1`)))
	if rec := e.run(r.ID); rec.Status != journal.StatusCompleted {
		t.Fatalf("status %s", rec.Status)
	}
}

// leasesRenewalKeepsTheLease is the case "Leases/RenewalKeepsTheLease": renewal keeps the lease.
func leasesRenewalKeepsTheLease(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	for range 3 {
		e.clock.Advance(leaseTTL / 2)
		a.RenewOnce(e.ctx)
	}
	if _, err := b.Claim(e.ctx, r.ID); !errors.Is(err, journal.ErrLeaseBusy) {
		t.Fatalf("renewed run claimable: %v", err)
	}
	if want := e.clock.Now().Add(leaseTTL); !e.run(r.ID).LeaseExpires.Equal(want) {
		t.Fatalf("lease expires %v, want %v", e.run(r.ID).LeaseExpires, want)
	}
}

// leasesRenewalEndsTheExecutionsThatLostTheirLease is the case
// "Leases/RenewalEndsTheExecutionsThatLostTheirLease": one renewal pass of an instance
// that holds several runs extends the leases it still holds, leaves alone the one
// another instance took over, and ends its own execution of that one, so the instance
// may claim the run again once it is free.
func leasesRenewalEndsTheExecutionsThatLostTheirLease(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	runs := []*journal.Run{e.begin(a), e.begin(a), e.begin(a)}
	e.clock.Advance(leaseTTL + time.Second)
	taken, err := b.Claim(e.ctx, runs[1].ID)
	must(t, "Claim after expiry", err)
	takenRec := e.run(runs[1].ID)
	if _, err := a.Claim(e.ctx, runs[1].ID); !errors.Is(err, journal.ErrLeaseBusy) {
		t.Fatalf("a claimed a run b holds: %v", err)
	}

	a.RenewOnce(e.ctx)
	for _, r := range []*journal.Run{runs[0], runs[2]} {
		if rec := e.run(r.ID); rec.LeaseOwner != "a" || !rec.LeaseExpires.Equal(e.clock.Now().Add(leaseTTL)) {
			t.Fatalf("renewed run %s: owner %q, expires %v, want a until %v", r.ID, rec.LeaseOwner, rec.LeaseExpires, e.clock.Now().Add(leaseTTL))
		}
	}
	if rec := e.run(runs[1].ID); !reflect.DeepEqual(rec, takenRec) {
		t.Fatalf("the run b took over after a's renewal: %+v, was %+v", rec, takenRec)
	}
	must(t, "Release", taken.Release(e.ctx))
	again, err := a.Claim(e.ctx, runs[1].ID)
	must(t, "a claims the run it lost once b released it", err)
	if again.Epoch() != 3 {
		t.Fatalf("epoch %d after a's second claim, want 3", again.Epoch())
	}
}

// leasesCloseReleasesLeases is the case "Leases/CloseReleasesLeases": close releases leases.
func leasesCloseReleasesLeases(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	must(t, "Close", a.Close(e.ctx))
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim after Close", err)
	if r2.Status() != journal.StatusRunning {
		t.Fatalf("status %s", r2.Status())
	}
}

// leasesRecoveryTakesOverDeadOwnerWithoutRepeatingSteps is the case "Leases/RecoveryTakesOverDeadOwnerWithoutRepeatingSteps": recovery takes over dead owner without repeating steps.
func leasesRecoveryTakesOverDeadOwnerWithoutRepeatingSteps(t *testing.T, e *env) {
	var mu sync.Mutex
	counts := map[string]int{}
	step := func(r *journal.Run, name string) error {
		_, err := r.Step(e.ctx, name, func(context.Context) (json.RawMessage, error) {
			mu.Lock()
			counts[name]++
			mu.Unlock()
			return json.RawMessage(`"` + name + `"`), nil
		})
		return err
	}
	a := e.journal("a")
	r := e.begin(a)
	must(t, "step 1", step(r, "one"))
	// a dies here: no Close, no release, no renewal.

	resumed := make(chan error, 1)
	b := e.journal("b", func(o *journal.Options) {
		o.Resumer = func(ctx context.Context, r *journal.Run) {
			err := step(r, "one")
			if err == nil {
				err = step(r, "two")
			}
			if err == nil {
				err = r.Complete(ctx, nil)
			}
			resumed <- err
		}
	})
	if n, err := b.RecoverOnce(e.ctx); err != nil || n != 0 {
		t.Fatalf("RecoverOnce before expiry = %d, %v", n, err)
	}
	e.clock.Advance(leaseTTL + time.Second)
	n, err := b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	if n != 1 {
		t.Fatalf("recovered %d runs", n)
	}
	select {
	case err := <-resumed:
		must(t, "resumed handler", err)
	case <-time.After(20 * time.Second):
		t.Fatal("resumer did not finish")
	}
	if counts["one"] != 1 || counts["two"] != 1 {
		t.Fatalf("step executions = %v, want each once", counts)
	}
	if _, err := r.Step(e.ctx, "two", func(context.Context) (json.RawMessage, error) { return nil, nil }); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("dead owner's late write err = %v", err)
	}
}

// leasesSchedulerLeaseElectsOneInstance is the case "Leases/SchedulerLeaseElectsOneInstance": scheduler lease elects one instance.
func leasesSchedulerLeaseElectsOneInstance(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	ra, err := a.CleanupOnce(e.ctx)
	must(t, "a CleanupOnce", err)
	rb, err := b.CleanupOnce(e.ctx)
	must(t, "b CleanupOnce", err)
	if !ra.Leader || rb.Leader {
		t.Fatalf("leaders a=%v b=%v, want only a", ra.Leader, rb.Leader)
	}
	e.clock.Advance(10 * time.Minute) // past the scheduler lease
	rb, err = b.CleanupOnce(e.ctx)
	must(t, "b CleanupOnce", err)
	if !rb.Leader {
		t.Fatal("b did not take the expired scheduler lease")
	}
	ra, err = a.CleanupOnce(e.ctx)
	must(t, "a CleanupOnce", err)
	if ra.Leader {
		t.Fatal("two leaders")
	}
	must(t, "Close b", b.Close(e.ctx))
	ra, err = a.CleanupOnce(e.ctx)
	must(t, "a CleanupOnce", err)
	if !ra.Leader {
		t.Fatal("Close did not release the scheduler lease")
	}
}
