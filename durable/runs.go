package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
)

// RunPath is the trigger of the route that reads a durable run's state, mounted by
// [With]: GET /_engine/runs/:runId.
const RunPath = "/_engine/runs/:runId"

// RunState is the reply of [RunPath] ([engine.RunState]), which clientx.GetRun decodes:
// where a durable run is, and how it ended.
type RunState = engine.RunState

// RunError is the failure of a failed run in [RunState].
type RunError = engine.RunError

// serveRun serves [RunPath]. Access is the follow route's ([MayRead]): the caller must
// pass the gates of the flow that started the run (as a read), be in its tenant, and be
// the starting principal or an operator. A caller without credentials gets 401
// Unauthorized; any other caller who may not read the run gets 404 NotFound, as for a run
// that does not exist, so another tenant's run ids reveal nothing.
func serveRun(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	st, err := readRun(fx.Context(), fx.App(), fx.Principal(), r.PathValue("runId"))
	if err != nil {
		engine.WriteError(fx, w, r, err)
		return
	}
	engine.WriteData(fx, w, r, st)
}

// readRun loads a run and applies the access rules of [serveRun] to it.
func readRun(ctx context.Context, app *engine.App, p *engine.Principal, id string) (RunState, error) {
	j := JournalOf(app)
	if j == nil {
		return RunState{}, engine.NotFound("no run %s", id)
	}
	rec, err := j.GetRun(ctx, id)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		// The database, not the run: a 404 would tell a poller to stop, a 500 to retry.
		return RunState{}, fmt.Errorf("durable: reading run %s: %w", id, err)
	}
	var owner *Owner
	if err == nil {
		var starter engine.Principal
		if len(rec.Principal) > 0 && string(rec.Principal) != "null" {
			if uerr := json.Unmarshal(rec.Principal, &starter); uerr != nil {
				return RunState{}, fmt.Errorf("durable: decoding the principal of run %s: %w", id, uerr)
			}
		}
		owner = &Owner{Flow: rec.Flow, Tenant: rec.Tenant, PrincipalID: starter.ID}
	}
	if err := MayRead(ctx, app, p, id, owner, func() json.RawMessage { return rec.Input }); err != nil {
		return RunState{}, err
	}
	st := RunState{RunID: rec.ID, Flow: rec.Flow, Status: string(rec.Status)}
	switch rec.Status {
	case journal.StatusCompleted, journal.StatusCancelled:
		st.Result = rec.Output
		if len(st.Result) == 0 {
			st.Result = json.RawMessage("null")
		}
	case journal.StatusFailed:
		st.Error = &RunError{Code: engine.CodeInternal, Data: json.RawMessage("{}")}
		if e := engine.AsError(storedFailure(rec)); e != nil {
			data, merr := json.Marshal(e.Data)
			if merr == nil && string(data) != "null" {
				st.Error = &RunError{Code: e.Code, Data: data}
			} else {
				st.Error = &RunError{Code: e.Code, Data: json.RawMessage("{}")}
			}
		}
	}
	return st, nil
}
