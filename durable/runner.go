package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/internal/jsonx"
	"github.com/bbc28f59/engine/journal"
)

// runner wraps durable handlers: it begins the run before the handler and ends it
// after, unless the call is a resumption that already holds the run.
type runner struct {
	app      *engine.App // set when the app starts, before the journal resumes anything
	j        *journal.Journal
	handlers map[string]engine.HandlerFunc // flow id → its handler as the runner wraps it; written while the app is built
}

// intercept wraps the handler of each durable flow (an [engine.Interceptor] inside the
// gates), and keeps the wrapped handler for the executions it starts itself: resumes and
// clock ticks.
func (r *runner) intercept(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
	if !def.Durable() {
		return next
	}
	h := r.wrap(def, next)
	r.handlers[def.ID()] = h
	return h
}

func (r *runner) wrap(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
	return func(fx *engine.Fx, in any) (any, error) {
		if run := RunOf(fx); run != nil { // a resumption: the journal claimed the run
			return r.execute(fx, run, next, in)
		}
		// A flow called by a durable run takes its run id from the call: a replay that
		// calls it again finds the run and attaches to it instead of starting another.
		id, _ := fx.ClaimRunID()
		run, err := r.begin(fx, def, id, in)
		if errors.Is(err, journal.ErrConflict) && id != "" {
			return r.attach(fx, def, id, next, in)
		}
		if err != nil {
			return nil, err
		}
		return r.execute(fx, run, next, in)
	}
}

// begin begins the durable run of a call of def with input in under id ("" for a new
// one). It is kept out of wrap's handler, under whose frame the whole call runs: a
// goroutine's stack grows with the deepest it ever gets, and an agent run waits on its
// model for minutes under that frame.
//
//go:noinline
func (r *runner) begin(fx *engine.Fx, def *engine.FlowDef, id string, in any) (*journal.Run, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("durable: encoding input of durable flow %s: %w", def.ID(), err)
	}
	principal, err := json.Marshal(fx.Principal())
	if err != nil {
		return nil, err
	}
	run, err := r.j.Begin(fx.Context(), journal.NewRun{ID: id, Flow: def.ID(), Input: input, Principal: principal, Tenant: fx.Tenant()})
	if errors.Is(err, journal.ErrConflict) && id != "" {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("durable: beginning durable run of %s: %w", def.ID(), err)
	}
	return run, nil
}

// execute runs the handler under run, which this instance holds, and records how the
// execution ended.
func (r *runner) execute(fx *engine.Fx, run *journal.Run, next engine.HandlerFunc, in any) (any, error) {
	fx, e := enter(fx, run)
	defer failOnPanic(fx.Context(), run)
	out, err := next(fx, in)
	err = r.endRun(fx, e, out, err)
	if errors.Is(err, engine.ErrParked) {
		fx.SetMeta("runId", run.ID) // the parked reply names the run, to find it again
	}
	return out, err
}

// enter returns the call's context under run and the execution of run it belongs to.
// It is kept out of execute, under whose frame the whole handler runs (see begin).
//
//go:noinline
func enter(fx *engine.Fx, run *journal.Run) (*engine.Fx, *execution) {
	e, ok := execKey.Call(fx)
	if !ok || e.run != run {
		e = &execution{run: run}
		execKey.Set(fx, e)
	}
	return fx.WithContext(run.CallContext(fx.Context())), e
}

// failOnPanic, deferred around a durable handler, fails its run when the handler panics
// and panics on: the execution is gone, and a run it left held would be renewed, and so
// never recovered, for as long as the process lives.
func failOnPanic(ctx context.Context, run *journal.Run) {
	if v := recover(); v != nil {
		_ = run.Fail(context.WithoutCancel(ctx), fmt.Sprintf("panic: %v", v))
		panic(v)
	}
}

// attach joins the run a replayed call finds under its id: it returns the stored outcome
// of an ended run, resumes one nobody holds (its recorded steps replay), and waits while
// another execution holds it.
func (r *runner) attach(fx *engine.Fx, def *engine.FlowDef, id string, next engine.HandlerFunc, in any) (any, error) {
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
			return nil, fmt.Errorf("durable: reading durable run %s of %s: %w", id, def.ID(), err)
		}
		if rec.Flow != def.ID() {
			return nil, fmt.Errorf("%w: run %s is a run of %s, the replay called %s", journal.ErrNonDeterministic, id, rec.Flow, def.ID())
		}
		switch rec.Status {
		case journal.StatusCompleted, journal.StatusCancelled:
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
			return nil, fmt.Errorf("durable: resuming durable run %s of %s: %w", id, def.ID(), err)
		}
	}
}

