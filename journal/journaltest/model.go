package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// The model-based case: random sequences of begin, step, park, suspend, complete,
// decide, claim, lease expiry, crash (an instance drops every run and log writer it holds
// and comes back under the same owner name), recovery, renewal, log writes, and
// transient database failures (before or after the write lands), run by two or three
// instances sharing the case's driver and clock. Each result is checked against a model
// in plain maps of what must be stored, and after every operation what is stored is
// checked against the model (the runs it touched; all of them every fullCheck
// operations and at the end, after every run was driven to its end).
//
// ENGINE_MODEL_SEED runs one seed instead of the defaults (a failure prints its seed),
// ENGINE_MODEL_OPS sets the number of operations.

// modelSeeds are the seeds every driver runs by default.
var modelSeeds = []uint64{1, 2, 3}

// defaultModelOps keeps a seed well under a second on SQLite.
const defaultModelOps = 400

func modelCases() []testCase {
	seeds, ops := modelSeeds, defaultModelOps
	var bad error
	if s := os.Getenv("ENGINE_MODEL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			bad = fmt.Errorf("ENGINE_MODEL_SEED=%q: want a number", s)
		}
		seeds = []uint64{n}
	}
	if s := os.Getenv("ENGINE_MODEL_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			bad = fmt.Errorf("ENGINE_MODEL_OPS=%q: want a positive number", s)
		}
		ops = n
	}
	var out []testCase
	for _, seed := range seeds {
		out = append(out, testCase{fmt.Sprintf("Model/Seed%d", seed), func(t *testing.T, e *env) {
			if bad != nil {
				t.Fatalf("model settings: %v", bad)
			}
			runModel(t, e, seed, ops)
		}})
	}
	return out
}

// model is what must be stored, and the handles the instances hold.
type model struct {
	t     *testing.T
	e     *env
	seed  uint64
	rng   *rand.Rand
	insts []*instance
	runs  []*mrun
	execs []*exec // every execution, in the order they began
	logs  []*mwriter
	dead  []*journal.Journal // journals of crashed instances: closed at cleanup
	stop  chan struct{}      // closed at cleanup: resumers return
	n     int                // source of unique ids and payloads
	op    int
	trace []string

	// the execution that last ran the fn of each step position ("run@pos")
	ran map[string]*exec
	// seen counts outcomes, logged at the end: what a seed exercised.
	seen map[string]int
	// touched are the runs the current operation worked on: checked after it. Every run
	// is checked every fullCheck operations.
	touched  map[*mrun]bool
	noFaults bool // while draining
}

// fullCheck is how often every run is checked, not only those an operation touched.
const fullCheck = 16

// instance is one process: a journal under an owner name, replaced on a crash, on a
// wrapper of the case's driver that injects transient failures.
type instance struct {
	owner     string
	j         *journal.Journal
	fd        *faultDriver
	gen       int
	lastFault time.Time         // when its journal last saw the database fail
	resumed   chan *journal.Run // runs its resumer was handed
	early     []*journal.Run    // handed runs not yet expected
}

// mrun is a run as it must be stored.
type mrun struct {
	id      string
	status  journal.Status
	owner   string
	epoch   int64
	expires time.Time
	output  json.RawMessage
	errMsg  string
	steps   []mstep
	parks   []*mpark
	stream  *mstream
}

type mstep struct {
	name   string
	result json.RawMessage
	errMsg string
}

type mpark struct {
	key      string
	deadline time.Time
	decision *journal.Decision
}

// mstream is a run's event stream: every seq a Write returned, with its event, and the
// seqs that must be stored.
type mstream struct {
	id       string
	handed   map[int64]string
	durable  map[int64]bool
	fenced   map[int64]bool // handed out by a writer whose execution had lost the lease
	finished bool
}

// exec is one execution of a run: a *journal.Run an instance holds or held.
type exec struct {
	inst    *instance
	gen     int
	run     *journal.Run
	r       *mrun
	epoch   int64
	next    int                          // the position its next Step gets
	local   int                          // steps in its own view: loaded at claim, plus recorded
	parks   map[string]*journal.Decision // parks in its own view (nil: pending)
	ended   bool                         // the journal knows it holds nothing any more
	crashed bool                         // its instance crashed: never used again but as a zombie
	w       *mwriter                     // its open writer
}

// mwriter is a LogWriter of an execution.
type mwriter struct {
	w      *journal.LogWriter
	x      *exec
	s      *mstream
	base   int64 // seqs before the writer's own
	handed []int64
	deltas string // every delta's text, in order
	msg    int    // the message id its deltas go to
	jumped bool   // it continues past a dead writer's reservation
	closed bool
}

// valid reports whether x's fence still matches the stored lease.
func (m *model) valid(x *exec) bool {
	return x.r.owner != "" && x.r.owner == x.inst.owner && x.r.epoch == x.epoch
}

func (m *model) now() time.Time { return m.e.clock.Now() }

func (m *model) next() int { m.n++; return m.n }

// logf adds a line to the trace printed on failure.
func (m *model) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("op %d: ", m.op)+fmt.Sprintf(format, args...))
	if len(m.trace) > 80 {
		m.trace = m.trace[1:]
	}
}

// fatalf fails the case with the seed and the last operations.
func (m *model) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("model seed %d, op %d: %s\nreproduce: ENGINE_MODEL_SEED=%d ENGINE_MODEL_OPS=%d\nlast operations:\n  %s",
		m.seed, m.op, fmt.Sprintf(format, args...), m.seed, m.op, strings.Join(m.trace, "\n  "))
}

func pick[T any](m *model, xs []T) T { return xs[m.rng.IntN(len(xs))] }

