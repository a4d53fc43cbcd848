package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/bbc28f59/engine/internal/callkey"
	"github.com/bbc28f59/engine/journal"
)

// ErrParked is returned (possibly wrapped) by a durable handler that parked awaiting a
// decision: the run is suspended, its lease released, and it resumes when every open park
// is decided or times out.
var ErrParked = errors.New("engine: run parked awaiting a decision")

// runKey holds a durable call's journal run.
var runKey = NewKey[*journal.Run]("engine.run")

// WithJournal runs durable flows under j: the run record is written before the handler
// starts, [Step] results are recorded and replayed, handlers may [Park], and the journal
// resumes runs after a decision, a timeout or a dead owner's lease expiry. [App.Start]
// starts the journal's background work and [App.Close] stops it.
func WithJournal(j *journal.Journal) Option {
	return optionFunc(func(a *App) error {
		if j == nil {
			return errors.New("engine: WithJournal: nil journal")
		}
		if a.journal != nil {
			return errors.New("engine: WithJournal: a journal is already set")
		}
		a.journal = j
		a.durableRun = journalRunner{a: a, j: j}
		j.SetResumer(a.resume)
		a.startHooks = append(a.startHooks, func(ctx context.Context, _ *App) error { return j.Start(ctx) })
		a.closeHooks = append(a.closeHooks, func(ctx context.Context, _ *App) error { return j.Close(ctx) })
		return nil
	})
}

// Journal returns the app's journal, or nil.
func (a *App) Journal() *journal.Journal { return a.journal }

// RunOf returns the journal run of a durable call, or nil outside one.
func RunOf(fx *Fx) *journal.Run {
	r, _ := runKey.Call(fx)
	return r
}

// Step runs fn once across all executions of a durable run: the first execution records
// its result, a replay returns the recorded result without calling fn, and a replay that
// asks for another step at the same position fails loudly. Outside a durable run it just
// calls fn.
func Step[T any](fx *Fx, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	run := RunOf(fx)
	if run == nil {
		return fn(fx.Context())
	}
	var out T
	raw, err := run.Step(fx.Context(), name, func(ctx context.Context) (json.RawMessage, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	})
	if err != nil {
		return out, err
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return out, fmt.Errorf("engine: step %q: decoding recorded result: %w", name, err)
		}
	}
	return out, nil
}

// Park records that the durable run waits for a decision under key until deadline (zero
// means the journal's default, 24 h) and returns the stored decision, or nil while it is
// pending; a handler that gets nil returns [ErrParked]. A flow that is not durable cannot
// park: the error names it.
func Park(fx *Fx, key string, deadline time.Time, payload any) (*journal.Decision, error) {
	run := RunOf(fx)
	if run == nil {
		return nil, fmt.Errorf("engine: flow %s cannot park: it is not durable (declare it with engine.Durable())", fx.flow.ID())
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return run.Park(fx.Context(), key, deadline, raw)
}

// JournalError maps the journal's sentinel errors to the envelope's codes: NotFound,
// Conflict, and JournalLeaseBusy with a Retry-After header. Other errors pass unchanged.
func JournalError(err error) error {
	var busy *journal.LeaseBusyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &busy):
		secs := int64((busy.RetryAfter + time.Second - 1) / time.Second)
		if secs < 1 {
			secs = 1
		}
		return NewError(CodeJournalLeaseBusy, map[string]any{
			"message":      "the run is locked by another worker; retry after the delay",
			"retryAfterMs": busy.RetryAfter.Milliseconds(),
		}).WithHeader("Retry-After", strconv.FormatInt(secs, 10)).WithCause(err)
	case errors.Is(err, journal.ErrConflict):
		return NewError(CodeConflict, map[string]any{"message": "the value is already in use: a decision is already stored"}).WithCause(err)
	case errors.Is(err, journal.ErrNotFound):
		return NewError(CodeNotFound, map[string]any{"message": "not found"}).WithCause(err)
	}
	return err
}

// journalRunner wraps durable handlers: it begins the run before the handler and ends it
// after, unless the call is a resumption that already holds the run.
type journalRunner struct {
	a *App
	j *journal.Journal
}

