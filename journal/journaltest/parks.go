package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// resumes records the runs a resumer saw and completes them with their decisions.
type resumes struct {
	mu    sync.Mutex
	seen  []string
	decs  map[string]*journal.Decision
	calls atomic.Int32
}

// resumer returns a resumer that reads the decision of key and completes the run.
func (rs *resumes) resumer(key string) func(ctx context.Context, r *journal.Run) {
	return func(ctx context.Context, r *journal.Run) {
		rs.calls.Add(1)
		d := r.Decision(key)
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.ID)
		if rs.decs == nil {
			rs.decs = map[string]*journal.Decision{}
		}
		rs.decs[r.ID] = d
		rs.mu.Unlock()
		_ = r.Complete(ctx, json.RawMessage(`"done"`))
	}
}

func (rs *resumes) decision(id string) *journal.Decision {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.decs[id]
}

// parked begins a run on j, parks it under keys and suspends it.
func (e *env) parked(j *journal.Journal, deadline time.Time, keys ...string) *journal.Run {
	e.t.Helper()
	r := e.begin(j)
	for _, k := range keys {
		d, err := r.Park(e.ctx, k, deadline, json.RawMessage(`{"tool":"send"}`))
		must(e.t, "Park", err)
		if d != nil {
			e.t.Fatalf("fresh park already decided: %+v", d)
		}
	}
	must(e.t, "Suspend", r.Suspend(e.ctx))
	return r
}

func (e *env) completed(id string) func() bool {
	return func() bool {
		rec, err := e.d.GetRun(e.ctx, id)
		return err == nil && rec.Status == journal.StatusCompleted
	}
}

func parkCases() []testCase {
	return []testCase{
		{"Parks/ParkIsIdempotentAndSuspendReleases", parksParkIsIdempotentAndSuspendReleases},
		{"Parks/ApprovalDeadlineOption", parksApprovalDeadlineOption},
		{"Parks/DecisionResumesRunWithDecision", parksDecisionResumesRunWithDecision},
		{"Parks/TraceContextsReachTheResumedRun", parksTraceContextsReachTheResumedRun},
		{"Parks/ReplayedParkReturnsStoredDecision", parksReplayedParkReturnsStoredDecision},
		{"Parks/DecideErrors", parksDecideErrors},
		{"Parks/RunnableOnlyWhenAllParksDecided", parksRunnableOnlyWhenAllParksDecided},
		{"Parks/DecisionBeforeSuspendResumesAtSuspend", parksDecisionBeforeSuspendResumesAtSuspend},
		{"Parks/ExactlyOnceUnder20ConcurrentDeciders", parksExactlyOnceUnder20ConcurrentDeciders},
		{"Parks/DeadlineTimeoutSurvivesRestart", parksDeadlineTimeoutSurvivesRestart},
		{"Parks/TimeoutStoredWithoutResumer", parksTimeoutStoredWithoutResumer},
	}
}

// parksParkIsIdempotentAndSuspendReleases is the case "Parks/ParkIsIdempotentAndSuspendReleases": park is idempotent and suspend releases.
func parksParkIsIdempotentAndSuspendReleases(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	for range 2 {
		d, err := r.Park(e.ctx, "k1", time.Time{}, json.RawMessage(`{"a":1}`))
		must(t, "Park", err)
		if d != nil {
			t.Fatalf("pending park returned %+v", d)
		}
	}
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if len(parks) != 1 || parks[0].Key != "k1" || !jsonEq(parks[0].Payload, []byte(`{"a":1}`)) {
		t.Fatalf("parks = %+v", parks)
	}
	if want := e.clock.Now().Add(24 * time.Hour); !parks[0].Deadline.Equal(want) {
		t.Fatalf("default deadline %v, want %v", parks[0].Deadline, want)
	}
	must(t, "Suspend", r.Suspend(e.ctx))
	rec := e.run(r.ID)
	if rec.Status != journal.StatusParked || rec.LeaseOwner != "" {
		t.Fatalf("suspended run = %s owner %q", rec.Status, rec.LeaseOwner)
	}
}