// fault now and then makes the next calls of method on inst's driver fail transiently,
// in one of modes. The returned function clears what the operation left planned and
// reports whether a failure was injected, and in which mode (0: none). A journal that
// retries a write, renews or recovers through a failure takes a lease TTL of grace.
func (m *model) fault(inst *instance, method string, modes ...faultMode) func() faultMode {
	if m.noFaults || m.rng.IntN(10) != 0 {
		return func() faultMode { return 0 }
	}
	mode, n := pick(m, modes), 1+m.rng.IntN(2)
	if method == "RenewLease" {
		n = -1 // fail every renewal of the pass (a run at a time, in map order, or all in one)
	}
	before := inst.fd.count(method)
	inst.fd.inject(method, mode, n)
	return func() faultMode {
		inst.fd.clear(method)
		if inst.fd.count(method) == before {
			return 0
		}
		m.logf("  %s: %s failed (%s)", inst.owner, method, mode)
		m.seen["fault."+method+"."+mode.String()]++
		if method != "Decide" {
			inst.lastFault = m.now()
		}
		return mode
	}
}

// faultOf is [model.fault] for a write of x, unless x's instance crashed since.
func (m *model) faultOf(x *exec, method string) func() faultMode {
	if x.crashed {
		return func() faultMode { return 0 }
	}
	return m.fault(x.inst, method, failBefore, failAfter)
}

// inGrace reports whether inst's journal saw a failure less than a lease TTL ago.
func (m *model) inGrace(inst *instance) bool {
	return !inst.lastFault.IsZero() && m.now().Sub(inst.lastFault) < leaseTTL
}

func runModel(t *testing.T, e *env, seed uint64, ops int) {
	t.Logf("model seed %d, %d operations (ENGINE_MODEL_SEED and ENGINE_MODEL_OPS replay it)", seed, ops)
	m := &model{t: t, e: e, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		stop: make(chan struct{}), ran: map[string]*exec{}, seen: map[string]int{}, touched: map[*mrun]bool{}}
	t.Cleanup(m.cleanup)
	for _, name := range []string{"a", "b", "c"}[:2+m.rng.IntN(2)] {
		inst := &instance{owner: name, resumed: make(chan *journal.Run, 4096)}
		m.insts = append(m.insts, inst)
		m.start(inst)
	}
	for m.op = 1; m.op <= ops; m.op++ {
		m.random()
		m.check(m.op%fullCheck == 0)
	}
	m.op = ops + 1
	m.drain()
	m.check(true)
	keys := make([]string, 0, len(m.seen))
	for k := range m.seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m.seen[k])
	}
	t.Logf("exercised:%s", b.String())
}

// start opens a new journal for inst.
func (m *model) start(inst *instance) {
	inst.gen++
	inst.fd, inst.lastFault = newFaultDriver(m.e.d), time.Time{}
	opts := journal.Options{Owner: inst.owner, LeaseTTL: leaseTTL, Now: m.e.clock.Now, LogPolicy: policy,
		Resumer: func(ctx context.Context, r *journal.Run) {
			inst.resumed <- r
			select { // the model drives the run; a crashed instance's runs stay held
			case <-m.stop:
			case <-ctx.Done():
			}
		}}
	j, err := journal.New(inst.fd.driver(), opts)
	must(m.t, "journal.New", err)
	inst.j = j
}

