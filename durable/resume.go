package durable

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
)

// resume re-executes a durable run claimed by the journal: the same flow, input and
// principal, with the journal replaying recorded steps. Gates are not run again: they
// were passed when the run began. A streaming flow's events reach nobody but the run's
// event log.
func (r *runner) resume(ctx context.Context, run *journal.Run) {
	fx, in, ok := r.prepare(ctx, run, run.Input)
	if !ok {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			r.app.Logger().ErrorContext(ctx, "durable: panic resuming durable run", "flow", run.Flow, "run", run.ID, "panic", fmt.Sprint(v))
			_ = run.Fail(ctx, "panic")
		}
	}()
	_, _ = r.handlers[run.Flow](fx, in)
}

// prepare makes the call context and input of an execution of run that the runner
// starts itself (a resume, a clock's tick); it fails the run and reports false when the
// flow is not bound as a durable flow here or its input no longer decodes.
func (r *runner) prepare(ctx context.Context, run *journal.Run, input json.RawMessage) (*engine.Fx, any, bool) {
	if r.handlers[run.Flow] == nil {
		_ = run.Fail(ctx, "durable: flow "+run.Flow+" is not bound as a durable flow on this instance")
		return nil, nil, false
	}
	var p *engine.Principal
	if len(run.Principal) > 0 && string(run.Principal) != "null" {
		p = &engine.Principal{}
		if err := json.Unmarshal(run.Principal, p); err != nil {
			_ = run.Fail(ctx, "durable: decoding the run's principal: "+err.Error())
			return nil, nil, false
		}
	}
	fx, err := r.app.NewCall(ctx, run.Flow, p)
	if err != nil {
		_ = run.Fail(ctx, "durable: "+err.Error())
		return nil, nil, false
	}
	execKey.Set(fx, &execution{run: run})
	in, err := r.app.DecodeInput(run.Flow, input)
	if err != nil {
		_ = run.Fail(ctx, "durable: decoding the run's input: "+err.Error())
		return nil, nil, false
	}
	return fx, in, true
}
