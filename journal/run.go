package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bbc28f59/engine/internal/callkey"
)

// Run is one execution of a durable run while this instance holds its lease. Steps are
// counted per execution: the n-th call to [Run.Step] is position n, replayed from the
// journal when recorded and executed (then recorded) otherwise. Every write is fenced by
// the lease; after the lease is lost every write returns [ErrLeaseLost].
//
// A Run is used by one handler goroutine; its methods are safe for concurrent use but
// concurrent steps get positions in call order, which is rarely deterministic.
type Run struct {
	j *Journal

	ID        string
	Flow      string
	Input     json.RawMessage
	Principal json.RawMessage
	Tenant    string
	CreatedAt time.Time

	calls *callkey.Scope // this execution's calls made outside its steps

	mu      sync.Mutex
	status  Status
	fence   Fence
	steps   []StepRecord
	next    int
	parks   []ParkRecord     // few per run: a slice beats a map
	logs    []*LogWriter     // open writers of the run's streams, committed with its steps
	broken  error            // set when a step was not recorded: the execution records no more
	cursors map[string]int64 // channel topic → seq of the last message received
	waits   map[string]int   // signal topic → waits made by this execution
	done    bool             // lease released, lost, or run ended
	stopped bool             // ended because it was stopped: Complete stores cancelled
}

func newRun(j *Journal, rec RunRecord, steps []StepRecord, parks []ParkRecord) *Run {
	r := &Run{j: j, ID: rec.ID, Flow: rec.Flow, Input: rec.Input, Principal: rec.Principal,
		Tenant: rec.Tenant, CreatedAt: rec.CreatedAt, status: rec.Status,
		fence: Fence{RunID: rec.ID, Owner: rec.LeaseOwner, Epoch: rec.Epoch},
		steps: steps, parks: parks, calls: callkey.ForRun(rec.ID)}
	return r
}

// CallContext returns ctx carrying this execution's call scope: a flow the run's
// handler calls with it, outside a step, gets an idempotency key (and, when durable, a
// run id) derived from this run and the order of such calls, the same on every
// execution. Inside [Run.Step] the step's context carries the step's scope instead.
func (r *Run) CallContext(ctx context.Context) context.Context {
	return callkey.With(ctx, r.calls)
}

// Status returns the run's status as this execution last wrote or loaded it.
func (r *Run) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// Epoch returns the fencing epoch of this execution's lease: 1 for the first execution,
// incremented by every claim, so it doubles as an attempt counter.
func (r *Run) Epoch() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fence.Epoch
}

// Fence returns the lease this execution writes under (for [Journal.AppendEvents]).
func (r *Run) Fence() Fence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fence
}

// Replaying reports whether the next [Run.Step] will be served from the journal.
func (r *Run) Replaying() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next < len(r.steps)
}

// Decision returns the stored decision of the park key as loaded or recorded by this
// execution, or nil when pending or unknown.
func (r *Run) Decision(key string) *Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.park(key); p != nil && p.Decision != nil {
		d := *p.Decision
		return &d
	}
	return nil
}

// Parks returns the run's parks as this execution loaded or recorded them.
func (r *Run) Parks() []ParkRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ParkRecord, len(r.parks))
	for i, p := range r.parks {
		out[i] = p
		if p.Decision != nil {
			d := *p.Decision
			out[i].Decision = &d
		}
	}
	return out
}

// park finds the loaded park of key. Caller holds r.mu.
func (r *Run) park(key string) *ParkRecord {
	for i := range r.parks {
		if r.parks[i].Key == key {
			return &r.parks[i]
		}
	}
	return nil
}

// Step runs fn once across all executions of the run. The first execution runs fn and
// records its result; a replay returns the recorded result without calling fn. A replay
// that asks for a different name at a position fails with [ErrNonDeterministic].
//
// An ordinary error from fn is recorded too (replays return it as a [*StepError] with the
// same message) so a replay takes the same path. Context cancellation, deadline and lease
// loss are never recorded: the step runs again on the next execution.
//
// fn may run more than once only when its process dies (or loses the lease) after fn
// started and before its result was recorded. Every execution of the step sees the same
// idempotency key in its context, "<run id>-<position>", so an external effect can be
// made exactly once. The step's record is written together with the rows its run's
// event logs queued meanwhile, so a recorded step never lacks its events; a write that
// fails while the database is away is retried (see [Options.WriteRetry]), never
// recomputed.
func (r *Run) Step(ctx context.Context, name string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	return r.step(ctx, name, fn, nil)
}

