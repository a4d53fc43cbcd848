package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// errTransient is what a faultDriver injects: the error of a dropped connection, which
// is none of the journal's sentinels, so the journal must treat it as transient.
var errTransient = errors.New("connection refused")

// faultMode says where an injected failure happens.
type faultMode int

const (
	// failBefore fails the call without reaching the storage: nothing is stored.
	failBefore faultMode = iota + 1
	// failAfter lets the call reach the storage and then loses its outcome: what it
	// stores stays stored, and the caller sees errTransient (a lost acknowledgement).
	failAfter
)

func (m faultMode) String() string {
	if m == failBefore {
		return "before"
	}
	return "after"
}

// faultDriver injects transient errors into chosen calls of the driver it wraps.
type faultDriver struct {
	journal.Driver
	mu     sync.Mutex
	faults map[string]*fault
	calls  map[string]int
	during map[string]func() // runs once, at the next failure of the method
}

type fault struct {
	mode faultMode
	left int // failures still to inject; negative: every call until cleared
}

func newFaultDriver(d journal.Driver) *faultDriver {
	return &faultDriver{Driver: d, faults: map[string]*fault{}, calls: map[string]int{}, during: map[string]func(){}}
}

// inject makes the next n calls of method fail in mode; n < 0 fails every call until
// [faultDriver.clear].
func (d *faultDriver) inject(method string, mode faultMode, n int) {
	d.mu.Lock()
	d.faults[method] = &fault{mode: mode, left: n}
	d.mu.Unlock()
}

// meanwhile makes fn run at the next failure of method, after what the call stored: what
// happens elsewhere while the database is away. fn runs on the caller's goroutine or a
// driver worker's: it must not call t.Fatal.
func (d *faultDriver) meanwhile(method string, fn func()) {
	d.mu.Lock()
	d.during[method] = fn
	d.mu.Unlock()
}

// clear stops injecting failures into method.
func (d *faultDriver) clear(method string) {
	d.mu.Lock()
	delete(d.faults, method)
	d.mu.Unlock()
}

// count returns how many calls of method were made.
func (d *faultDriver) count(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[method]
}

// pending reports whether failures planned for method are still to come.
func (d *faultDriver) pending(method string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.faults[method]
	return f != nil && f.left != 0
}

// call runs do as one call of method, failed as planned.
func (d *faultDriver) call(method string, do func() error) error {
	d.mu.Lock()
	d.calls[method]++
	var mode faultMode
	var during func()
	if f := d.faults[method]; f != nil && f.left != 0 {
		mode, during = f.mode, d.during[method]
		delete(d.during, method)
		if f.left > 0 {
			f.left--
		}
	}
	d.mu.Unlock()
	if mode == failBefore {
		if during != nil {
			during()
		}
		return errTransient
	}
	err := do()
	if mode == failAfter {
		if during != nil {
			during()
		}
		return errTransient
	}
	return err
}

func (d *faultDriver) InsertRun(ctx context.Context, rec journal.RunRecord) error {
	return d.call("InsertRun", func() error { return d.Driver.InsertRun(ctx, rec) })
}

func (d *faultDriver) RenewLease(ctx context.Context, f journal.Fence, expires time.Time) error {
	return d.call("RenewLease", func() error { return d.Driver.RenewLease(ctx, f, expires) })
}

// faultRenewer is a faultDriver of a [journal.LeaseRenewer], which renews through it:
// a fault of "RenewLease" fails the whole renewal pass, as a failed statement would.
type faultRenewer struct{ *faultDriver }

func (d faultRenewer) RenewLeases(ctx context.Context, fences []journal.Fence, expires time.Time) (lost []journal.Fence, err error) {
	err = d.call("RenewLease", func() (err error) {
		lost, err = d.Driver.(journal.LeaseRenewer).RenewLeases(ctx, fences, expires)
		return err
	})
	return lost, err
}

// driver is d as the journal is to use it: with the wrapped driver's batch renewal when
// it has one.
func (d *faultDriver) driver() journal.Driver {
	if _, ok := d.Driver.(journal.LeaseRenewer); ok {
		return faultRenewer{d}
	}
	return d
}

func (d *faultDriver) ReleaseRun(ctx context.Context, f journal.Fence) error {
	return d.call("ReleaseRun", func() error { return d.Driver.ReleaseRun(ctx, f) })
}

func (d *faultDriver) UpdateRun(ctx context.Context, f journal.Fence, u journal.RunUpdate, now time.Time) error {
	return d.call("UpdateRun", func() error { return d.Driver.UpdateRun(ctx, f, u, now) })
}

