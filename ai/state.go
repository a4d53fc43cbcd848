package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
)

// runState is an agent run's AG-UI state (RunAgentInput.state, then what its tools set).
// Tools run one at a time, but a tool may hand fx to goroutines of its own: hence the lock.
type runState struct {
	mu  sync.Mutex
	doc json.RawMessage // nil: the client sent none
}

func (st *runState) get() json.RawMessage {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.doc
}

func (st *runState) set(doc json.RawMessage) {
	st.mu.Lock()
	st.doc = doc
	st.mu.Unlock()
}

// empty reports whether the state holds nothing worth sending: none, null or {}.
func (st *runState) empty() bool {
	d := bytes.TrimSpace(st.get())
	return len(d) == 0 || string(d) == "null" || string(d) == "{}"
}

// toolState is what a tool call sees of the run's state: SetState changes it, emits the
// change and marks the call, so its recorded outcome carries the state it left.
type toolState struct {
	st      *runState
	em      *emitter
	open    func() // opens the step before the first state event of a resumed run
	changed bool   // guarded by st.mu
}

type toolStateKey struct{}

func withToolState(ctx context.Context, ts *toolState) context.Context {
	return context.WithValue(ctx, toolStateKey{}, ts)
}

// ErrNoAgentState is returned by [SetState] when fx is not the call of a tool by an
// agent run.
var ErrNoAgentState = errors.New("ai: SetState: the flow was not called as a tool of an agent run")

// State returns the AG-UI state of the agent run that called the tool flow of fx: the
// state the client sent in RunAgentInput.state, with the changes tools made since. It is
// nil when fx is not a tool call of an agent run, or the client sent no state.
func State(fx *engine.Fx) json.RawMessage {
	ts, _ := fx.Context().Value(toolStateKey{}).(*toolState)
	if ts == nil {
		return nil
	}
	return ts.st.get()
}

// SetState sets state[key] = value in the AG-UI state of the agent run that called the
// tool flow of fx. The client sees the change as a STATE_DELTA (a JSON Patch "add" of
// /key), or as a STATE_SNAPSHOT when the state was not an object yet; the event is kept
// in the run's log, and a durable run records the state the tool left with its result,
// so a replay neither runs the tool again nor loses the change. The client sends the
// state back in its next run, where tools read it with [State].
func SetState(fx *engine.Fx, key string, value any) error {
	ts, _ := fx.Context().Value(toolStateKey{}).(*toolState)
	if ts == nil {
		return ErrNoAgentState
	}
	v, err := json.Marshal(value)
	if err != nil {
		return err
	}
	// One lock over the change, the step's opening and the event: SetState from several
	// goroutines of one tool emits its patches in the order they apply to the state.
	ts.st.mu.Lock()
	defer ts.st.mu.Unlock()
	var doc map[string]json.RawMessage
	isObject := json.Unmarshal(ts.st.doc, &doc) == nil && doc != nil
	if !isObject {
		doc = map[string]json.RawMessage{}
	}
	doc[key] = v
	next, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	var ev agui.Event = agui.StateSnapshot{Snapshot: next}
	if isObject {
		patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/" + pointerEscape(key), "value": json.RawMessage(v)}})
		if err != nil {
			return err
		}
		ev = agui.StateDelta{Delta: patch}
	}
	ts.st.doc = next
	ts.changed = true
	if ts.open != nil {
		ts.open()
	}
	ts.em.emit(ev)
	return nil
}

// wasChanged reports whether a SetState of this tool call changed the state.
func (ts *toolState) wasChanged() bool {
	ts.st.mu.Lock()
	defer ts.st.mu.Unlock()
	return ts.changed
}

// pointerEscape escapes a member name for a JSON Pointer (RFC 6901).
func pointerEscape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
