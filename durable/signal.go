package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
)

// ErrTimedOut is the error of [Signal.Wait] and [Channel.Receive] when the deadline
// passed first. The handler decides what a timeout means (fail, answer, wait again).
var ErrTimedOut = journal.ErrTimedOut

// Signal is a named durable value of type T, set under a key (an order id, a run id):
// server code sets it, any flow reads its latest value, and a durable flow waits for it,
// parked in the journal like an approval. Declare signals once, at package level, like
// flows; they are not callable by clients (a flow that sets one is).
type Signal[T any] struct {
	name string
	once bool
}

// SignalOption configures a [Signal].
type SignalOption func(*signalConfig)

type signalConfig struct{ once bool }

// Once makes a signal take one value per key: a second is refused with Conflict.
func Once() SignalOption { return func(c *signalConfig) { c.once = true } }

// NewSignal declares the signal name. It panics on an empty name or one with a "/", as
// a declaration at package level is a programming error found at start-up.
func NewSignal[T any](name string, opts ...SignalOption) *Signal[T] {
	if name == "" || strings.Contains(name, "/") {
		panic(fmt.Sprintf("durable: NewSignal: bad name %q", name))
	}
	var c signalConfig
	for _, o := range opts {
		o(&c)
	}
	return &Signal[T]{name: name, once: c.once}
}

// Name returns the signal's name.
func (s *Signal[T]) Name() string { return s.name }

// Set stores v under key from inside a flow; see [Signal.SetApp].
func (s *Signal[T]) Set(fx *engine.Fx, key string, v T) error {
	return s.SetApp(fx.Context(), fx.App(), key, v)
}

// SetApp stores v as the latest value under key, even when no run waits (a later wait
// sees it), and resumes the runs waiting for it, on whichever instance claims them.
// A second value of a [Once] signal is a Conflict error (the envelope's code), the app
// needs [With], and other errors are the journal's.
func (s *Signal[T]) SetApp(ctx context.Context, app *engine.App, key string, v T) error {
	j := JournalOf(app)
	if j == nil {
		return fmt.Errorf("durable: signal %s needs durable.With", s.name)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("durable: signal %s: %w", s.name, err)
	}
	if _, err := j.SetSignal(ctx, s.name, key, raw, s.once); err != nil {
		if errors.Is(err, journal.ErrConflict) {
			return engine.NewError(engine.CodeConflict, map[string]any{"message": "signal " + s.name + " already has a value"}).WithCause(err)
		}
		return err
	}
	return nil
}

// Get returns the latest value under key, and false when none was set. In a durable run
// the read is a [Step], so a replay sees what the first execution saw.
func (s *Signal[T]) Get(fx *engine.Fx, key string) (T, bool, error) {
	type got struct {
		Value T    `json:"value"`
		OK    bool `json:"ok"`
	}
	g, err := Step(fx, "signal "+s.name, func(ctx context.Context) (got, error) {
		j := JournalOf(fx.App())
		if j == nil {
			return got{}, fmt.Errorf("durable: signal %s needs durable.With", s.name)
		}
		v, err := j.Signal(ctx, s.name, key)
		if errors.Is(err, journal.ErrNotFound) {
			return got{}, nil
		}
		if err != nil {
			return got{}, err
		}
		var out got
		out.OK = true
		return out, json.Unmarshal(v.Value, &out.Value)
	})
	return g.Value, g.OK, err
}

// Wait returns the value under key once there is one: at once when it was set before,
// otherwise with an error wrapping [engine.ErrParked], which the handler returns as it
// returns any error: the run parks (the caller is answered 202 with its run id) and runs
// again, on whichever instance claims it, when the value is set; this call then returns
// it. A zero deadline is the journal's default (24 h); past it, Wait returns
// [ErrTimedOut], by the journal's clock, across restarts; calling Wait again then waits
// again, with the new deadline. Only durable flows wait.
func (s *Signal[T]) Wait(fx *engine.Fx, key string, deadline time.Time) (T, error) {
	var out T
	e, ok := execKey.Call(fx)
	if !ok {
		return out, fmt.Errorf("durable: flow %s cannot wait for signal %s: it is not durable (declare it with engine.Durable())", fx.Flow().ID(), s.name)
	}
	d, err := e.run.WaitSignal(fx.Context(), s.name, key, deadline)
	parkKey := journal.SignalTopic(s.name, key)
	e.setPending(parkKey, err == nil && d == nil)
	if err != nil {
		return out, err
	}
	if d == nil {
		return out, fmt.Errorf("%w for signal %s under %q", engine.ErrParked, s.name, key)
	}
	if err := json.Unmarshal(d.Payload, &out); err != nil {
		return out, fmt.Errorf("durable: signal %s: decoding its value: %w", s.name, err)
	}
	return out, nil
}