func (d *faultDriver) InsertStep(ctx context.Context, f journal.Fence, s journal.StepRecord, w journal.StepWrites) error {
	return d.call("InsertStep", func() error { return d.Driver.InsertStep(ctx, f, s, w) })
}

func (d *faultDriver) InsertPark(ctx context.Context, f journal.Fence, p journal.ParkRecord) (journal.ParkRecord, error) {
	var out journal.ParkRecord
	err := d.call("InsertPark", func() (err error) { out, err = d.Driver.InsertPark(ctx, f, p); return err })
	return out, err
}

func (d *faultDriver) AppendEvents(ctx context.Context, f *journal.Fence, a journal.Append) error {
	return d.call("AppendEvents", func() error { return d.Driver.AppendEvents(ctx, f, a) })
}

// AppendBatch sends every append through AppendEvents, where faults are injected.
func (d *faultDriver) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	return journal.AppendEach(ctx, d, batch)
}

func (d *faultDriver) FinishStream(ctx context.Context, id string, f *journal.Fence, rows []journal.EventRow, now time.Time) (int64, error) {
	var last int64
	err := d.call("FinishStream", func() (err error) { last, err = d.Driver.FinishStream(ctx, id, f, rows, now); return err })
	return last, err
}

func (d *faultDriver) CreateStream(ctx context.Context, st journal.Stream) error {
	return d.call("CreateStream", func() error { return d.Driver.CreateStream(ctx, st) })
}

func (d *faultDriver) GetStream(ctx context.Context, id string) (st journal.Stream, err error) {
	err = d.call("GetStream", func() error { st, err = d.Driver.GetStream(ctx, id); return err })
	return st, err
}

func (d *faultDriver) LastSeq(ctx context.Context, id string) (last int64, err error) {
	err = d.call("LastSeq", func() error { last, err = d.Driver.LastSeq(ctx, id); return err })
	return last, err
}

func (d *faultDriver) ReadEvents(ctx context.Context, id string, after int64, limit int) (rows []journal.EventRow, err error) {
	err = d.call("ReadEvents", func() error { rows, err = d.Driver.ReadEvents(ctx, id, after, limit); return err })
	return rows, err
}

func (d *faultDriver) RecoverableRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	var ids []string
	err := d.call("RecoverableRuns", func() (err error) { ids, err = d.Driver.RecoverableRuns(ctx, now, limit); return err })
	return ids, err
}

func (d *faultDriver) ExpiredParks(ctx context.Context, now time.Time, limit int) ([]journal.ParkRecord, error) {
	var out []journal.ParkRecord
	err := d.call("ExpiredParks", func() (err error) { out, err = d.Driver.ExpiredParks(ctx, now, limit); return err })
	return out, err
}

// faulty opens a journal named owner over a fault-injecting wrapper of the case's driver.
func (e *env) faulty(owner string, mods ...func(*journal.Options)) (*journal.Journal, *faultDriver) {
	e.t.Helper()
	fd := newFaultDriver(e.d)
	return e.journalOn(fd.driver(), owner, mods...), fd
}

// within runs fn and fails the case if it does not return within a generous deadline
// (no timing assertion: a retry loop that never gives up becomes a failure, not a hang).
// fn runs on another goroutine: it must not call t.Fatal.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

// storedEvents reads every stored row of a stream from the driver.
func (e *env) storedEvents(id string) []journal.EventRow {
	e.t.Helper()
	rs, err := e.d.ReadEvents(e.ctx, id, 0, 100000)
	must(e.t, "ReadEvents", err)
	return rs
}

var modes = []faultMode{failBefore, failAfter}