// parksApprovalDeadlineOption is the case "Parks/ApprovalDeadlineOption": approval deadline option.
func parksApprovalDeadlineOption(t *testing.T, e *env) {
	j := e.journal("a", func(o *journal.Options) { o.ApprovalDeadline = time.Hour })
	r := e.begin(j)
	_, err := r.Park(e.ctx, "k", time.Time{}, nil)
	must(t, "Park", err)
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if want := e.clock.Now().Add(time.Hour); len(parks) != 1 || !parks[0].Deadline.Equal(want) {
		t.Fatalf("parks = %+v, want deadline %v", parks, want)
	}
}

// parksDecisionResumesRunWithDecision is the case "Parks/DecisionResumesRunWithDecision": decision resumes run with decision.
func parksDecisionResumesRunWithDecision(t *testing.T, e *env) {
	var rs resumes
	j := e.journal("a", func(o *journal.Options) { o.Resumer = rs.resumer("k1") })
	r := e.parked(j, time.Time{}, "k1")
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove, Payload: json.RawMessage(`{"args":{"x":1}}`)}))
	waitFor(t, "resumed run to complete", e.completed(r.ID))
	d := rs.decision(r.ID)
	if d == nil || d.Kind != journal.DecisionApprove || !jsonEq(d.Payload, []byte(`{"args":{"x":1}}`)) || !d.DecidedAt.Equal(e.clock.Now()) {
		t.Fatalf("resumer saw decision %+v", d)
	}
	if n := rs.calls.Load(); n != 1 {
		t.Fatalf("resumer called %d times", n)
	}
	// Park on a replay returns the stored decision.
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if parks[0].Decision == nil || parks[0].Decision.Kind != journal.DecisionApprove {
		t.Fatalf("stored park = %+v", parks[0])
	}
}

// parksTraceContextsReachTheResumedRun is the case "Parks/TraceContextsReachTheResumedRun": trace contexts reach the resumed run.
func parksTraceContextsReachTheResumedRun(t *testing.T, e *env) {
	// The park keeps the parking execution's trace context, the decision its
	// maker's, and the execution resuming on another instance sees both.
	seen := make(chan []journal.ParkRecord, 1)
	a := e.journal("a")
	b := e.journal("b", func(o *journal.Options) {
		o.Resumer = func(ctx context.Context, r *journal.Run) {
			seen <- r.Parks()
			_ = r.Complete(ctx, json.RawMessage(`"done"`))
		}
	})
	r := e.begin(a)
	pctx := journal.WithTracer(e.ctx, fixedTracer("00-parking-01"))
	_, err := r.Park(pctx, "k1", time.Time{}, nil)
	must(t, "Park", err)
	must(t, "Suspend", r.Suspend(e.ctx))
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if len(parks) != 1 || parks[0].Trace != "00-parking-01" {
		t.Fatalf("stored parks %+v, want trace 00-parking-01", parks)
	}
	dctx := journal.WithTracer(e.ctx, fixedTracer("00-deciding-01"))
	must(t, "Decide", b.Decide(dctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}))
	var got []journal.ParkRecord
	select {
	case got = <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the decided run was not resumed")
	}
	if len(got) != 1 || got[0].Trace != "00-parking-01" || got[0].Decision == nil || got[0].Decision.Trace != "00-deciding-01" {
		t.Fatalf("the resumed run saw parks %+v", got)
	}
	// A signal set in a traced context decides its waiters with the setter's.
	r3 := e.begin(a)
	d, err := r3.WaitSignal(pctx, "ping", "k", time.Time{})
	must(t, "WaitSignal", err)
	if d != nil {
		t.Fatalf("fresh wait already decided: %+v", d)
	}
	must(t, "Suspend", r3.Suspend(e.ctx))
	_, err = b.SetSignal(journal.WithTracer(e.ctx, fixedTracer("00-setting-01")), "ping", "k", json.RawMessage(`1`), false)
	must(t, "SetSignal", err)
	select {
	case got = <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the signalled run was not resumed")
	}
	if len(got) != 1 || got[0].Trace != "00-parking-01" || got[0].Decision == nil || got[0].Decision.Trace != "00-setting-01" {
		t.Fatalf("the run resumed by the signal saw parks %+v", got)
	}
	// Without a tracer nothing is stored: the empty trace context.
	r2 := e.parked(a, time.Time{}, "k1")
	parks, err = e.d.ListParks(e.ctx, r2.ID)
	must(t, "ListParks", err)
	if parks[0].Trace != "" {
		t.Fatalf("trace %q stored without a tracer", parks[0].Trace)
	}
}