// step is [Run.Step]; opens, when set and fn succeeded, gives the streams to create in
// the step's write.
func (r *Run) step(ctx context.Context, name string, fn func(ctx context.Context) (json.RawMessage, error), opens func() []Stream) (json.RawMessage, error) {
	if fn == nil || name == "" {
		return nil, errors.New("journal: Step needs a name and a function")
	}
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return nil, ErrLeaseLost
	}
	if r.broken != nil {
		r.mu.Unlock()
		return nil, r.broken
	}
	pos := r.next
	r.next++
	if pos < len(r.steps) {
		r.mu.Unlock()
		return r.replayed(pos, name)
	}
	f := r.fence
	r.mu.Unlock()

	out, err := fn(callkey.With(ctx, callkey.ForStep(r.ID, pos)))
	return r.record(ctx, pos, f, name, out, err, opens)
}

// replayed is the recorded step at position pos (recorded steps are only appended to),
// asked for again as name.
//
// It and [Run.record] are kept out of step so that the frame under a step's function,
// which stays on the stack while fn waits (an agent's model call waits there for its
// model), is small: a goroutine's stack shrinks back only when little of it is in use.
//
//go:noinline
func (r *Run) replayed(pos int, name string) (json.RawMessage, error) {
	r.mu.Lock()
	s := r.steps[pos]
	r.mu.Unlock()
	if s.Name != name {
		return nil, fmt.Errorf("%w: run %s position %d recorded step %q, replay asked for %q",
			ErrNonDeterministic, r.ID, pos, s.Name, name)
	}
	if s.Error != "" {
		return nil, &StepError{Step: s.Name, Message: s.Error}
	}
	return s.Result, nil
}

// record writes the step at position pos, which fn ran to out and err, under fence f.
//
//go:noinline
func (r *Run) record(ctx context.Context, pos int, f Fence, name string, out json.RawMessage, err error, opens func() []Stream) (json.RawMessage, error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrLeaseLost) || ctx.Err() != nil) {
		r.unrecorded(pos, err)
		return nil, err
	}
	rec := StepRecord{RunID: r.ID, Position: pos, Name: name, Result: out, CreatedAt: r.j.now()}
	if err != nil {
		rec.Error = err.Error()
		if rec.Error == "" {
			rec.Error = "error"
		}
		rec.Result = nil
	}
	var w StepWrites
	if err == nil && opens != nil {
		w.Opens = opens()
	}
	logs := r.stageLogs()
	var ids []string
	for _, s := range logs {
		w.Appends = append(w.Appends, s.a)
		if len(s.a.Rows) > 0 {
			ids = append(ids, s.a.StreamID)
		}
	}
	wctx := context.WithoutCancel(ctx)
	r.j.tails.begin(ids)
	werr := r.j.persist(wctx, "step "+name, func() error { return r.j.d.InsertStep(wctx, f, rec, w) },
		func(err error) bool { return errors.Is(err, ErrStepExists) })
	for _, s := range logs {
		s.w.settle(s.a, werr)
	}
	r.j.tails.end(ids)
	if werr != nil {
		if errors.Is(werr, ErrLeaseLost) {
			r.lose()
		}
		r.unrecorded(pos, werr)
		return nil, werr
	}
	r.mu.Lock()
	r.steps = append(r.steps, rec)
	r.mu.Unlock()
	return out, err
}

// unrecorded ends the execution's steps after the step at position pos was not
// recorded: a later step would be recorded at pos+1 or, given pos back, at pos, and a
// replay, which runs the unrecorded step again, would find either at the wrong place.
// Every later step fails; the run resumes from its recorded steps on its next execution.
func (r *Run) unrecorded(pos int, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken == nil {
		r.broken = fmt.Errorf("journal: run %s: the step at position %d was not recorded (%w); this execution records no further step", r.ID, pos, cause)
	}
}

// staged is a log writer held for a step's write, with the rows it gives it.
type staged struct {
	w *LogWriter
	a Append
}

// stageLogs holds every open writer of the run's streams that has rows queued and takes
// them for the step's write; each is settled after it.
func (r *Run) stageLogs() []staged {
	r.mu.Lock()
	logs := r.logs
	r.mu.Unlock()
	var out []staged
	for _, w := range logs {
		if a, ok := w.stage(); ok {
			out = append(out, staged{w: w, a: a})
		}
	}
	return out
}

// attach registers a writer of one of the run's streams; detach forgets it.
func (r *Run) attach(w *LogWriter) {
	r.mu.Lock()
	r.logs = append(r.logs, w)
	if r.done {
		// The lease was lost while the writer opened: it holds nothing.
		r.j.tails.release(w.tail, w)
	}
	r.mu.Unlock()
}