func faultCases() []testCase {
	return []testCase{
		{"Faults/StepResultSurvivesTransientWriteFailures", faultsStepResultSurvivesTransientWriteFailures},
		{"Faults/RunEndsAndParksSurviveTransientWriteFailures", faultsRunEndsAndParksSurviveTransientWriteFailures},
		{"Faults/LogCommitsSurviveTransientWriteFailures", faultsLogCommitsSurviveTransientWriteFailures},
		{"Faults/BeginSurvivesTransientFailures", faultsBeginSurvivesTransientFailures},
		{"Faults/OpeningALogSurvivesTransientFailures", faultsOpeningALogSurvivesTransientFailures},
		{"Faults/WritesGiveUpAfterWriteRetry", faultsWritesGiveUpAfterWriteRetry},
		{"Faults/RecoveryClaimsNothingForALeaseTTLAfterAFault", faultsRecoveryClaimsNothingForALeaseTTLAfterAFault},
		{"Faults/AFailedWriteOrRenewalStartsTheGraceToo", faultsAFailedWriteOrRenewalStartsTheGraceToo},
		{"Faults/RetriesStopWhenTheLeaseIsTakenMeanwhile", faultsRetriesStopWhenTheLeaseIsTakenMeanwhile},
		{"Faults/AnUnrecordedStepLeavesNoHoleInThePositions", faultsAnUnrecordedStepLeavesNoHoleInThePositions},
		{"Claims/ConcurrentClaimsOnOneInstanceYieldOne", claimsConcurrentClaimsOnOneInstanceYieldOne},
		{"Claims/RunResumedHereIsBusyForAnotherClaimHere", claimsRunResumedHereIsBusyForAnotherClaimHere},
	}
}