// cleanup lets the resumers go and closes every journal, crashed ones too.
func (m *model) cleanup() {
	close(m.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, inst := range m.insts {
		_ = inst.j.Close(ctx)
	}
	for _, j := range m.dead {
		_ = j.Close(ctx)
	}
}

// random runs one operation chosen at random among those that apply.
func (m *model) random() {
	type op struct {
		weight int
		do     func() bool // false: does not apply now
	}
	ops := []op{
		{5, m.opBegin},
		{18, m.opStep},
		{5, m.opPark},
		{4, m.opSuspend},
		{2, m.opComplete},
		{1, m.opRelease},
		{7, m.opDecide},
		{4, m.opClaim},
		{5, m.opAdvance},
		{2, m.opCrash},
		{6, m.opRecover},
		{4, m.opRenew},
		{6, m.opOpenLog},
		{22, m.opWrite},
		{3, m.opFlush},
		{3, m.opCloseLog},
		{1, m.opFinishLog},
		{3, m.opZombie},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	for range 100 {
		n := m.rng.IntN(total)
		for _, o := range ops {
			if n -= o.weight; n < 0 {
				if o.do() {
					return
				}
				break
			}
		}
	}
	m.fatalf("no operation applies")
}

// live returns the executions of the instances' current journals.
func (m *model) live(wantEnded bool) []*exec {
	var out []*exec
	for _, x := range m.execs {
		if !x.crashed && x.ended == wantEnded {
			out = append(out, x)
		}
	}
	return out
}

// someExec picks a live execution, mostly one the journal still runs.
func (m *model) someExec() *exec {
	open, ended := m.live(false), m.live(true)
	if len(open) > 0 && (len(ended) == 0 || m.rng.IntN(10) > 0) {
		return pick(m, open)
	}
	if len(ended) > 0 {
		return pick(m, ended)
	}
	return nil
}

// holding returns the execution of run r inst's current journal holds, if any.
func (m *model) holding(inst *instance, r *mrun) *exec {
	for _, x := range m.execs {
		if x.inst == inst && x.gen == inst.gen && x.r == r && !x.ended && !x.crashed {
			return x
		}
	}
	return nil
}

func (m *model) nonFinal() []*mrun {
	var out []*mrun
	for _, r := range m.runs {
		if !r.status.Final() {
			out = append(out, r)
		}
	}
	return out
}

// ---- operations on runs ----

func (m *model) opBegin() bool {
	if len(m.nonFinal()) >= 6 || len(m.runs) >= 16 {
		return false
	}
	inst := pick(m, m.insts)
	id := fmt.Sprintf("run-%06d", m.next())
	m.logf("%s begins %s", inst.owner, id)
	done := m.fault(inst, "InsertRun", failBefore, failAfter)
	run, err := inst.j.Begin(m.e.ctx, journal.NewRun{ID: id, Flow: "f", Input: json.RawMessage(`{"n":1}`)})
	done()
	if err != nil {
		m.fatalf("Begin: %v", err)
	}
	r := &mrun{id: id, status: journal.StatusRunning, owner: inst.owner, epoch: 1, expires: m.now().Add(leaseTTL)}
	m.runs = append(m.runs, r)
	m.touch(r)
	m.addExec(inst, run, r)
	return true
}

// addExec records a new execution of r that inst's journal holds.
func (m *model) addExec(inst *instance, run *journal.Run, r *mrun) *exec {
	if run.ID != r.id || run.Epoch() != r.epoch {
		m.fatalf("%s holds %s at epoch %d, want %s at %d", inst.owner, run.ID, run.Epoch(), r.id, r.epoch)
	}
	x := &exec{inst: inst, gen: inst.gen, run: run, r: r, epoch: r.epoch, local: len(r.steps), parks: map[string]*journal.Decision{}}
	for _, p := range r.parks {
		x.parks[p.key] = p.decision
	}
	m.execs = append(m.execs, x)
	return x
}

// lost notes what an error of an operation of x says: a lost lease ends x.
func (m *model) lost(x *exec, err error) {
	if errors.Is(err, journal.ErrLeaseLost) {
		x.ended = true
	}
}

func (m *model) opStep() bool {
	x := m.someExec()
	if x == nil {
		return false
	}
	m.step(x)
	return true
}

// step runs the next step of x and checks it against the model.
func (m *model) step(x *exec) {
	r, pos := x.r, x.next
	m.touch(r)
	name := fmt.Sprintf("s%d", m.next())
	if pos < len(r.steps) {
		name = r.steps[pos].name // a replay asks for what is recorded
	}
	fails := m.rng.IntN(7) == 0
	out := json.RawMessage(fmt.Sprintf(`{"run":%q,"pos":%d,"x":%d}`, r.id, pos, m.next()))
	errMsg := fmt.Sprintf("boom-%d", m.n)
	wasValid := m.valid(x)
	m.logf("%s step %s@%d of %s (epoch %d, valid %v, ended %v)", x.inst.owner, name, pos, r.id, x.epoch, wasValid, x.ended)
	ran := false
	key := fmt.Sprintf("%s@%d", r.id, pos)
	fn := func(context.Context) (json.RawMessage, error) {
		ran = true
		// Exactly once: an execution that holds the lease runs a step only when no
		// execution recorded it. (One that lost its lease unawares may run it again; its
		// write is refused.)
		if m.valid(x) {
			if pos < len(r.steps) {
				m.fatalf("step %s ran again in the execution holding the run, though recorded", key)
			}
			if prev := m.ran[key]; prev != nil && m.valid(prev) {
				m.fatalf("step %s ran in %s epoch %d while %s epoch %d, which ran it, holds the run", key, x.inst.owner, x.epoch, prev.inst.owner, prev.epoch)
			}
		}
		m.ran[key] = x
		if fails {
			return nil, errors.New(errMsg)
		}
		return out, nil
	}
	w := x.w
	done := m.faultOf(x, "InsertStep")
	got, err := x.run.Step(m.e.ctx, name, fn)
	done()
	switch {
	case x.ended:
		if !errors.Is(err, journal.ErrLeaseLost) || ran {
			m.fatalf("Step of an ended execution: err %v, fn ran %v", err, ran)
		}
		m.seen["step.ended"]++
		return
	case pos < x.local:
		m.seen["step.replayed"]++
		x.next++
		want := r.steps[pos]
		if ran {
			m.fatalf("replayed step %s ran its fn", key)
		}
		if want.errMsg != "" {
			var se *journal.StepError
			if !errors.As(err, &se) || se.Message != want.errMsg || se.Step != want.name {
				m.fatalf("replayed failed step %s: err %v, want StepError %q", key, err, want.errMsg)
			}
		} else if err != nil || !jsonEq(got, want.result) {
			m.fatalf("replayed step %s = %s, %v; want %s", key, got, err, want.result)
		}
		return
	}
	x.next++
	if !ran {
		m.fatalf("step %s did not run its fn (err %v)", key, err)
	}
	if !wasValid {
		if !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("step %s of an execution that lost its lease: err %v, want ErrLeaseLost", key, err)
		}
		m.seen["step.fenced"]++
		x.ended = true
		return
	}
	if fails {
		if err == nil || err.Error() != errMsg {
			m.fatalf("failing step %s: err %v, want %s", key, err, errMsg)
		}
		r.steps = append(r.steps, mstep{name: name, errMsg: errMsg})
	} else {
		if err != nil || !jsonEq(got, out) {
			m.fatalf("step %s = %s, %v; want %s", key, got, err, out)
		}
		r.steps = append(r.steps, mstep{name: name, result: out})
	}
	x.local++
	m.seen["step.recorded"]++
	if w != nil && !w.closed {
		m.seen["step.withlog"]++
		m.stored(w, "the step") // the rows queued before the step are stored with it
	}
}

func (m *model) opPark() bool {
	x := m.someExec()
	if x == nil {
		return false
	}
	r := x.r
	m.touch(r)
	key := fmt.Sprintf("k%06d", m.next())
	if len(r.parks) > 0 && m.rng.IntN(3) == 0 {
		key = pick(m, r.parks).key
	}
	deadline := m.now().Add(pick(m, []time.Duration{2 * time.Second, 15 * time.Second, time.Hour}))
	valid := m.valid(x)
	m.logf("%s parks %s under %s (epoch %d, valid %v, ended %v)", x.inst.owner, r.id, key, x.epoch, valid, x.ended)
	done := m.faultOf(x, "InsertPark")
	d, err := x.run.Park(m.e.ctx, key, deadline, json.RawMessage(`{"tool":"send"}`))
	done()
	var stored *mpark
	for _, p := range r.parks {
		if p.key == key {
			stored = p
		}
	}
	switch local, ok := x.parks[key]; {
	case x.ended:
		if !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("Park of an ended execution: %v", err)
		}
	case ok && local != nil:
		m.seen["park.seen"]++
		if err != nil || !sameDecision(d, local) {
			m.fatalf("Park of a park decided in the execution's view = %+v, %v; want %+v", d, err, local)
		}
	case !valid:
		if !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("Park without the lease: %v", err)
		}
		m.seen["park.fenced"]++
		x.ended = true
	default:
		if stored == nil {
			stored = &mpark{key: key, deadline: deadline}
			r.parks = append(r.parks, stored)
		}
		if err != nil || !sameDecision(d, stored.decision) {
			m.fatalf("Park %s = %+v, %v; want %+v", key, d, err, stored.decision)
		}
		x.parks[key] = d
		m.seen["park.stored"]++
	}
	return true
}