func (r *Run) detach(w *LogWriter) {
	r.mu.Lock()
	r.logs = slices.DeleteFunc(r.logs, func(x *LogWriter) bool { return x == w })
	r.mu.Unlock()
}

// Park records (idempotently) that the run waits for a decision under key and returns the
// stored decision, or nil while pending. A zero deadline means now plus
// [Options.ApprovalDeadline]. Several parks may be open; the run becomes runnable when all
// are decided. After parking, the caller returns through [Run.Suspend].
func (r *Run) Park(ctx context.Context, key string, deadline time.Time, payload json.RawMessage) (*Decision, error) {
	return r.parkOn(ctx, ParkRecord{Key: key, Deadline: deadline, Payload: payload})
}

// parkOn is [Run.Park] of rec, which may wait for a topic.
func (r *Run) parkOn(ctx context.Context, rec ParkRecord) (*Decision, error) {
	if rec.Key == "" {
		return nil, errors.New("journal: Park needs a key")
	}
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return nil, ErrLeaseLost
	}
	if p := r.park(rec.Key); p != nil && p.Decision != nil {
		d := *p.Decision
		r.mu.Unlock()
		return &d, nil
	}
	f := r.fence
	r.mu.Unlock()
	now := r.j.now()
	if rec.Deadline.IsZero() {
		rec.Deadline = now.Add(r.j.opts.ApprovalDeadline)
	}
	rec.RunID, rec.CreatedAt = r.ID, now
	if t := TracerOf(ctx); t != nil {
		rec.Trace = t.TraceContext(ctx)
	}
	var p ParkRecord
	wctx := context.WithoutCancel(ctx)
	err := r.j.persist(wctx, "park "+rec.Key, func() (err error) { // idempotent: retried as it is
		p, err = r.j.d.InsertPark(wctx, f, rec)
		return err
	}, nil)
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			r.lose()
		}
		return nil, err
	}
	r.mu.Lock()
	if old := r.park(rec.Key); old != nil {
		*old = p
	} else {
		r.parks = append(r.parks, p)
	}
	r.mu.Unlock()
	if p.Decision != nil {
		d := *p.Decision
		return &d, nil
	}
	return nil, nil
}

// Suspend marks the run parked and releases the lease; the handler must return right
// after. If every park was already decided meanwhile, the run is resumed at once.
func (r *Run) Suspend(ctx context.Context) error {
	var runnable, answered bool // every park decided, as the suspending write saw
	err := r.finishWith(ctx, RunUpdate{Status: StatusParked}, func(ctx context.Context, f Fence, _ RunUpdate, now time.Time) (err error) {
		runnable, err = suspendRun(ctx, r.j.d, f, now)
		answered = err == nil
		return err
	})
	if err != nil {
		return err
	}
	if !answered { // the write was stored, but its answer was lost
		parks, err := r.j.d.ListParks(ctx, r.ID)
		if err != nil {
			return nil // the recovery loop will notice a runnable run
		}
		runnable = !slices.ContainsFunc(parks, func(p ParkRecord) bool { return p.Decision == nil })
	}
	if runnable {
		r.j.tryResume(ctx, r.ID)
	}
	return nil
}

// Complete stores the output, marks the run completed (cancelled after
// [Run.MarkStopped]) and releases the lease.
func (r *Run) Complete(ctx context.Context, output json.RawMessage) error {
	r.mu.Lock()
	status := StatusCompleted
	if r.stopped {
		status = StatusCancelled
	}
	r.mu.Unlock()
	return r.finish(ctx, RunUpdate{Status: status, Output: output})
}

// Fail stores msg, marks the run failed and releases the lease.
func (r *Run) Fail(ctx context.Context, msg string) error {
	return r.finish(ctx, RunUpdate{Status: StatusFailed, Error: msg})
}

// FailWith is [Run.Fail] that also stores detail, the failure as the run's caller saw
// it (JSON), in the run's output, so a caller that finds the run ended can answer the same.
func (r *Run) FailWith(ctx context.Context, msg string, detail json.RawMessage) error {
	return r.finish(ctx, RunUpdate{Status: StatusFailed, Error: msg, Output: detail})
}

// Release gives the lease up without changing the status, so another instance (or the
// recovery loop) can claim the run at once.
func (r *Run) Release(ctx context.Context) error {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return nil
	}
	f := r.fence
	r.mu.Unlock()
	wctx := context.WithoutCancel(ctx)
	err := r.j.persist(wctx, "release run", func() error { return r.j.d.ReleaseRun(wctx, f) }, nil)
	r.lose()
	if errors.Is(err, ErrLeaseLost) {
		return nil
	}
	return err
}