func (r journalRunner) Wrap(def *FlowDef, next HandlerFunc) HandlerFunc {
	return func(fx *Fx, in any) (any, error) {
		run := RunOf(fx)
		if run != nil { // a resumption: the journal claimed the run
			return r.execute(fx, run, next, in)
		}
		// A flow called by a durable run takes its run id from the call: a replay that
		// calls it again finds the run and attaches to it instead of starting another.
		id := ""
		if sc := callkey.From(fx.ctx); sc != nil && sc.TakeAsRun() {
			id = sc.Key()
		}
		input, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("engine: encoding input of durable flow %s: %w", def.ID(), err)
		}
		principal, err := json.Marshal(fx.principal)
		if err != nil {
			return nil, err
		}
		run, err = r.j.Begin(fx.Context(), journal.NewRun{ID: id, Flow: def.ID(), Input: input, Principal: principal, Tenant: fx.Tenant()})
		if errors.Is(err, journal.ErrConflict) && id != "" {
			return r.attach(fx, def, id, next, in)
		}
		if err != nil {
			return nil, fmt.Errorf("engine: beginning durable run of %s: %w", def.ID(), err)
		}
		return r.execute(fx, run, next, in)
	}
}

// execute runs the handler under run, which this instance holds, and records how the
// execution ended.
func (r journalRunner) execute(fx *Fx, run *journal.Run, next HandlerFunc, in any) (any, error) {
	runKey.Set(fx, run)
	fx.ctx = run.CallContext(fx.ctx)
	out, err := next(fx, in)
	if err == nil {
		if resp, ok := out.(Responder); ok {
			// The work goes on while the response is written (an agent stream): the
			// run ends when the responder does.
			return durableResponder{inner: resp, run: run, a: r.a}, nil
		}
	}
	return out, r.a.endRun(fx, run, out, err)
}

// attach joins the run a replayed call finds under its id: it returns the stored outcome
// of an ended run, resumes one nobody holds (its recorded steps replay), and waits while
// another execution holds it.
func (r journalRunner) attach(fx *Fx, def *FlowDef, id string, next HandlerFunc, in any) (any, error) {
	ctx := fx.Context()
	wait := 20 * time.Millisecond
	// Database trouble is waited out for a while: failing here would record the caller's
	// step as failed, for good, over a moment's outage.
	giveUp := time.Now().Add(time.Minute)
	pause := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			wait = min(2*wait, time.Second)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		rec, err := r.j.GetRun(ctx, id)
		if err != nil {
			if journal.IsTransient(err) && time.Now().Before(giveUp) {
				if perr := pause(wait); perr != nil {
					return nil, perr
				}
				continue
			}
			return nil, fmt.Errorf("engine: reading durable run %s of %s: %w", id, def.ID(), err)
		}
		if rec.Flow != def.ID() {
			return nil, fmt.Errorf("%w: run %s is a run of %s, the replay called %s", journal.ErrNonDeterministic, id, rec.Flow, def.ID())
		}
		switch rec.Status {
		case journal.StatusCompleted:
			if len(rec.Output) == 0 {
				return json.RawMessage("null"), nil
			}
			return rec.Output, nil
		case journal.StatusFailed:
			return nil, storedFailure(rec)
		}
		run, err := r.j.Claim(ctx, id)
		var busy *journal.LeaseBusyError
		switch {
		case err == nil:
			return r.execute(fx, run, next, in)
		case errors.Is(err, journal.ErrRunFinished):
			continue
		case errors.As(err, &busy):
			if perr := pause(min(wait, max(busy.RetryAfter, time.Millisecond))); perr != nil {
				return nil, perr
			}
		case journal.IsTransient(err) && time.Now().Before(giveUp):
			if perr := pause(wait); perr != nil {
				return nil, perr
			}
		default:
			return nil, fmt.Errorf("engine: resuming durable run %s of %s: %w", id, def.ID(), err)
		}
	}
}

// failureDetail is what a failed run stores beside its message: the error as its caller
// saw it when that was a declared or framework code, so a caller that attaches to the
// ended run gets the same answer.
func failureDetail(def *FlowDef, err error) json.RawMessage {
	e := AsError(err)
	if e == nil || e.Code == CodeInternal {
		return nil
	}
	if _, ok := declared(def, e.Code); !ok && !IsFrameworkCode(e.Code) {
		return nil
	}
	b, mErr := json.Marshal(struct {
		Code   string `json:"code"`
		Data   any    `json:"data"`
		Status int    `json:"status,omitempty"`
	}{e.Code, orEmpty(e.Data), e.Status})
	if mErr != nil {
		return nil
	}
	return b
}

// storedFailure rebuilds the error a failed run ended with.
func storedFailure(rec journal.RunRecord) error {
	var d struct {
		Code   string          `json:"code"`
		Data   json.RawMessage `json:"data"`
		Status int             `json:"status"`
	}
	if len(rec.Output) > 0 && json.Unmarshal(rec.Output, &d) == nil && d.Code != "" {
		return &Error{Code: d.Code, Data: d.Data, Status: d.Status}
	}
	return fmt.Errorf("engine: durable run %s of %s failed: %s", rec.ID, rec.Flow, rec.Error)
}