// parksReplayedParkReturnsStoredDecision is the case "Parks/ReplayedParkReturnsStoredDecision": replayed park returns stored decision.
func parksReplayedParkReturnsStoredDecision(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.parked(j, time.Time{}, "k1")
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionDeny, Payload: json.RawMessage(`{"reason":"no"}`)}))
	r2, err := j.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	d, err := r2.Park(e.ctx, "k1", time.Time{}, nil)
	must(t, "Park", err)
	if d == nil || d.Kind != journal.DecisionDeny || r2.Decision("k1") == nil {
		t.Fatalf("replayed Park = %+v", d)
	}
}

// parksDecideErrors is the case "Parks/DecideErrors": decide errors.
func parksDecideErrors(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	approve := journal.Decision{Kind: journal.DecisionApprove}
	if err := a.Decide(e.ctx, "nope", "k", approve); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("unknown run err = %v", err)
	}
	r := e.begin(a)
	_, err := r.Park(e.ctx, "k1", time.Time{}, nil)
	must(t, "Park", err)
	if err := b.Decide(e.ctx, r.ID, "other", approve); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("unknown park err = %v", err)
	}
	if err := b.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: "maybe"}); err == nil {
		t.Fatal("unknown decision kind accepted")
	}
	e.clock.Advance(time.Second)
	err = b.Decide(e.ctx, r.ID, "k1", approve)
	var busy *journal.LeaseBusyError
	if !errors.As(err, &busy) || !errors.Is(err, journal.ErrLeaseBusy) || busy.RetryAfter != leaseTTL-time.Second {
		t.Fatalf("decide on a held run err = %#v, want LeaseBusyError with RetryAfter %s", err, leaseTTL-time.Second)
	}
	parks, _ := e.d.ListParks(e.ctx, r.ID)
	if parks[0].Decision != nil {
		t.Fatal("a busy decision was stored")
	}
	must(t, "Suspend", r.Suspend(e.ctx))
	must(t, "Decide", b.Decide(e.ctx, r.ID, "k1", approve))
	if err := b.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionDeny}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("second decision err = %v, want ErrConflict", err)
	}
	// Conflict is checked before the lease: a held run still answers Conflict.
	r2, err := a.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	if err := b.Decide(e.ctx, r2.ID, "k1", approve); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("decided park on a held run err = %v, want ErrConflict", err)
	}
}

// parksRunnableOnlyWhenAllParksDecided is the case "Parks/RunnableOnlyWhenAllParksDecided": runnable only when all parks decided.
func parksRunnableOnlyWhenAllParksDecided(t *testing.T, e *env) {
	var rs resumes
	j := e.journal("a", func(o *journal.Options) { o.Resumer = rs.resumer("k1") })
	r := e.parked(j, time.Time{}, "k1", "k2")
	must(t, "Decide k1", j.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}))
	n, err := j.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	if n != 0 || rs.calls.Load() != 0 || e.run(r.ID).Status != journal.StatusParked {
		t.Fatalf("run resumed with a pending park (recovered %d, resumer %d)", n, rs.calls.Load())
	}
	must(t, "Decide k2", j.Decide(e.ctx, r.ID, "k2", journal.Decision{Kind: journal.DecisionDeny}))
	waitFor(t, "resume after the last decision", e.completed(r.ID))
	if n := rs.calls.Load(); n != 1 {
		t.Fatalf("resumer called %d times", n)
	}
}

