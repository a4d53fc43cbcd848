package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
)

// journalKey holds the app's journal.
var journalKey = engine.NewKey[*journal.Journal]("durable journal")

// execution is what a call of a durable flow keeps while this instance holds its run.
type execution struct {
	run *journal.Run

	mu      sync.Mutex
	pending map[string]bool // keys [Park] reported pending in this execution
}

// setPending records whether the park under key is pending.
func (e *execution) setPending(key string, pending bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !pending {
		delete(e.pending, key)
		return
	}
	if e.pending == nil {
		e.pending = map[string]bool{}
	}
	e.pending[key] = true
}

// parked reports whether a park this execution was told is pending is still undecided.
func (e *execution) parked() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.pending) > 0
}

// execKey holds the execution of a durable call.
var execKey = engine.NewKey[*execution]("durable execution")

// With runs the app's durable flows ([engine.Durable]) under j: a run's record is
// written before its handler starts, [Step] results are recorded and replayed, handlers
// may [Park], and the journal resumes runs after a decision, a timeout or a dead owner's
// lease expiry. It mounts [RunPath], where whoever may follow a run reads its state.
// [engine.App.Start] starts the journal's background work and
// [engine.App.Close] stops it. Without With, durable flows run as ordinary flows.
//
// The runner is an [engine.InterceptHandler] interceptor: it wraps the handler of each
// durable flow inside the flow's gates, which a run passes once, when it begins.
func With(j *journal.Journal) engine.Option {
	if j == nil {
		return engine.InvalidOption(errors.New("durable: With: nil journal"))
	}
	clocks := &clockSet{}
	r := &runner{j: j, handlers: map[string]engine.HandlerFunc{}}
	return engine.Options(
		journalKey.Option(j),
		runnerKey.Option(r),
		engine.InterceptHandler(r.intercept),
		engine.Handle(http.MethodGet, RunPath, serveRun),
		clocksKey.Option(clocks),
		// The journal resumes runs through the app from the moment it exists (a test
		// may drive recovery by hand without starting the app).
		engine.Validate(func(a *engine.App) error {
			r.app = a
			j.SetResumer(r.resume)
			return nil
		}),
		// Schedules start after the journal and stop before it, so no tick begins on a
		// journal that is not running.
		engine.OnStart(func(ctx context.Context, a *engine.App) error {
			if err := j.Start(ctx); err != nil {
				return err
			}
			clocks.start(a, r)
			return nil
		}),
		engine.OnClose(func(ctx context.Context, _ *engine.App) error {
			err := clocks.stop(ctx)
			return errors.Join(err, j.Close(ctx))
		}),
	)
}

// runnerKey holds the app's runner.
var runnerKey = engine.NewKey[*runner]("durable runner")

// JournalOf returns the journal the app was built [With], or nil.
func JournalOf(app *engine.App) *journal.Journal {
	j, _ := journalKey.App(app)
	return j
}

// RunOf returns the journal run of a durable call, or nil outside one.
func RunOf(fx *engine.Fx) *journal.Run {
	if e, ok := execKey.Call(fx); ok {
		return e.run
	}
	return nil
}

// Step runs fn once across all executions of a durable run: the first execution records
// its result, a replay returns the recorded result without calling fn, and a replay that
// asks for another step at the same position fails loudly ([journal.ErrNonDeterministic]).
// Inside fn, [engine.IdempotencyKey] of its context is the step's own key. Outside a
// durable run Step just calls fn.
func Step[T any](fx *engine.Fx, name string, fn func(ctx context.Context) (T, error)) (T, error) {
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
			return out, fmt.Errorf("durable: step %q: decoding recorded result: %w", name, err)
		}
	}
	return out, nil
}

// Park records that the durable run waits for a decision under key until deadline (zero
// means the journal's default, 24 h), with payload (JSON-encoded) saying what is to be
// decided. It returns the stored decision once there is one. While the decision is
// pending it returns an error wrapping [engine.ErrParked], which the handler returns as
// it returns any error: the run is suspended, the caller answered 202 with the run's id,
// and the run's next execution, once the decision is stored, gets it from Park.
//
//	d, err := durable.Park(fx, "confirm", time.Time{}, order)
//	if err != nil {
//		return Receipt{}, err // parked, or the journal failed
//	}
//	if d.Kind == journal.DecisionDeny { … }
//
// A pending park cannot be ignored: a handler that drops the error and returns without
// one still parks its run (the app logs a warning), so a run never completes while a
// decision it asked for is pending. A flow that is not durable cannot park: the error
// names it.
func Park(fx *engine.Fx, key string, deadline time.Time, payload any) (*journal.Decision, error) {
	e, ok := execKey.Call(fx)
	if !ok {
		return nil, fmt.Errorf("durable: flow %s cannot park: it is not durable (declare it with engine.Durable())", fx.Flow().ID())
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	d, err := e.run.Park(fx.Context(), key, deadline, raw)
	if err != nil {
		return nil, err
	}
	e.setPending(key, d == nil)
	if d == nil {
		return nil, fmt.Errorf("%w under %q", engine.ErrParked, key)
	}
	return d, nil
}

// MapError maps the journal's sentinel errors to the envelope's codes, for a flow or
// route that answers with what the journal said: NotFound, Conflict, and
// JournalLeaseBusy with a Retry-After header. Other errors pass unchanged.
func MapError(err error) error {
	var busy *journal.LeaseBusyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &busy):
		secs := int64((busy.RetryAfter + time.Second - 1) / time.Second)
		if secs < 1 {
			secs = 1
		}
		return engine.NewError(engine.CodeJournalLeaseBusy, map[string]any{
			"message":      "the run is locked by another worker; retry after the delay",
			"retryAfterMs": busy.RetryAfter.Milliseconds(),
		}).WithHeader("Retry-After", strconv.FormatInt(secs, 10)).WithCause(err)
	case errors.Is(err, journal.ErrConflict):
		return engine.NewError(engine.CodeConflict, map[string]any{"message": "the value is already in use: a decision is already stored"}).WithCause(err)
	case errors.Is(err, journal.ErrNotFound):
		return engine.NewError(engine.CodeNotFound, map[string]any{"message": "not found"}).WithCause(err)
	}
	return err
}