// Outcome is implemented by a [Responder] whose work runs while it responds (an agent
// stream): after Respond returns, the journal run ends with its result. An output of
// type json.RawMessage is stored as it is, so it must be valid JSON; any other output
// is stored as json.Marshal encodes it.
type Outcome interface {
	Outcome() (output any, err error)
}

// encodedOutput is an [Outcome]'s json.RawMessage, which endRun stores without
// encoding (and so re-validating) it again.
type encodedOutput json.RawMessage

type durableResponder struct {
	inner Responder
	run   *journal.Run
	a     *App
}

func (d durableResponder) Respond(fx *Fx, w http.ResponseWriter, r *http.Request) {
	d.inner.Respond(fx, w, r)
	var out any
	var err error
	if o, ok := d.inner.(Outcome); ok {
		out, err = o.Outcome()
		if raw, ok := out.(json.RawMessage); ok {
			out = encodedOutput(raw)
		}
	}
	if endErr := d.a.endRun(fx, d.run, out, err); endErr != nil && !errors.Is(endErr, ErrParked) {
		d.a.logger.Debug("engine: durable run ended with an error", "flow", fx.flow.ID(), "run", d.run.ID, "err", endErr)
	}
}

// endRun records how an execution of a durable run ended: parked, completed or failed.
func (a *App) endRun(fx *Fx, run *journal.Run, out any, err error) error {
	ctx := context.WithoutCancel(fx.Context())
	switch {
	case errors.Is(err, ErrParked):
		if sErr := run.Suspend(ctx); sErr != nil {
			a.logger.ErrorContext(ctx, "engine: suspending run", "run", run.ID, "err", sErr)
		}
		return err
	case errors.Is(err, journal.ErrLeaseLost):
		return err // another instance owns the run now; it records the end
	case err != nil:
		msg := err.Error()
		if e := AsError(err); e != nil {
			msg = e.Code + ": " + e.Message()
		}
		if fErr := run.FailWith(ctx, msg, failureDetail(fx.flow, err)); fErr != nil {
			a.logger.ErrorContext(ctx, "engine: failing run", "run", run.ID, "err", fErr)
		}
		return err
	}
	var raw json.RawMessage
	if enc, ok := out.(encodedOutput); ok {
		raw = json.RawMessage(enc)
	} else if b, mErr := json.Marshal(out); mErr == nil {
		raw = b
	}
	if cErr := run.Complete(ctx, raw); cErr != nil {
		a.logger.ErrorContext(ctx, "engine: completing run", "run", run.ID, "err", cErr)
	}
	return nil
}

// resume re-executes a durable run claimed by the journal: the same flow, input and
// principal, with the journal replaying recorded steps. Gates are not run again: they
// were passed when the run began. A streaming output is drained without a client; its
// events still reach the run's event log.
func (a *App) resume(ctx context.Context, run *journal.Run) {
	b, ok := a.bindings[run.Flow]
	if !ok || !b.def.durable {
		_ = run.Fail(ctx, "engine: flow "+run.Flow+" is not bound as a durable flow on this instance")
		return
	}
	var p *Principal
	if len(run.Principal) > 0 && string(run.Principal) != "null" {
		p = &Principal{}
		if err := json.Unmarshal(run.Principal, p); err != nil {
			_ = run.Fail(ctx, "engine: decoding the run's principal: "+err.Error())
			return
		}
	}
	fx := a.newFx(ctx, b.def, nil)
	fx.principal = p
	runKey.Set(fx, run)
	defer func() {
		if v := recover(); v != nil {
			a.logger.ErrorContext(ctx, "engine: panic resuming durable run", "flow", run.Flow, "run", run.ID, "panic", fmt.Sprint(v))
			_ = run.Fail(ctx, "panic")
		}
	}()
	in, err := b.decode(run.Input)
	if err != nil {
		_ = run.Fail(ctx, "engine: decoding the run's input: "+err.Error())
		return
	}
	out, err := a.durableRun.Wrap(b.def, b.handle)(fx, in)
	if err != nil {
		return
	}
	if resp, ok := out.(Responder); ok {
		req := httptest.NewRequest(http.MethodPost, "/", http.NoBody).WithContext(ctx)
		resp.Respond(fx, discardWriter{h: http.Header{}}, req)
	}
}

// discardWriter is the response of a resumed run: nobody is listening, the event log is.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
func (d discardWriter) Flush()                      {}