// parksDecisionBeforeSuspendResumesAtSuspend is the case "Parks/DecisionBeforeSuspendResumesAtSuspend": decision before suspend resumes at suspend.
func parksDecisionBeforeSuspendResumesAtSuspend(t *testing.T, e *env) {
	var rs resumes
	j := e.journal("a", func(o *journal.Options) { o.Resumer = rs.resumer("k1") })
	r := e.begin(j)
	_, err := r.Park(e.ctx, "k1", time.Time{}, nil)
	must(t, "Park", err)
	// The lease is held by this same instance, so the decision is stored.
	must(t, "Decide", j.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}))
	if rs.calls.Load() != 0 {
		t.Fatal("resumed while the handler still runs")
	}
	must(t, "Suspend", r.Suspend(e.ctx))
	waitFor(t, "resume at Suspend", e.completed(r.ID))
}

// parksExactlyOnceUnder20ConcurrentDeciders is the case "Parks/ExactlyOnceUnder20ConcurrentDeciders": exactly once under20 concurrent deciders.
func parksExactlyOnceUnder20ConcurrentDeciders(t *testing.T, e *env) {
	var rs resumes
	js := make([]*journal.Journal, 4)
	for i := range js {
		js[i] = e.journal(string(rune('a'+i)), func(o *journal.Options) { o.Resumer = rs.resumer("k1") })
	}
	r := e.parked(js[0], time.Time{}, "k1")
	var ok, conflict, other atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			kind := journal.DecisionApprove
			if i%2 == 1 {
				kind = journal.DecisionDeny
			}
			err := js[i%len(js)].Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: kind})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, journal.ErrConflict):
				conflict.Add(1)
			default:
				t.Errorf("Decide: %v", err)
				other.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || conflict.Load() != 19 {
		t.Fatalf("%d decisions stored, %d refused, want 1 and 19", ok.Load(), conflict.Load())
	}
	waitFor(t, "resumed run", e.completed(r.ID))
	if n := rs.calls.Load(); n != 1 {
		t.Fatalf("resumer called %d times, want 1", n)
	}
}

// parksDeadlineTimeoutSurvivesRestart is the case "Parks/DeadlineTimeoutSurvivesRestart": deadline timeout survives restart.
func parksDeadlineTimeoutSurvivesRestart(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.parked(a, e.clock.Now().Add(time.Hour), "k1")
	must(t, "Close a", a.Close(e.ctx))

	var rs resumes
	b := e.journal("b", func(o *journal.Options) { o.Resumer = rs.resumer("k1") })
	e.clock.Advance(59 * time.Minute)
	n, err := b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	if n != 0 || rs.calls.Load() != 0 {
		t.Fatal("resumed before the deadline")
	}
	e.clock.Advance(2 * time.Minute)
	n, err = b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	if n != 1 {
		t.Fatalf("RecoverOnce resumed %d runs, want 1", n)
	}
	waitFor(t, "timed-out run to complete", e.completed(r.ID))
	d := rs.decision(r.ID)
	if d == nil || d.Kind != journal.DecisionTimeout || !jsonEq(d.Payload, []byte(`{"reason":"timeout"}`)) {
		t.Fatalf("resumer saw %+v, want a timeout decision", d)
	}
	// The decision is stored: a late human decision conflicts.
	if err := b.Decide(e.ctx, r.ID, "k1", journal.Decision{Kind: journal.DecisionApprove}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("late decision err = %v", err)
	}
}

// parksTimeoutStoredWithoutResumer is the case "Parks/TimeoutStoredWithoutResumer": timeout stored without resumer.
func parksTimeoutStoredWithoutResumer(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.parked(a, e.clock.Now().Add(time.Minute), "k1")
	e.clock.Advance(2 * time.Minute)
	_, err := a.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	parks, _ := e.d.ListParks(e.ctx, r.ID)
	if parks[0].Decision == nil || parks[0].Decision.Kind != journal.DecisionTimeout {
		t.Fatalf("park = %+v, want timeout decision", parks[0])
	}
	if e.run(r.ID).Status != journal.StatusParked {
		t.Fatal("run claimed without a resumer")
	}
}

// fixedTracer is a [journal.Tracer] whose trace context is always itself.
type fixedTracer string

func (f fixedTracer) TraceContext(context.Context) string { return string(f) }

func (fixedTracer) Decided(context.Context, journal.ParkRecord, journal.Decision) {}