// faultsStepResultSurvivesTransientWriteFailures is the case "Faults/StepResultSurvivesTransientWriteFailures": step result survives transient write failures.
func faultsStepResultSurvivesTransientWriteFailures(t *testing.T, e *env) {
	for _, mode := range modes {
		j, fd := e.faulty("a-" + mode.String())
		r := e.begin(j)
		w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s-" + mode.String(), RunID: r.ID}, r, quiet)
		must(t, "CreateLog", err)
		write(t, e, w, `{"type":"RUN_STARTED"}`)
		write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"hi"}`)
		var mu sync.Mutex
		runs := 0
		fd.inject("InsertStep", mode, 3)
		var out json.RawMessage
		within(t, "Step", func() { out, err = r.Step(e.ctx, "tool", stepFn(&runs, &mu, `{"paid":true}`)) })
		must(t, mode.String()+": Step after transient failures", err)
		if runs != 1 || fd.count("InsertStep") != 4 || !jsonEq(out, []byte(`{"paid":true}`)) {
			t.Fatalf("%s: fn ran %d times over %d writes and returned %s, want once over 4", mode, runs, fd.count("InsertStep"), out)
		}
		e.onlyStep(t, r.ID, `{"paid":true}`)
		// The rows queued before the step are stored once, with it.
		if got := e.storedEvents(w.StreamID()); len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
			t.Fatalf("%s: rows after the step = %+v, want 1 and 2 once", mode, got)
		}
		if seq := write(t, e, w, `{"type":"STEP_STARTED"}`); seq != 3 {
			t.Fatalf("%s: the writer continues at %d, want 3", mode, seq)
		}
		must(t, "Close", w.Close(e.ctx))
		checkGapFree(t, seqsOf(e.storedEvents(w.StreamID())))
		must(t, "Release", r.Release(e.ctx))
		r2, err := e.journal("b-"+mode.String()).Claim(e.ctx, r.ID)
		must(t, "Claim", err)
		got, err := r2.Step(e.ctx, "tool", stepFn(&runs, &mu, `{"paid":"twice"}`))
		must(t, "replayed Step", err)
		if runs != 1 || !jsonEq(got, []byte(`{"paid":true}`)) {
			t.Fatalf("%s: replay ran fn (%d runs) or returned %s", mode, runs, got)
		}
	}
}

// faultsRunEndsAndParksSurviveTransientWriteFailures is the case "Faults/RunEndsAndParksSurviveTransientWriteFailures": run ends and parks survive transient write failures.
func faultsRunEndsAndParksSurviveTransientWriteFailures(t *testing.T, e *env) {
	for _, mode := range modes {
		j, fd := e.faulty("a-" + mode.String())
		ends := []struct {
			name   string
			status journal.Status
			end    func(r *journal.Run) error
		}{
			{"Complete", journal.StatusCompleted, func(r *journal.Run) error { return r.Complete(e.ctx, json.RawMessage(`{"ok":1}`)) }},
			{"Fail", journal.StatusFailed, func(r *journal.Run) error { return r.Fail(e.ctx, "boom") }},
			{"Suspend", journal.StatusParked, func(r *journal.Run) error { return r.Suspend(e.ctx) }},
		}
		for _, c := range ends {
			r := e.begin(j)
			if c.status == journal.StatusParked {
				fd.inject("InsertPark", mode, 2)
				var err error
				within(t, "Park", func() { _, err = r.Park(e.ctx, "k", time.Time{}, nil) })
				must(t, mode.String()+" Park after transient failures", err)
			}
			fd.inject("UpdateRun", mode, 2)
			var err error
			within(t, c.name, func() { err = c.end(r) })
			must(t, mode.String()+" "+c.name+" after transient failures", err)
			if fd.pending("UpdateRun") || fd.pending("InsertPark") {
				t.Fatalf("%s %s: a planned failure was never met", mode, c.name)
			}
			rec := e.run(r.ID)
			if rec.Status != c.status || rec.LeaseOwner != "" || r.Status() != c.status {
				t.Fatalf("%s %s: stored %s owner %q, run says %s", mode, c.name, rec.Status, rec.LeaseOwner, r.Status())
			}
			if c.status == journal.StatusCompleted && !jsonEq(rec.Output, []byte(`{"ok":1}`)) || c.status == journal.StatusFailed && rec.Error != "boom" {
				t.Fatalf("%s %s: stored %+v", mode, c.name, rec)
			}
			if c.status == journal.StatusParked {
				parks, err := e.d.ListParks(e.ctx, r.ID)
				must(t, "ListParks", err)
				if len(parks) != 1 || parks[0].Key != "k" || parks[0].Decision != nil {
					t.Fatalf("%s: parks = %+v", mode, parks)
				}
			}
		}
		// A release whose acknowledgement is lost still releases, without an error.
		r := e.begin(j)
		fd.inject("ReleaseRun", mode, 2)
		var err error
		within(t, "Release", func() { err = r.Release(e.ctx) })
		must(t, mode.String()+" Release after transient failures", err)
		if rec := e.run(r.ID); rec.LeaseOwner != "" {
			t.Fatalf("%s: released run still held by %q", mode, rec.LeaseOwner)
		}
	}
}

// faultsLogCommitsSurviveTransientWriteFailures is the case "Faults/LogCommitsSurviveTransientWriteFailures": log commits survive transient write failures.
func faultsLogCommitsSurviveTransientWriteFailures(t *testing.T, e *env) {
	for _, mode := range modes {
		j, fd := e.faulty("a-" + mode.String())
		r := e.begin(j)
		id := "s-" + mode.String()
		// ReserveAhead 1: a structural write past the reservation commits before it
		// returns, so most writes below commit under the planned failures.
		w, err := j.CreateLog(e.ctx, journal.Stream{ID: id, RunID: r.ID}, r, journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: 1})
		must(t, "CreateLog", err)
		var evs []string
		for i := range 6 {
			ev := fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"%s-%d"}`, mode, i)
			fd.inject("AppendEvents", mode, 2)
			var seq int64
			within(t, "Write", func() { seq, err = w.Write(e.ctx, json.RawMessage(ev)) })
			if err != nil || seq != int64(i+1) {
				t.Fatalf("%s: write %d: seq %d, err %v; want seq %d", mode, i, seq, err, i+1)
			}
			evs = append(evs, ev)
		}
		fd.inject("AppendEvents", mode, 2)
		within(t, "Flush", func() { err = w.Flush(e.ctx) })
		must(t, mode.String()+" Flush after transient failures", err)
		delta := `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"last"}`
		write(t, e, w, delta)
		evs = append(evs, delta)
		fd.inject("FinishStream", mode, 2)
		within(t, "Finish", func() { err = w.Finish(e.ctx) })
		must(t, mode.String()+" Finish after transient failures", err)
		if fd.pending("FinishStream") || fd.count("AppendEvents") < 8 {
			t.Fatalf("%s: the planned failures were not met (%d appends)", mode, fd.count("AppendEvents"))
		}
		st, got, err := e.d.ReadStream(e.ctx, id, 0, 100)
		must(t, "ReadStream", err)
		if st.FinishedAt == nil || len(got) != len(evs) {
			t.Fatalf("%s: stream %+v with %d rows, want finished with %d", mode, st, len(got), len(evs))
		}
		checkGapFree(t, seqsOf(got))
		for i, row := range got {
			if !jsonEq(row.Event, []byte(evs[i])) {
				t.Fatalf("%s: row %d = %s, want %s", mode, row.Seq, row.Event, evs[i])
			}
		}
	}
}