// end runs one of Suspend, Complete, Fail on x.
func (m *model) end(x *exec, status journal.Status) {
	r := x.r
	m.touch(r)
	valid := m.valid(x)
	m.logf("%s ends %s as %s (epoch %d, valid %v, ended %v)", x.inst.owner, r.id, status, x.epoch, valid, x.ended)
	out := json.RawMessage(fmt.Sprintf(`{"out":%d}`, m.next()))
	msg := fmt.Sprintf("failed-%d", m.n)
	var err error
	done := m.faultOf(x, "UpdateRun")
	switch status {
	case journal.StatusParked:
		err = x.run.Suspend(m.e.ctx)
	case journal.StatusCompleted:
		err = x.run.Complete(m.e.ctx, out)
	default:
		err = x.run.Fail(m.e.ctx, msg)
	}
	done()
	if x.ended || !valid {
		if !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("end of an execution without the lease: %v, want ErrLeaseLost", err)
		}
		m.seen["end.fenced"]++
		x.ended = true
		return
	}
	if err != nil {
		m.fatalf("end as %s: %v", status, err)
	}
	x.ended = true
	m.seen["end."+string(status)]++
	r.status, r.owner = status, ""
	switch status {
	case journal.StatusCompleted:
		r.output = out
	case journal.StatusFailed:
		r.errMsg = msg
	case journal.StatusParked:
		// Every park decided: Suspend resumes the run here at once.
		if r.runnable() && m.holding(x.inst, r) == nil {
			m.claimed(x.inst, r)
		}
	}
}

// runnable reports a parked run with no pending park.
func (r *mrun) runnable() bool {
	if r.status != journal.StatusParked {
		return false
	}
	for _, p := range r.parks {
		if p.decision == nil {
			return false
		}
	}
	return true
}

// free reports whether r's lease may be taken by anyone at now.
func (r *mrun) free(now time.Time) bool { return r.owner == "" || !r.expires.After(now) }

func (m *model) opSuspend() bool {
	x := m.someExec()
	if x == nil {
		return false
	}
	m.end(x, journal.StatusParked)
	return true
}

func (m *model) opComplete() bool {
	x := m.someExec()
	if x == nil {
		return false
	}
	m.end(x, pick(m, []journal.Status{journal.StatusCompleted, journal.StatusFailed}))
	return true
}

func (m *model) opRelease() bool {
	x := m.someExec()
	if x == nil {
		return false
	}
	valid := m.valid(x)
	m.touch(x.r)
	m.logf("%s releases %s (epoch %d, valid %v, ended %v)", x.inst.owner, x.r.id, x.epoch, valid, x.ended)
	done := m.faultOf(x, "ReleaseRun")
	err := x.run.Release(m.e.ctx)
	done()
	if err != nil {
		m.fatalf("Release: %v", err)
	}
	if valid && !x.ended {
		x.r.owner = ""
	}
	x.ended = true
	return true
}

func (m *model) opDecide() bool {
	var parked []*mrun
	for _, r := range m.runs {
		if len(r.parks) > 0 {
			parked = append(parked, r)
		}
	}
	if len(parked) == 0 {
		return false
	}
	inst, r := pick(m, m.insts), pick(m, parked)
	m.touch(r)
	p := pick(m, r.parks)
	key := p.key
	if m.rng.IntN(15) == 0 {
		key, p = "unknown", nil
	}
	d := journal.Decision{Kind: pick(m, []journal.DecisionKind{journal.DecisionApprove, journal.DecisionDeny}),
		Payload: json.RawMessage(fmt.Sprintf(`{"d":%d}`, m.next()))}
	now := m.now()
	m.logf("%s decides %s/%s: %s (run %s, owner %q, expires %v)", inst.owner, r.id, key, d.Kind, r.status, r.owner, r.expires.Sub(now))
	done := m.fault(inst, "Decide", failBefore, failAfter)
	err := inst.j.Decide(m.e.ctx, r.id, key, d)
	mode := done()
	store := p != nil && p.decision == nil && !(r.owner != "" && r.owner != inst.owner && r.expires.After(now))
	switch {
	case mode != 0:
		// Decide is not retried: the caller sees the failure. A decision whose
		// acknowledgement was lost is stored all the same, and resumed by recovery.
		if !errors.Is(err, errTransient) {
			m.fatalf("Decide through a failure: %v", err)
		}
		if mode == failAfter && store {
			d.DecidedAt = now
			p.decision = &d
			m.seen["decide.storedunacknowledged"]++
		}
	case p == nil:
		if !errors.Is(err, journal.ErrNotFound) {
			m.fatalf("Decide of an unknown park: %v", err)
		}
	case p.decision != nil:
		if !errors.Is(err, journal.ErrConflict) {
			m.fatalf("second decision of %s/%s: %v, want ErrConflict", r.id, key, err)
		}
		m.seen["decide.conflict"]++
	case r.owner != "" && r.owner != inst.owner && r.expires.After(now):
		var busy *journal.LeaseBusyError
		if !errors.As(err, &busy) || busy.Owner != r.owner {
			m.fatalf("decision while %s holds %s: %v, want LeaseBusyError", r.owner, r.id, err)
		}
		m.seen["decide.busy"]++
	default:
		if err != nil {
			m.fatalf("Decide %s/%s: %v", r.id, key, err)
		}
		d.DecidedAt = now
		p.decision = &d
		m.seen["decide.stored"]++
		if r.runnable() && m.holding(inst, r) == nil {
			m.claimed(inst, r)
		}
	}
	return true
}