// failureDetail is what a failed run stores beside its message: the error as its caller
// saw it when that was a declared or framework code, so a caller that attaches to the
// ended run gets the same answer.
func failureDetail(def *engine.FlowDef, err error) json.RawMessage {
	e := engine.AsError(err)
	if e == nil || e.Code == engine.CodeInternal {
		return nil
	}
	if _, ok := def.ErrorSpec(e.Code); !ok && !engine.IsFrameworkCode(e.Code) {
		return nil
	}
	data := e.Data
	if data == nil {
		data = struct{}{}
	}
	b, mErr := json.Marshal(struct {
		Code   string `json:"code"`
		Data   any    `json:"data"`
		Status int    `json:"status,omitempty"`
	}{e.Code, data, e.Status})
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
		return &engine.Error{Code: d.Code, Data: d.Data, Status: d.Status}
	}
	return fmt.Errorf("durable: durable run %s of %s failed: %s", rec.ID, rec.Flow, rec.Error)
}

// endRun records how an execution of a durable run ended: parked, completed or failed.
// An execution that returns without an error while a [Park] it was told is pending is
// still undecided parks: a pending decision never completes a run.
func (r *runner) endRun(fx *engine.Fx, e *execution, out any, err error) error {
	ctx := context.WithoutCancel(fx.Context())
	logger := fx.App().Logger()
	run := e.run
	var acc *engine.AcceptedError
	var answer error // what the caller is answered when the run completes
	if errors.As(err, &acc) && !e.parked() {
		// The call's answer is another run that waits: this run is over.
		answer, err = err, nil
	}
	if err == nil && e.parked() {
		logger.WarnContext(ctx, "durable: the handler returned no error while a park it made is pending, so its run parks: return the error of durable.Park", "flow", fx.Flow().ID(), "run", run.ID)
		err = fmt.Errorf("%w: the handler returned without the error of durable.Park", engine.ErrParked)
	}
	switch {
	case errors.Is(err, engine.ErrParked):
		if sErr := run.Suspend(ctx); sErr != nil {
			logger.ErrorContext(ctx, "durable: suspending run", "run", run.ID, "err", sErr)
		}
		return err
	case errors.Is(err, journal.ErrLeaseLost):
		return err // another instance owns the run now; it records the end
	case fx.Context().Err() != nil && errors.Is(err, fx.Context().Err()):
		// The execution was cut off (its caller left, or the instance is closing), not
		// the run: it is released to resume from its recorded steps on its next claim.
		if rErr := run.Release(ctx); rErr != nil {
			logger.ErrorContext(ctx, "durable: releasing run", "run", run.ID, "err", rErr)
		}
		return err
	case err != nil:
		msg := err.Error()
		if e := engine.AsError(err); e != nil {
			msg = e.Code + ": " + e.Message()
		}
		if fErr := run.FailWith(ctx, msg, failureDetail(fx.Flow(), err)); fErr != nil {
			logger.ErrorContext(ctx, "durable: failing run", "run", run.ID, "err", fErr)
		}
		return err
	}
	// An agent run's output (its whole final text, twice) encodes itself into the form
	// json.Marshal gives; its second pass over that text cost more than the rest of
	// ending the run.
	raw, mErr := jsonx.Marshal(out)
	if mErr != nil {
		// Not stored as a completion with no result: the caller is answered the output's
		// error by the flow's encoder, and the run records why it failed.
		if fErr := run.Fail(ctx, "encoding the output: "+mErr.Error()); fErr != nil {
			logger.ErrorContext(ctx, "durable: failing run", "run", run.ID, "err", fErr)
		}
		return nil
	}
	if cErr := run.Complete(ctx, raw); cErr != nil {
		logger.ErrorContext(ctx, "durable: completing run", "run", run.ID, "err", cErr)
	}
	return answer
}
