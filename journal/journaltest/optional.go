package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// The optional driver methods ([journal.RunClaimLoader], [journal.RunSuspender],
// [journal.StreamEndReader], [journal.LeaseRenewer], [journal.RunParksReader]) must
// answer as the calls they replace; a driver without one skips its case, and the journal
// makes those calls instead.
func optionalCases() []testCase {
	return []testCase{
		{"Optional/ClaimRunLoadedReadsWhatTheClaimTook", optionalClaimRunLoadedReadsWhatTheClaimTook},
		{"Optional/SuspendRunCountsPendingParks", optionalSuspendRunCountsPendingParks},
		{"Optional/ReadStreamEndReadsTheLastRow", optionalReadStreamEndReadsTheLastRow},
		{"Optional/RenewLeasesRenewsWhatStillHolds", optionalRenewLeasesRenewsWhatStillHolds},
		{"Optional/GetRunParksReadsTheRunAndItsParks", optionalGetRunParksReadsTheRunAndItsParks},
	}
}

// optionalClaimRunLoadedReadsWhatTheClaimTook is the case
// "Optional/ClaimRunLoadedReadsWhatTheClaimTook": a claim returns the run as ClaimRun
// does, with the steps and parks LoadSteps and ListParks read; a claim refused stores
// nothing.
func optionalClaimRunLoadedReadsWhatTheClaimTook(t *testing.T, e *env) {
	l, ok := e.d.(journal.RunClaimLoader)
	if !ok {
		t.Skipf("%T is no journal.RunClaimLoader: the journal claims with ClaimRun, LoadSteps and ListParks", e.d)
	}
	j := e.journal("a")
	r := e.begin(j)
	for _, name := range []string{"one", "two"} {
		_, err := r.Step(e.ctx, name, func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"` + name + `"`), nil })
		must(t, "Step", err)
	}
	for _, k := range []string{"k1", "k2"} {
		_, err := r.Park(e.ctx, k, time.Time{}, json.RawMessage(`{"tool":"send"}`))
		must(t, "Park", err)
	}
	must(t, "Suspend", r.Suspend(e.ctx))
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}))

	// Held by another owner: busy, and the lease stays as it was.
	now := e.clock.Now()
	held, err := e.d.ClaimRun(e.ctx, r.ID, "b", now, now.Add(leaseTTL))
	must(t, "ClaimRun", err)
	var busy *journal.LeaseBusyError
	if _, err := l.ClaimRunLoaded(e.ctx, r.ID, "c", now, now.Add(leaseTTL)); !errors.As(err, &busy) || busy.Owner != "b" {
		t.Fatalf("ClaimRunLoaded of a held run err = %v, want LeaseBusyError of b", err)
	}
	if rec := e.run(r.ID); rec.LeaseOwner != "b" || rec.Epoch != held.Epoch {
		t.Fatalf("after a refused claim: owner %q epoch %d, want b %d", rec.LeaseOwner, rec.Epoch, held.Epoch)
	}
	must(t, "ReleaseRun", e.d.ReleaseRun(e.ctx, journal.Fence{RunID: r.ID, Owner: "b", Epoch: held.Epoch}))

	c, err := l.ClaimRunLoaded(e.ctx, r.ID, "c", now, now.Add(leaseTTL))
	must(t, "ClaimRunLoaded", err)
	if c.Run.LeaseOwner != "c" || c.Run.Epoch != held.Epoch+1 || c.Run.Status != journal.StatusRunning || !reflect.DeepEqual(c.Run, e.run(r.ID)) {
		t.Fatalf("claimed run %+v, stored %+v", c.Run, e.run(r.ID))
	}
	steps, err := e.d.LoadSteps(e.ctx, r.ID)
	must(t, "LoadSteps", err)
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if len(c.Steps) != 2 || !reflect.DeepEqual(c.Steps, steps) {
		t.Fatalf("claimed steps %+v, LoadSteps %+v", c.Steps, steps)
	}
	if len(c.Parks) != 2 || !reflect.DeepEqual(c.Parks, parks) || c.Parks[0].Decision == nil || c.Parks[1].Decision != nil {
		t.Fatalf("claimed parks %+v, ListParks %+v", c.Parks, parks)
	}

	if _, err := l.ClaimRunLoaded(e.ctx, "nope", "c", now, now.Add(leaseTTL)); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ClaimRunLoaded of an unknown run err = %v", err)
	}
	must(t, "UpdateRun", e.d.UpdateRun(e.ctx, journal.Fence{RunID: r.ID, Owner: "c", Epoch: c.Run.Epoch},
		journal.RunUpdate{Status: journal.StatusCompleted}, now))
	if _, err := l.ClaimRunLoaded(e.ctx, r.ID, "c", now, now.Add(leaseTTL)); !errors.Is(err, journal.ErrRunFinished) {
		t.Fatalf("ClaimRunLoaded of a completed run err = %v", err)
	}
}

// optionalSuspendRunCountsPendingParks is the case
// "Optional/SuspendRunCountsPendingParks": the run is parked and its lease released as
// UpdateRun does, runnable only once no park is pending; a stale fence stores nothing.
func optionalSuspendRunCountsPendingParks(t *testing.T, e *env) {
	s, ok := e.d.(journal.RunSuspender)
	if !ok {
		t.Skipf("%T is no journal.RunSuspender: the journal suspends with UpdateRun and ListParks", e.d)
	}
	j := e.journal("a")
	r := e.begin(j)
	for _, k := range []string{"k1", "k2"} {
		_, err := r.Park(e.ctx, k, time.Time{}, nil)
		must(t, "Park", err)
	}
	f := r.Fence()
	// A decision stored while the run runs does not make it runnable; the suspend must
	// see it.
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}))
	now := e.clock.Now()
	if _, err := s.SuspendRun(e.ctx, journal.Fence{RunID: r.ID, Owner: "a", Epoch: f.Epoch + 1}, now); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("SuspendRun with a stale fence err = %v", err)
	}
	runnable, err := s.SuspendRun(e.ctx, f, now)
	must(t, "SuspendRun", err)
	if rec := e.run(r.ID); runnable || rec.Status != journal.StatusParked || rec.LeaseOwner != "" {
		t.Fatalf("one park pending: runnable %v, stored %+v", runnable, rec)
	}

	// Claimed again with the other park decided too: runnable.
	c, err := e.d.ClaimRun(e.ctx, r.ID, "a", now, now.Add(leaseTTL))
	must(t, "ClaimRun", err)
	f2 := journal.Fence{RunID: r.ID, Owner: "a", Epoch: c.Epoch}
	if _, err := e.d.Decide(e.ctx, r.ID, "k2", "a", journal.Decision{Kind: journal.DecisionDeny, DecidedAt: now}, now); err != nil {
		t.Fatalf("Decide k2: %v", err)
	}
	runnable, err = s.SuspendRun(e.ctx, f2, now)
	must(t, "SuspendRun", err)
	if !runnable || e.run(r.ID).Status != journal.StatusParked {
		t.Fatalf("every park decided: runnable %v, stored %+v", runnable, e.run(r.ID))
	}
}

// optionalReadStreamEndReadsTheLastRow is the case "Optional/ReadStreamEndReadsTheLastRow":
// the stream as GetStream reads it and its last stored row, none for an empty stream.
func optionalReadStreamEndReadsTheLastRow(t *testing.T, e *env) {
	r, ok := e.d.(journal.StreamEndReader)
	if !ok {
		t.Skipf("%T is no journal.StreamEndReader: the journal reads GetStream, LastSeq and ReadEvents", e.d)
	}
	j := e.journal("a")
	if _, _, err := r.ReadStreamEnd(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ReadStreamEnd of an unknown stream err = %v", err)
	}
	e.stream(j, "s1", "")
	st, got, err := r.ReadStreamEnd(e.ctx, "s1")
	must(t, "ReadStreamEnd", err)
	want, _ := e.d.GetStream(e.ctx, "s1")
	if len(got) != 0 || !reflect.DeepEqual(st, want) {
		t.Fatalf("empty stream: %+v, rows %+v; GetStream %+v", st, got, want)
	}
	must(t, "Append", j.AppendEvents(e.ctx, "s1", nil, rows(1, 2, 3)...))
	e.clock.Advance(time.Minute)
	must(t, "FinishStream", j.FinishStream(e.ctx, "s1"))
	st, got, err = r.ReadStreamEnd(e.ctx, "s1")
	must(t, "ReadStreamEnd", err)
	want, _ = e.d.GetStream(e.ctx, "s1")
	if len(got) != 1 || got[0].Seq != 3 || !jsonEq(got[0].Event, rows(3)[0].Event) || !reflect.DeepEqual(st, want) || st.FinishedAt == nil {
		t.Fatalf("stream of three rows: %+v, rows %+v; GetStream %+v", st, got, want)
	}
}

// optionalRenewLeasesRenewsWhatStillHolds is the case
// "Optional/RenewLeasesRenewsWhatStillHolds": of more fences than one SQL statement of a
// driver takes, each that still holds has its lease extended, as RenewLease would, and
// each that does not (a released run, a finished one, an old epoch, another owner) is
// returned and its run left as it was.
func optionalRenewLeasesRenewsWhatStillHolds(t *testing.T, e *env) {
	l, ok := e.d.(journal.LeaseRenewer)
	if !ok {
		t.Skipf("%T is no journal.LeaseRenewer: the journal renews with RenewLease, a run at a time", e.d)
	}
	if lost, err := l.RenewLeases(e.ctx, nil, e.clock.Now()); err != nil || len(lost) != 0 {
		t.Fatalf("RenewLeases of no fence = %v, %v", lost, err)
	}
	const n = 1200
	now := e.clock.Now()
	fences := make([]journal.Fence, n)
	for i := range fences {
		id := fmt.Sprintf("renew-%04d", i)
		must(t, "InsertRun", e.d.InsertRun(e.ctx, journal.RunRecord{ID: id, Flow: "f", Tenant: "t1", Status: journal.StatusRunning,
			LeaseOwner: "a", LeaseExpires: now.Add(leaseTTL), Epoch: 1, CreatedAt: now, UpdatedAt: now}))
		fences[i] = journal.Fence{RunID: id, Owner: "a", Epoch: 1}
	}
	must(t, "ReleaseRun", e.d.ReleaseRun(e.ctx, fences[3]))
	must(t, "UpdateRun", e.d.UpdateRun(e.ctx, fences[600], journal.RunUpdate{Status: journal.StatusCompleted}, now))
	stale := []journal.Fence{fences[3], fences[600], {RunID: fences[7].RunID, Owner: "a", Epoch: 2}, {RunID: fences[n-1].RunID, Owner: "b", Epoch: 1}}
	fences[7], fences[n-1] = stale[2], stale[3]
	before := map[string]journal.RunRecord{}
	for _, f := range stale {
		before[f.RunID] = e.run(f.RunID)
	}

	expires := now.Add(time.Hour)
	lost, err := l.RenewLeases(e.ctx, fences, expires)
	must(t, "RenewLeases", err)
	byID := func(a, b journal.Fence) int { return strings.Compare(a.RunID, b.RunID) }
	slices.SortFunc(lost, byID)
	slices.SortFunc(stale, byID)
	if !reflect.DeepEqual(lost, stale) {
		t.Fatalf("RenewLeases lost %+v, want %+v", lost, stale)
	}
	for i, f := range fences {
		rec := e.run(f.RunID)
		if want, ok := before[f.RunID]; ok {
			if !reflect.DeepEqual(rec, want) {
				t.Fatalf("run %s of a stale fence: %+v, was %+v", f.RunID, rec, want)
			}
			continue
		}
		if !rec.LeaseExpires.Equal(expires) || rec.LeaseOwner != "a" || rec.Epoch != 1 || rec.Status != journal.StatusRunning {
			t.Fatalf("run %d of %d after RenewLeases: %+v, want its lease to expire at %v", i, n, rec, expires)
		}
	}
}

// optionalGetRunParksReadsTheRunAndItsParks is the case
// "Optional/GetRunParksReadsTheRunAndItsParks": the run as GetRun reads it and its parks
// as ListParks does (none, undecided, decided, a signal's wait), ErrNotFound for a
// missing run.
func optionalGetRunParksReadsTheRunAndItsParks(t *testing.T, e *env) {
	l, ok := e.d.(journal.RunParksReader)
	if !ok {
		t.Skipf("%T is no journal.RunParksReader: the journal reads GetRun and ListParks", e.d)
	}
	if _, _, err := l.GetRunParks(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("GetRunParks of an unknown run err = %v", err)
	}
	j := e.journal("a")
	r := e.begin(j)
	same := func(when string) {
		t.Helper()
		rec, parks, err := l.GetRunParks(e.ctx, r.ID)
		must(t, "GetRunParks", err)
		wantParks, err := e.d.ListParks(e.ctx, r.ID)
		must(t, "ListParks", err)
		if !reflect.DeepEqual(rec, e.run(r.ID)) || !reflect.DeepEqual(parks, wantParks) {
			t.Fatalf("%s: GetRunParks %+v, %+v; GetRun %+v, ListParks %+v", when, rec, parks, e.run(r.ID), wantParks)
		}
	}
	same("no park")
	_, err := r.Park(e.ctx, "k2", e.clock.Now().Add(time.Hour), json.RawMessage(`{"tool":"send","n":2}`))
	must(t, "Park", err)
	_, err = r.Park(e.ctx, "k1", time.Time{}, nil)
	must(t, "Park", err)
	_, err = r.WaitSignal(e.ctx, "ready", "k3", time.Time{})
	must(t, "WaitSignal", err)
	must(t, "Suspend", r.Suspend(e.ctx))
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k2", journal.Decision{Kind: journal.DecisionDeny, Payload: json.RawMessage(`{"why":"no"}`)}))
	same("three parks, one decided")
}