func (m *model) opClaim() bool {
	if len(m.runs) == 0 {
		return false
	}
	inst, r := pick(m, m.insts), pick(m, m.runs)
	m.touch(r)
	now := m.now()
	m.logf("%s claims %s (%s, owner %q, expires %v)", inst.owner, r.id, r.status, r.owner, r.expires.Sub(now))
	run, err := inst.j.Claim(m.e.ctx, r.id)
	var busy *journal.LeaseBusyError
	switch {
	case m.holding(inst, r) != nil:
		if !errors.As(err, &busy) || busy.Owner != inst.owner {
			m.fatalf("second Claim of %s on %s, which holds it: %v, want LeaseBusyError", r.id, inst.owner, err)
		}
		m.seen["claim.busyhere"]++
	case r.status.Final():
		if !errors.Is(err, journal.ErrRunFinished) {
			m.fatalf("Claim of a %s run: %v", r.status, err)
		}
	case r.owner != "" && r.owner != inst.owner && r.expires.After(now):
		if !errors.As(err, &busy) || busy.Owner != r.owner {
			m.fatalf("Claim while %s holds %s: %v, want LeaseBusyError", r.owner, r.id, err)
		}
		m.seen["claim.busy"]++
	default:
		if err != nil {
			m.fatalf("Claim %s: %v", r.id, err)
		}
		m.take(inst, r)
		m.addExec(inst, run, r)
		m.seen["claim.taken"]++
	}
	return true
}

// take stores a claim of r by inst in the model.
func (m *model) take(inst *instance, r *mrun) {
	r.owner, r.epoch, r.status, r.expires = inst.owner, r.epoch+1, journal.StatusRunning, m.now().Add(leaseTTL)
}

// claimed expects inst's journal to have claimed r for its resumer, and takes the run
// the resumer was handed.
func (m *model) claimed(inst *instance, r *mrun) {
	m.take(inst, r)
	m.touch(r)
	m.seen["resumed"]++
	m.logf("  %s resumes %s at epoch %d", inst.owner, r.id, r.epoch)
	for i, run := range inst.early {
		if run.ID == r.id {
			inst.early = slices.Delete(inst.early, i, i+1)
			m.addExec(inst, run, r)
			return
		}
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case run := <-inst.resumed:
			if run.ID == r.id {
				m.addExec(inst, run, r)
				return
			}
			inst.early = append(inst.early, run)
		case <-deadline:
			m.fatalf("%s's resumer was not handed %s", inst.owner, r.id)
		}
	}
}

func (m *model) opAdvance() bool {
	d := pick(m, []time.Duration{time.Second, 3 * time.Second, leaseTTL / 2, leaseTTL + time.Second, 20 * time.Minute})
	m.logf("clock +%v", d)
	m.e.clock.Advance(d)
	return true
}

func (m *model) opCrash() bool {
	inst := pick(m, m.insts)
	m.logf("%s crashes and restarts", inst.owner)
	m.seen["crash"]++
	for _, x := range m.execs {
		if x.inst == inst && !x.crashed {
			x.crashed = true
		}
	}
	if len(inst.early) > 0 {
		m.fatalf("%s was handed runs nobody expected: %v", inst.owner, inst.early)
	}
	m.dead = append(m.dead, inst.j)
	m.start(inst)
	return true
}

func (m *model) opRecover() bool {
	m.recoverBy(pick(m, m.insts))
	return true
}

// recoverBy runs a recovery pass on inst and checks what it timed out and resumed.
func (m *model) recoverBy(inst *instance) {
	now := m.now()
	grace := m.inGrace(inst)
	m.logf("%s recovers (grace %v)", inst.owner, grace)
	done := m.fault(inst, "RecoverableRuns", failBefore)
	n, err := inst.j.RecoverOnce(m.e.ctx)
	failed := done() != 0
	if failed && !errors.Is(err, errTransient) || !failed && err != nil {
		m.fatalf("RecoverOnce: %v (a failure injected: %v)", err, failed)
	}
	// Timeouts first: every pending park past its deadline, unless another owner holds
	// the run.
	for _, r := range m.runs {
		for _, p := range r.parks {
			if p.decision == nil && !p.deadline.After(now) && !(r.owner != "" && r.owner != inst.owner && r.expires.After(now)) {
				m.touch(r)
				p.decision = &journal.Decision{Kind: journal.DecisionTimeout, Payload: json.RawMessage(`{"reason":"timeout"}`), DecidedAt: now}
				m.logf("  %s/%s times out", r.id, p.key)
				m.seen["timeout"]++
			}
		}
	}
	want := 0
	if grace {
		m.seen["recover.grace"]++
	}
	for _, r := range m.runs {
		if grace || failed {
			break // after a failure, nothing is taken over for a lease TTL
		}
		if (r.status == journal.StatusRunning || r.runnable()) && r.free(now) && m.holding(inst, r) == nil {
			m.claimed(inst, r)
			want++
		}
	}
	if n != want {
		m.fatalf("RecoverOnce resumed %d runs, want %d", n, want)
	}
}

func (m *model) opRenew() bool {
	m.renewBy(pick(m, m.insts))
	return true
}

// renewBy renews the leases inst holds: the executions that lost theirs end.
func (m *model) renewBy(inst *instance) {
	m.logf("%s renews", inst.owner)
	done := m.fault(inst, "RenewLease", failBefore)
	inst.j.RenewOnce(m.e.ctx)
	if done() != 0 {
		return // no renewal landed; none said the lease was lost
	}
	for _, x := range m.execs {
		if x.inst != inst || x.gen != inst.gen || x.ended || x.crashed {
			continue
		}
		m.touch(x.r)
		if m.valid(x) {
			x.r.expires = m.now().Add(leaseTTL)
		} else {
			x.ended = true
			m.seen["renew.lost"]++
		}
	}
}

// ---- operations on logs ----