// faultsBeginSurvivesTransientFailures is the case "Faults/BeginSurvivesTransientFailures": begin survives transient failures.
func faultsBeginSurvivesTransientFailures(t *testing.T, e *env) {
	for _, mode := range modes {
		j, fd := e.faulty("a-" + mode.String())
		fd.inject("InsertRun", mode, 2)
		var r *journal.Run
		var err error
		within(t, "Begin", func() { r, err = j.Begin(e.ctx, journal.NewRun{Flow: "f"}) })
		must(t, mode.String()+" Begin after transient failures", err)
		rec := e.run(r.ID)
		if rec.Epoch != 1 || rec.LeaseOwner != j.Owner() || rec.Status != journal.StatusRunning || fd.count("InsertRun") != 3 {
			t.Fatalf("%s: stored %+v after %d inserts", mode, rec, fd.count("InsertRun"))
		}
		_, err = r.Step(e.ctx, "s", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
		must(t, "Step of the begun run", err)
		must(t, "Release", r.Release(e.ctx))
	}
	// One run per Begin: the retried inserts made no second run.
	ids, err := e.d.RecoverableRuns(e.ctx, e.clock.Now(), 100)
	must(t, "RecoverableRuns", err)
	if len(ids) != len(modes) {
		t.Fatalf("runs %v, want one per Begin", ids)
	}
}

// faultsOpeningALogSurvivesTransientFailures is the case "Faults/OpeningALogSurvivesTransientFailures": opening a log survives transient failures.
func faultsOpeningALogSurvivesTransientFailures(t *testing.T, e *env) {
	// A run that resumes while the database is away waits for it when it opens its
	// log, as its writes do, instead of failing on a read.
	j, fd := e.faulty("a")
	r := e.begin(j)
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"STEP_STARTED","stepName":"x"}`)
	must(t, "Close", w.Close(e.ctx))
	for _, m := range []string{"GetStream", "LastSeq", "ReadEvents"} {
		fd.inject(m, failBefore, 2)
	}
	var w2 *journal.LogWriter
	within(t, "NewLogWriter", func() { w2, err = j.NewLogWriter(e.ctx, "s1", r, quiet) })
	must(t, "NewLogWriter after transient read failures", err)
	if row, ok := w2.LastRow(); !ok || row.Seq != 2 || !jsonEq(row.Event, []byte(`{"type":"STEP_STARTED","stepName":"x"}`)) {
		t.Fatalf("LastRow() = %+v, %v; want row 2", row, ok)
	}
	must(t, "Close", w2.Close(e.ctx))
	// A create whose acknowledgement was lost finds its stream and continues it.
	fd.inject("CreateStream", failAfter, 1)
	within(t, "CreateLog", func() { w2, err = j.CreateLog(e.ctx, journal.Stream{ID: "s2", RunID: r.ID}, r, quiet) })
	must(t, "CreateLog after a lost acknowledgement", err)
	// It cannot tell the reservation stored with the stream from another writer's,
	// so it may continue past it: ids jump, none is reused.
	seq := write(t, e, w2, `{"type":"RUN_STARTED"}`)
	must(t, "Close", w2.Close(e.ctx))
	if got := e.storedEvents("s2"); len(got) != 1 || got[0].Seq != seq || seq != 1 && seq != 65 { // 65: past the default reservation of 64
		t.Fatalf("the created log holds %+v after writing seq %d, want that one row", got, seq)
	}
}

// faultsWritesGiveUpAfterWriteRetry is the case "Faults/WritesGiveUpAfterWriteRetry": writes give up after write retry.
func faultsWritesGiveUpAfterWriteRetry(t *testing.T, e *env) {
	j, fd := e.faulty("a", func(o *journal.Options) { o.WriteRetry = 200 * time.Millisecond })
	r := e.begin(j)
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	fd.inject("AppendEvents", failBefore, -1)
	within(t, "Flush", func() { err = w.Flush(e.ctx) })
	if !errors.Is(err, errTransient) {
		t.Fatalf("Flush while the database stays away: err = %v, want the driver's error", err)
	}
	if n := fd.count("AppendEvents"); n < 2 {
		t.Fatalf("the commit was tried %d times, want it retried", n)
	}
	if _, err := w.Write(e.ctx, json.RawMessage(`{"type":"STEP_STARTED"}`)); !errors.Is(err, errTransient) {
		t.Fatalf("the failed commit must stick: %v", err)
	}
	fd.clear("AppendEvents")
	fd.inject("InsertStep", failBefore, -1)
	runs := 0
	within(t, "Step", func() {
		_, err = r.Step(e.ctx, "s", func(context.Context) (json.RawMessage, error) { runs++; return json.RawMessage(`1`), nil })
	})
	if !errors.Is(err, errTransient) || runs != 1 {
		t.Fatalf("Step while the database stays away: err = %v after %d runs of fn", err, runs)
	}
	if steps, _ := e.d.LoadSteps(e.ctx, r.ID); len(steps) != 0 {
		t.Fatalf("steps stored: %+v", steps)
	}
	fd.clear("InsertStep")
	fd.inject("UpdateRun", failBefore, -1)
	within(t, "Complete", func() { err = r.Complete(e.ctx, nil) })
	if !errors.Is(err, errTransient) {
		t.Fatalf("Complete while the database stays away: err = %v", err)
	}
	if rec := e.run(r.ID); rec.Status != journal.StatusRunning || rec.LeaseOwner != "a" {
		t.Fatalf("after a failed Complete: %s owner %q", rec.Status, rec.LeaseOwner)
	}
	fd.clear("UpdateRun")
}

// faultsRecoveryClaimsNothingForALeaseTTLAfterAFault is the case "Faults/RecoveryClaimsNothingForALeaseTTLAfterAFault": recovery claims nothing for a lease TTL after a fault.
func faultsRecoveryClaimsNothingForALeaseTTLAfterAFault(t *testing.T, e *env) {
	a := e.journal("a")
	dead := e.begin(a) // a dies holding it
	// Its park times out while b waits out the fault.
	parked := e.parked(a, e.clock.Now().Add(leaseTTL+6*time.Second), "k")
	var rs resumes
	b, fd := e.faulty("b", func(o *journal.Options) { o.Resumer = rs.resumer("k") })
	e.clock.Advance(leaseTTL + time.Second)
	fd.inject("RecoverableRuns", failBefore, 1)
	if _, err := b.RecoverOnce(e.ctx); !errors.Is(err, errTransient) {
		t.Fatalf("RecoverOnce with the database away: err = %v", err)
	}
	e.clock.Advance(leaseTTL - 2*time.Second)
	n, err := b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce in the grace", err)
	if n != 0 || rs.calls.Load() != 0 {
		t.Fatalf("RecoverOnce in the grace resumed %d runs", n)
	}
	parks, err := e.d.ListParks(e.ctx, parked.ID)
	must(t, "ListParks", err)
	if len(parks) != 1 || parks[0].Decision == nil || parks[0].Decision.Kind != journal.DecisionTimeout {
		t.Fatalf("parks = %+v, want the timeout stored during the grace", parks)
	}
	e.clock.Advance(time.Second)
	if n, err := b.RecoverOnce(e.ctx); err != nil || n != 0 {
		t.Fatalf("RecoverOnce a second before the grace ends = %d, %v", n, err)
	}
	e.clock.Advance(time.Second)
	n, err = b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce after the grace", err)
	if n != 2 {
		t.Fatalf("RecoverOnce after the grace resumed %d runs, want 2", n)
	}
	waitFor(t, "the dead owner's run to complete", e.completed(dead.ID))
	waitFor(t, "the timed-out run to complete", e.completed(parked.ID))
}

// faultsAFailedWriteOrRenewalStartsTheGraceToo is the case "Faults/AFailedWriteOrRenewalStartsTheGraceToo": a failed write or renewal starts the grace too.
func faultsAFailedWriteOrRenewalStartsTheGraceToo(t *testing.T, e *env) {
	dead := e.begin(e.journal("a"))
	var rs resumes
	c, fd := e.faulty("c", func(o *journal.Options) { o.Resumer = rs.resumer("k") })
	e.clock.Advance(leaseTTL + time.Second)
	r := e.begin(c)
	fd.inject("InsertStep", failBefore, 1)
	var err error
	within(t, "Step", func() {
		_, err = r.Step(e.ctx, "s", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	})
	must(t, "Step after a transient failure", err)
	if n, err := c.RecoverOnce(e.ctx); err != nil || n != 0 {
		t.Fatalf("RecoverOnce right after a retried write = %d, %v", n, err)
	}
	e.clock.Advance(leaseTTL - time.Second)
	fd.inject("RenewLease", failBefore, 1)
	c.RenewOnce(e.ctx)
	e.clock.Advance(leaseTTL - time.Second)
	if n, err := c.RecoverOnce(e.ctx); err != nil || n != 0 {
		t.Fatalf("RecoverOnce within a lease TTL of a failed renewal = %d, %v", n, err)
	}
	e.clock.Advance(time.Second)
	n, err := c.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	// r's lease expired too (its renewal failed), but c holds r: only the dead
	// owner's run is taken.
	if n != 1 {
		t.Fatalf("RecoverOnce after the grace resumed %d runs, want 1", n)
	}
	waitFor(t, "the dead owner's run to complete", e.completed(dead.ID))
	_, err = r.Step(e.ctx, "s2", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`2`), nil })
	must(t, "the holder keeps writing", err)
}

// faultsRetriesStopWhenTheLeaseIsTakenMeanwhile is the case "Faults/RetriesStopWhenTheLeaseIsTakenMeanwhile": retries stop when the lease is taken meanwhile.
func faultsRetriesStopWhenTheLeaseIsTakenMeanwhile(t *testing.T, e *env) {
	// While the database is away, the lease expires and another instance takes the
	// run over: the retried write is refused and not mistaken for its own.
	for _, mode := range modes {
		a, fd := e.faulty("a-" + mode.String())
		b := e.journal("b-" + mode.String())
		takeover := func(r *journal.Run) func() {
			return func() {
				e.clock.Advance(leaseTTL)
				if _, err := b.Claim(context.Background(), r.ID); err != nil {
					t.Errorf("%s: takeover: %v", mode, err)
				}
			}
		}
		// A step: refused when it was not stored; when it was, its result stays and
		// replays, and fn ran once either way.
		r := e.begin(a)
		runs := 0
		fd.inject("InsertStep", mode, 1)
		fd.meanwhile("InsertStep", takeover(r))
		var err error
		within(t, "Step", func() {
			_, err = r.Step(e.ctx, "pay", func(context.Context) (json.RawMessage, error) { runs++; return json.RawMessage(`"paid"`), nil })
		})
		if !errors.Is(err, journal.ErrLeaseLost) || runs != 1 {
			t.Fatalf("%s: Step while the run was taken over: err %v, fn ran %d times", mode, err, runs)
		}
		steps, err := e.d.LoadSteps(e.ctx, r.ID)
		must(t, "LoadSteps", err)
		if mode == failBefore && len(steps) != 0 || mode == failAfter && (len(steps) != 1 || !jsonEq(steps[0].Result, []byte(`"paid"`))) {
			t.Fatalf("%s: steps stored %+v", mode, steps)
		}
		// The end of a run: refused, and the new owner's lease stays.
		r = e.begin(a)
		fd.inject("UpdateRun", failBefore, 1)
		fd.meanwhile("UpdateRun", takeover(r))
		within(t, "Complete", func() { err = r.Complete(e.ctx, nil) })
		if !errors.Is(err, journal.ErrLeaseLost) {
			t.Fatalf("%s: Complete while the run was taken over: err %v", mode, err)
		}
		if rec := e.run(r.ID); rec.Status != journal.StatusRunning || rec.LeaseOwner != b.Owner() || rec.Epoch != 2 {
			t.Fatalf("%s: after a refused Complete: %+v", mode, rec)
		}
		// Log rows: refused, not stored.
		r = e.begin(a)
		w, err := a.CreateLog(e.ctx, journal.Stream{ID: "s-" + mode.String(), RunID: r.ID}, r, quiet)
		must(t, "CreateLog", err)
		write(t, e, w, `{"type":"RUN_STARTED"}`)
		fd.inject("AppendEvents", failBefore, 1)
		fd.meanwhile("AppendEvents", takeover(r))
		within(t, "Flush", func() { err = w.Flush(e.ctx) })
		if !errors.Is(err, journal.ErrLeaseLost) {
			t.Fatalf("%s: Flush while the run was taken over: err %v", mode, err)
		}
		if got := e.storedEvents(w.StreamID()); len(got) != 0 {
			t.Fatalf("%s: rows stored %+v", mode, got)
		}
	}
}

// faultsAnUnrecordedStepLeavesNoHoleInThePositions is the case "Faults/AnUnrecordedStepLeavesNoHoleInThePositions": an unrecorded step leaves no hole in the positions.
func faultsAnUnrecordedStepLeavesNoHoleInThePositions(t *testing.T, e *env) {
	// A step whose result was not recorded (its write failed for good, or its fn
	// was cancelled) ends what its execution records: steps after it would not line
	// up with a replay, which reads steps by position and runs the unrecorded one.
	j, fd := e.faulty("a", func(o *journal.Options) { o.WriteRetry = 100 * time.Millisecond })
	one := func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	for _, how := range []string{"write failed", "cancelled"} {
		r := e.begin(j)
		_, err := r.Step(e.ctx, "s0", one)
		must(t, "Step s0", err)
		if how == "write failed" {
			fd.inject("InsertStep", failBefore, -1)
			within(t, "Step", func() { _, err = r.Step(e.ctx, "s1", one) })
			fd.clear("InsertStep")
		} else {
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			_, err = r.Step(ctx, "s1", func(ctx context.Context) (json.RawMessage, error) { return nil, ctx.Err() })
		}
		if err == nil {
			t.Fatalf("%s: Step s1 succeeded", how)
		}
		// A handler that goes on records nothing more in this execution: s2 at
		// position 1 or 2 would not line up with a replay, which runs s1 again.
		if _, err = r.Step(e.ctx, "s2", one); err == nil {
			t.Fatalf("%s: a step after the unrecorded s1 was recorded", how)
		}
		steps, lerr := e.d.LoadSteps(e.ctx, r.ID)
		must(t, "LoadSteps", lerr)
		if len(steps) != 1 || steps[0].Name != "s0" {
			t.Fatalf("%s: after s1 was not recorded, stored steps %+v, want only s0", how, steps)
		}
		must(t, "Release", r.Release(e.ctx))
		r2, err := e.journal("b-"+how).Claim(e.ctx, r.ID)
		must(t, "Claim", err)
		for _, name := range []string{"s0", "s1", "s2"} {
			if _, err := r2.Step(e.ctx, name, one); err != nil {
				t.Fatalf("%s: replay of %s: %v", how, name, err)
			}
		}
	}
}

// claimsConcurrentClaimsOnOneInstanceYieldOne is the case "Claims/ConcurrentClaimsOnOneInstanceYieldOne": concurrent claims on one instance yield one.
func claimsConcurrentClaimsOnOneInstanceYieldOne(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	must(t, "Release", r.Release(e.ctx))
	const n = 16
	var ok, busy atomic.Int32
	runs := make(chan *journal.Run, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got, err := j.Claim(e.ctx, r.ID)
			var lb *journal.LeaseBusyError
			switch {
			case err == nil:
				ok.Add(1)
				runs <- got
			case errors.As(err, &lb) && lb.Owner == "a":
				busy.Add(1)
			default:
				t.Errorf("Claim: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || busy.Load() != n-1 {
		t.Fatalf("%d claims succeeded, %d busy; want 1 and %d", ok.Load(), busy.Load(), n-1)
	}
	if rec := e.run(r.ID); rec.Epoch != 2 || rec.LeaseOwner != "a" {
		t.Fatalf("after the claims: epoch %d owner %q, want 2 and a", rec.Epoch, rec.LeaseOwner)
	}
	won := <-runs
	if won.Epoch() != 2 {
		t.Fatalf("winner's epoch %d", won.Epoch())
	}
	// Once the winner lets go, the instance may claim again.
	must(t, "Release", won.Release(e.ctx))
	again, err := j.Claim(e.ctx, r.ID)
	must(t, "Claim after release", err)
	if again.Epoch() != 3 {
		t.Fatalf("epoch %d, want 3", again.Epoch())
	}
}

// claimsRunResumedHereIsBusyForAnotherClaimHere is the case "Claims/RunResumedHereIsBusyForAnotherClaimHere": run resumed here is busy for another claim here.
func claimsRunResumedHereIsBusyForAnotherClaimHere(t *testing.T, e *env) {
	release := make(chan struct{})
	resumed := make(chan *journal.Run, 1)
	j := e.journal("a", func(o *journal.Options) {
		o.Resumer = func(ctx context.Context, r *journal.Run) {
			resumed <- r
			<-release
			_ = r.Complete(ctx, nil)
		}
	})
	r := e.parked(j, time.Time{}, "k")
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k", journal.Decision{Kind: journal.DecisionApprove}))
	var held *journal.Run
	select {
	case held = <-resumed:
	case <-time.After(20 * time.Second):
		t.Fatal("the decision did not resume the run")
	}
	var lb *journal.LeaseBusyError
	if _, err := j.Claim(e.ctx, r.ID); !errors.As(err, &lb) || lb.Owner != "a" {
		t.Fatalf("Claim while the resumer holds the run: err = %v, want LeaseBusyError", err)
	}
	if n, err := j.RecoverOnce(e.ctx); err != nil || n != 0 {
		t.Fatalf("RecoverOnce while the resumer holds the run = %d, %v", n, err)
	}
	if rec := e.run(r.ID); rec.Epoch != held.Epoch() {
		t.Fatalf("the run was claimed under its resumer: epoch %d, resumer's %d", rec.Epoch, held.Epoch())
	}
	close(release)
	waitFor(t, "the resumer to complete the run", e.completed(r.ID))
	if _, err := j.Claim(e.ctx, r.ID); !errors.Is(err, journal.ErrRunFinished) {
		t.Fatalf("Claim after completion: err = %v", err)
	}
}

// seqsOf returns the seqs of rows.
func seqsOf(rs []journal.EventRow) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}