// finish performs a fenced status write that ends this execution's lease.
func (r *Run) finish(ctx context.Context, u RunUpdate) error {
	return r.finishWith(ctx, u, r.j.d.UpdateRun)
}

// finishWith is finish with write storing u.
func (r *Run) finishWith(ctx context.Context, u RunUpdate, write func(ctx context.Context, f Fence, u RunUpdate, now time.Time) error) error {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return ErrLeaseLost
	}
	f := r.fence
	r.mu.Unlock()
	wctx, now := context.WithoutCancel(ctx), r.j.now()
	err := r.j.persist(wctx, "end run as "+string(u.Status), func() error { return write(wctx, f, u, now) },
		func(err error) bool {
			// The lease is gone: after a lost acknowledgement, because the update did it.
			got, gerr := r.j.d.GetRun(wctx, r.ID)
			return errors.Is(err, ErrLeaseLost) && gerr == nil && got.Status == u.Status && got.LeaseOwner == "" &&
				got.Epoch == f.Epoch && got.UpdatedAt.Equal(now)
		})
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		return err
	}
	r.mu.Lock()
	if err == nil {
		r.status = u.Status
	}
	r.mu.Unlock()
	r.lose()
	return err
}

// lose marks this execution as no longer holding the lease.
func (r *Run) lose() {
	r.mu.Lock()
	r.done = true
	for _, w := range r.logs {
		// Its writers store nothing more: another instance may continue their streams.
		r.j.tails.release(w.tail, w)
	}
	r.mu.Unlock()
	r.j.drop(r)
}

// ended reports whether the lease is no longer held by this execution.
func (r *Run) ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}

// fenceIs reports whether f is the fence of this execution.
func (r *Run) fenceIs(f Fence) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fence == f
}

// CreateLogStep is [Run.Step] for the step that begins an event log of the run, such as
// an agent run's: the step records the id of a new stream, as a JSON string, and the
// driver creates the stream in the same write, so opening the log costs the run no write
// of its own. newStream gives the stream; its RunID is set to this run's. It returns a
// writer on the new stream. On replay newStream is asked again for the stream's other
// fields, the recorded id replaces its id, and the stream is continued as
// [Journal.CreateLog] does (or created, for a step recorded without one).
//
// Unlike [Journal.CreateLog], the new stream reserves no seqs: the writer's first
// structural event is committed before its seq is returned (one write), so the log a
// takeover continues has begun, and the client that was shown its first ids and a
// follower of what is stored see the same run.
func (r *Run) CreateLogStep(ctx context.Context, name string, newStream func() Stream, opts LogOptions) (*LogWriter, error) {
	if err := opts.Policy.check(); err != nil {
		return nil, err
	}
	opts.defaults()
	var s Stream
	fresh := false
	out, err := r.step(ctx, name, func(context.Context) (json.RawMessage, error) {
		s = newStream()
		if s.ID == "" {
			return nil, errors.New("journal: CreateLogStep: the stream needs an id")
		}
		if unstorable(s.ThreadID) {
			return nil, ErrUnstorableID
		}
		// Nothing is reserved yet: the log's first event is stored before its seq is
		// handed out, so a run taken over always continues a log that began (a client
		// shown that first event and a follower of the stored log then see one history).
		s.RunID, s.CreatedAt, s.FinishedAt, s.Reserved = r.ID, r.j.now(), nil, 0
		fresh = true
		return json.Marshal(s.ID)
	}, func() []Stream { return []Stream{s} })
	if err != nil {
		return nil, err
	}
	if fresh {
		return r.j.openLogWriter(ctx, s, r, 0, true, opts)
	}
	return r.reopenLog(ctx, name, out, newStream, opts)
}

// reopenLog is CreateLogStep replaying its step, which recorded out: the log is the
// stream the step created. It is kept out of CreateLogStep for the reason of
// [Run.replayed].
//
//go:noinline
func (r *Run) reopenLog(ctx context.Context, name string, out json.RawMessage, newStream func() Stream, opts LogOptions) (*LogWriter, error) {
	var id string
	if err := json.Unmarshal(out, &id); err != nil || id == "" {
		return nil, fmt.Errorf("journal: step %q of run %s recorded %s, not a stream id", name, r.ID, out)
	}
	s := newStream()
	s.ID, s.RunID = id, r.ID
	return r.j.CreateLog(ctx, s, r, opts)
}