func (m *model) opOpenLog() bool {
	var xs []*exec
	for _, x := range m.live(false) {
		if x.w == nil {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return false
	}
	x := pick(m, xs)
	r := x.r
	m.touch(r)
	id := "st-" + r.id
	opts := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: int64(1 + m.rng.IntN(4))}
	if r.stream == nil && x.next >= len(r.steps) && m.rng.IntN(2) == 0 {
		m.logStep(x, opts)
		return true
	}
	m.logf("%s opens the log of %s (epoch %d, valid %v, reserve ahead %d)", x.inst.owner, r.id, x.epoch, m.valid(x), opts.ReserveAhead)
	prev, perr := m.e.d.GetStream(m.e.ctx, id)
	last, lerr := m.e.d.LastSeq(m.e.ctx, id)
	w, err := x.inst.j.CreateLog(m.e.ctx, journal.Stream{ID: id, RunID: r.id, Flow: "f"}, x.run, opts)
	if err != nil {
		m.fatalf("CreateLog: %v", err)
	}
	if r.stream == nil {
		r.stream = newStream(id)
	}
	mw := &mwriter{w: w, x: x, s: r.stream, base: w.LastSeq(), jumped: w.LastSeq() > last}
	st, openLast := w.Opened()
	switch {
	case errors.Is(perr, journal.ErrNotFound):
		if mw.base != 0 || openLast != 0 || st.Reserved != opts.ReserveAhead {
			m.fatalf("a new log opens at %d (opened %+v after %d)", mw.base, st, openLast)
		}
	case perr != nil || lerr != nil:
		m.fatalf("reading the stream: %v %v", perr, lerr)
	case openLast != last || st.Reserved != prev.Reserved || mw.base != max(last, prev.Reserved):
		m.fatalf("writer opened at %d (Opened %+v after %d), stream stored reserved %d after %d", mw.base, st, openLast, prev.Reserved, last)
	}
	switch {
	case errors.Is(perr, journal.ErrNotFound):
		m.seen["log.created"]++
	case mw.base > last:
		m.seen["log.pastreservation"]++
	default:
		m.seen["log.continued"]++
	}
	x.w = mw
	m.logs = append(m.logs, mw)
	return true
}

// newStream is the model of a stream nobody wrote yet.
func newStream(id string) *mstream {
	return &mstream{id: id, handed: map[int64]string{}, durable: map[int64]bool{}, fenced: map[int64]bool{}}
}

// logStep opens r's log with a step of x that records the stream's id and creates the
// stream in its write.
func (m *model) logStep(x *exec, opts journal.LogOptions) {
	r := x.r
	id := "st-" + r.id
	valid := m.valid(x)
	m.logf("%s opens the log of %s in step %d (epoch %d, valid %v, reserve ahead %d)", x.inst.owner, r.id, x.next, x.epoch, valid, opts.ReserveAhead)
	done := m.faultOf(x, "InsertStep")
	w, err := x.run.CreateLogStep(m.e.ctx, "log", func() journal.Stream { return journal.Stream{ID: id, Flow: "f"} }, opts)
	done()
	x.next++
	if !valid {
		if !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("CreateLogStep without the lease: %v", err)
		}
		x.ended = true
		if _, err := m.e.d.GetStream(m.e.ctx, id); !errors.Is(err, journal.ErrNotFound) {
			m.fatalf("a refused CreateLogStep created its stream (err %v)", err)
		}
		return
	}
	if err != nil {
		m.fatalf("CreateLogStep: %v", err)
	}
	r.steps = append(r.steps, mstep{name: "log", result: json.RawMessage(strconv.Quote(id))})
	x.local++
	st, last := w.Opened()
	// A log a step opens reserves nothing: its first event is stored before its seq is
	// handed out.
	if w.StreamID() != id || w.LastSeq() != 0 || last != 0 || st.RunID != r.id || st.Reserved != 0 {
		m.fatalf("CreateLogStep opened %s after %d (Opened %+v after %d)", w.StreamID(), w.LastSeq(), st, last)
	}
	m.seen["log.createdbystep"]++
	r.stream = newStream(id)
	mw := &mwriter{w: w, x: x, s: r.stream}
	x.w = mw
	m.logs = append(m.logs, mw)
}

// openLogs returns the writers of live executions that are not closed, mostly only
// those of executions the journal still runs.
func (m *model) openLogs() []*mwriter {
	var out, ended []*mwriter
	for _, w := range m.logs {
		switch {
		case w.closed || w.x.crashed:
		case w.x.ended:
			ended = append(ended, w)
		default:
			out = append(out, w)
		}
	}
	if len(out) == 0 || m.rng.IntN(5) == 0 {
		out = append(out, ended...)
	}
	return out
}

func (m *model) opWrite() bool {
	ws := m.openLogs()
	if len(ws) == 0 {
		return false
	}
	m.write(pick(m, ws))
	return true
}

