// Package callkey gives every call a durable run makes an identity that is the same on
// every execution of the run, on any instance, after any restart: the idempotency key a
// handler reads and the id of a durable sub-run. The journal puts a [Scope] in the
// context of each step and of each execution of a run; the engine takes the key of a flow
// it calls from the scope of the caller's context.
package callkey

import (
	"context"
	"strconv"
	"sync"
)

// Scope is a step, or a run's execution outside its steps, that calls flows. Keys of
// its calls are derived from its own key and the order of the calls, which a durable
// handler keeps from one execution to the next just as it keeps the order of its steps.
type Scope struct {
	key  string
	step bool
	call bool // the scope of one called flow, which a durable flow takes as its run id

	mu    sync.Mutex
	calls int
	taken bool
}

// ForStep is the scope of a run's step at position pos: its key is "<run id>-<pos>".
func ForStep(runID string, pos int) *Scope {
	return &Scope{key: runID + "-" + strconv.Itoa(pos), step: true}
}

// ForRun is the scope of one execution of a run, outside its steps: its key is the run id.
func ForRun(runID string) *Scope { return &Scope{key: runID} }

// The keys form paths from a top-level run: "-<pos>" is a step, "-c<n>" the n-th call
// of a step (n ≥ 2), "-r<n>" the n-th call of a run made outside its steps. No two
// calls share a key; a step's first call shares the step's, on purpose.

// ForCall is the scope of one flow called under key (from a caller's [Scope.Next]): the
// flow's idempotency key, and the id of its run when the flow is durable.
func ForCall(key string) *Scope { return &Scope{key: key, call: true} }

// TakeAsRun reports, once, that a durable flow may use the key of this call scope as its
// run id: true the first time it is asked of a [ForCall] scope, false after that and for
// every other scope, so no two runs start under one key.
func (s *Scope) TakeAsRun() bool {
	if !s.call {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken {
		return false
	}
	s.taken = true
	return true
}

// Key is the scope's own key.
func (s *Scope) Key() string { return s.key }

// Next returns the key of the scope's next call. A step's first call takes the step's
// own key, so a tool keeps its key whether or not its flow is durable; a step's later
// calls are "<step key>-c<n>", a run's calls outside its steps "<run id>-r<n>".
func (s *Scope) Next() string {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	switch {
	case !s.step:
		return s.key + "-r" + strconv.Itoa(n)
	case n == 1:
		return s.key
	}
	return s.key + "-c" + strconv.Itoa(n)
}

type ctxKey struct{}

// With returns ctx carrying s.
func With(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// From returns the innermost scope of ctx, or nil.
func From(ctx context.Context) *Scope {
	s, _ := ctx.Value(ctxKey{}).(*Scope)
	return s
}