// write feeds one event to w and checks the seq it returns.
func (m *model) write(w *mwriter) {
	n := m.next()
	delta := m.rng.IntN(3) == 0
	var ev string
	if delta {
		if m.rng.IntN(3) == 0 {
			w.msg = n
		}
		ev = fmt.Sprintf(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m%d","delta":"d%d."}`, w.msg, n)
	} else {
		ev = fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"e%d"}`, n)
	}
	valid := m.valid(w.x) && !w.x.ended
	m.touch(w.x.r)
	m.logf("%s writes %s to %s (valid %v)", w.x.inst.owner, ev, w.s.id, valid)
	done := m.faultOf(w.x, "AppendEvents")
	seq, err := w.w.Write(m.e.ctx, json.RawMessage(ev))
	done()
	// A writer of an execution that lost its lease may still hand out seqs within its
	// reservation; past it, or at a commit, it fails.
	switch {
	case w.closed:
		if err == nil {
			m.fatalf("Write to a closed writer succeeded")
		}
		return
	case err != nil:
		if valid || !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("Write: %v (valid %v)", err, valid)
		}
		m.seen["write.fenced"]++
		m.lost(w.x, err)
		return
	}
	if delta {
		if seq != 0 {
			m.fatalf("a delta got seq %d", seq)
		}
		w.deltas += fmt.Sprintf("d%d.", n)
		return
	}
	if seq != w.w.LastSeq() || seq <= w.base || len(w.handed) > 0 && seq <= w.handed[len(w.handed)-1] {
		m.fatalf("Write returned seq %d (writer's last %d, base %d, handed %v)", seq, w.w.LastSeq(), w.base, w.handed)
	}
	if old, ok := w.s.handed[seq]; ok {
		m.fatalf("stream %s: seq %d handed out again, for %s; it was handed out for %s", w.s.id, seq, ev, old)
	}
	w.s.handed[seq] = ev
	w.handed = append(w.handed, seq)
	m.logf("  → seq %d", seq)
	if valid {
		m.seen["write.seq"]++
	} else {
		m.seen["write.seqwithoutlease"]++
		w.s.fenced[seq] = true
	}
	// A seq is handed out only once a stored reservation (or row) covers it; finishing a
	// stream keeps its reservation, so this holds for finished streams too.
	st, serr := m.e.d.GetStream(m.e.ctx, w.s.id)
	last, lerr := m.e.d.LastSeq(m.e.ctx, w.s.id)
	if serr != nil || lerr != nil {
		m.fatalf("reading the stream: %v %v", serr, lerr)
	}
	if seq > max(last, st.Reserved) {
		m.fatalf("stream %s: Write returned seq %d; stored are rows to %d and a reservation to %d (valid writer %v)", w.s.id, seq, last, st.Reserved, valid)
	}
}

// commit runs a call that stores everything w queued (Flush, Close, Finish) and checks it.
func (m *model) commit(w *mwriter, what string, call func() error, closes bool) {
	valid := m.valid(w.x) && !w.x.ended
	m.touch(w.x.r)
	m.logf("%s %s %s (valid %v)", w.x.inst.owner, what, w.s.id, valid)
	method := "AppendEvents"
	if what == "finishes" || what == "ends" {
		method = "FinishStream"
	}
	done := m.faultOf(w.x, method)
	err := call()
	done()
	wasClosed := w.closed
	if closes {
		w.closed = true
		if w.x.w == w {
			w.x.w = nil
		}
	}
	switch {
	case wasClosed:
	case err != nil:
		if valid || !errors.Is(err, journal.ErrLeaseLost) {
			m.fatalf("%s: %v (valid %v)", what, err, valid)
		}
		m.seen["commit.fenced"]++
		m.lost(w.x, err)
	case valid:
		m.seen["commit.stored"]++
		m.stored(w, what)
	}
}

// stored checks, after a call of a valid writer's execution that stored everything the
// writer queued, that every row it made is stored, and marks them durable.
func (m *model) stored(w *mwriter, after string) {
	last := w.w.LastSeq()
	rows, err := m.e.d.ReadEvents(m.e.ctx, w.s.id, w.base, int(last-w.base)+1)
	if err != nil {
		m.fatalf("ReadEvents: %v", err)
	}
	var deltas strings.Builder
	for i, row := range rows {
		if row.Seq > last {
			break
		}
		if row.Seq != w.base+int64(i)+1 {
			m.fatalf("after %s, stream %s holds %v for the writer's seqs %d..%d", after, w.s.id, seqsOf(rows), w.base+1, last)
		}
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if json.Unmarshal(row.Event, &ev) == nil && ev.Type == "TEXT_MESSAGE_CONTENT" {
			deltas.WriteString(ev.Delta)
		}
		w.s.durable[row.Seq] = true
	}
	if int64(len(rows)) < last-w.base {
		m.fatalf("after %s, stream %s holds %v; want every seq %d..%d", after, w.s.id, seqsOf(rows), w.base+1, last)
	}
	if deltas.String() != w.deltas {
		m.fatalf("after %s, stream %s stores the deltas %q; written %q", after, w.s.id, deltas.String(), w.deltas)
	}
}

func (m *model) opFlush() bool {
	ws := m.openLogs()
	if len(ws) == 0 {
		return false
	}
	w := pick(m, ws)
	m.commit(w, "flushes", func() error { return w.w.Flush(m.e.ctx) }, false)
	return true
}

func (m *model) opCloseLog() bool {
	ws := m.openLogs()
	if len(ws) == 0 {
		return false
	}
	w := pick(m, ws)
	valid := m.valid(w.x) && !w.x.ended
	m.commit(w, "closes", func() error { return w.w.Close(m.e.ctx) }, true)
	if valid {
		// The exact last seq is reserved: the next writer continues right after it.
		st, err := m.e.d.GetStream(m.e.ctx, w.s.id)
		last, lerr := m.e.d.LastSeq(m.e.ctx, w.s.id)
		if err != nil || lerr != nil || max(st.Reserved, last) != w.w.LastSeq() {
			m.fatalf("after Close, stream %s reserves %d after row %d (err %v %v), want the last seq %d", w.s.id, st.Reserved, last, err, lerr, w.w.LastSeq())
		}
	}
	return true
}

func (m *model) opFinishLog() bool {
	ws := m.openLogs()
	if len(ws) == 0 {
		return false
	}
	w := pick(m, ws)
	valid := m.valid(w.x) && !w.x.ended
	if m.rng.IntN(2) == 0 {
		m.commit(w, "finishes", func() error { return w.w.Finish(m.e.ctx) }, true)
	} else {
		ev := fmt.Sprintf(`{"type":"RUN_FINISHED","n":%d}`, m.next())
		m.commit(w, "ends", func() error {
			seq, err := w.w.WriteEnd(m.e.ctx, "RUN_FINISHED", json.RawMessage(ev))
			if err == nil {
				if old, ok := w.s.handed[seq]; ok {
					m.fatalf("stream %s: WriteEnd's seq %d was handed out for %s", w.s.id, seq, old)
				}
				w.s.handed[seq] = ev
				w.handed = append(w.handed, seq)
			}
			return err
		}, true)
	}
	if valid {
		w.s.finished = true
	}
	return true
}

// opZombie makes a crashed instance's execution, which lost its run since, try to write.
func (m *model) opZombie() bool {
	var xs []*exec
	for _, x := range m.execs {
		if x.crashed && !m.valid(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return false
	}
	x := pick(m, xs)
	m.seen["zombie"]++
	m.logf("zombie of %s (epoch %d of %s):", x.inst.owner, x.epoch, x.r.id)
	switch w := x.w; {
	case w != nil && !w.closed && m.rng.IntN(2) == 0:
		m.write(w)
	case w != nil && !w.closed && m.rng.IntN(2) == 0:
		m.commit(w, "flushes", func() error { return w.w.Flush(m.e.ctx) }, false)
	case m.rng.IntN(4) == 0:
		m.end(x, journal.StatusCompleted)
	default:
		m.step(x)
	}
	return true
}

// drain ends every run: the live executions close their logs and complete, then the
// instances renew (so stale executions let go) and recover the rest until all are final.
func (m *model) drain() {
	m.logf("drain")
	m.noFaults = true
	for round := 0; len(m.nonFinal()) > 0; round++ {
		if round == 20 {
			var left []string
			for _, r := range m.nonFinal() {
				left = append(left, fmt.Sprintf("%s (%s, owner %q)", r.id, r.status, r.owner))
			}
			m.fatalf("runs never end: %v", left)
		}
		for _, x := range m.live(false) {
			if !m.valid(x) {
				continue
			}
			if x.w != nil {
				w := x.w
				m.commit(w, "closes", func() error { return w.w.Close(m.e.ctx) }, true)
			}
			m.end(x, journal.StatusCompleted)
		}
		m.e.clock.Advance(2 * time.Hour)
		for _, inst := range m.insts {
			m.op++
			m.renewBy(inst)
		}
		m.op++
		m.recoverBy(m.insts[round%len(m.insts)])
		m.check(true)
	}
}

// ---- the check of the store against the model ----

func sameDecision(a, b *journal.Decision) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Kind == b.Kind && jsonEq(a.Payload, b.Payload) && a.DecidedAt.Equal(b.DecidedAt)
}

// touch marks r as worked on by the current operation.
func (m *model) touch(r *mrun) { m.touched[r] = true }

// check compares what is stored with the model: the runs the last operation touched, or
// all of them.
func (m *model) check(all bool) {
	m.t.Helper()
	ctx := m.e.ctx
	touched := m.touched
	m.touched = map[*mrun]bool{}
	for _, r := range m.runs {
		if !all && !touched[r] {
			continue
		}
		rec, err := m.e.d.GetRun(ctx, r.id)
		if err != nil {
			m.fatalf("GetRun %s: %v", r.id, err)
		}
		if rec.Status != r.status || rec.LeaseOwner != r.owner || rec.Epoch != r.epoch ||
			(r.owner != "" && !rec.LeaseExpires.Equal(r.expires)) {
			m.fatalf("run %s stored %s owner %q epoch %d expires %v; want %s owner %q epoch %d expires %v",
				r.id, rec.Status, rec.LeaseOwner, rec.Epoch, rec.LeaseExpires, r.status, r.owner, r.epoch, r.expires)
		}
		if r.status == journal.StatusCompleted && !jsonEq(rec.Output, r.output) || r.status == journal.StatusFailed && rec.Error != r.errMsg {
			m.fatalf("final run %s stored output %s error %q; want %s %q", r.id, rec.Output, rec.Error, r.output, r.errMsg)
		}
		steps, err := m.e.d.LoadSteps(ctx, r.id)
		if err != nil {
			m.fatalf("LoadSteps: %v", err)
		}
		if len(steps) != len(r.steps) {
			m.fatalf("run %s stores %d steps %+v; want %d", r.id, len(steps), steps, len(r.steps))
		}
		for i, s := range steps {
			want := r.steps[i]
			if s.Position != i || s.Name != want.name || s.Error != want.errMsg || (want.errMsg == "" && !jsonEq(s.Result, want.result)) {
				m.fatalf("run %s step %d stored %+v; want %+v", r.id, i, s, want)
			}
		}
		parks, err := m.e.d.ListParks(ctx, r.id)
		if err != nil {
			m.fatalf("ListParks: %v", err)
		}
		want := slices.Clone(r.parks)
		slices.SortFunc(want, func(a, b *mpark) int { return strings.Compare(a.key, b.key) })
		if len(parks) != len(want) {
			m.fatalf("run %s stores %d parks; want %d", r.id, len(parks), len(want))
		}
		for i, p := range parks {
			if p.Key != want[i].key || !p.Deadline.Equal(want[i].deadline) || !sameDecision(p.Decision, want[i].decision) {
				m.fatalf("run %s park %s stored deadline %v decision %+v; want %s %v %+v", r.id, p.Key, p.Deadline, p.Decision, want[i].key, want[i].deadline, want[i].decision)
			}
		}
		if s := r.stream; s != nil {
			m.checkStream(s)
		}
	}
}

// checkStream checks a stream's rows: seqs increase, a seq handed out is stored with its
// event or not at all, and every row that had to be stored is.
func (m *model) checkStream(s *mstream) {
	st, rows, err := m.e.d.ReadStream(m.e.ctx, s.id, 0, 100000)
	if err != nil {
		m.fatalf("ReadStream %s: %v", s.id, err)
	}
	if s.finished && st.FinishedAt == nil {
		m.fatalf("stream %s is not finished", s.id)
	}
	stored := map[int64]bool{}
	for i, row := range rows {
		if i > 0 && row.Seq <= rows[i-1].Seq {
			m.fatalf("stream %s: seqs do not increase: %v", s.id, seqsOf(rows))
		}
		stored[row.Seq] = true
		if ev, ok := s.handed[row.Seq]; ok && !jsonEq(row.Event, []byte(ev)) {
			m.fatalf("stream %s: seq %d was handed out for %s but stores %s", s.id, row.Seq, ev, row.Event)
		}
	}
	for seq := range s.durable {
		if !stored[seq] {
			m.fatalf("stream %s: row %d was stored and is gone (%v)", s.id, seq, seqsOf(rows))
		}
	}
	for seq := range s.fenced {
		if stored[seq] {
			m.fatalf("stream %s: row %d of a writer that had lost its lease is stored", s.id, seq)
		}
	}
}
