package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/internal/ext"
	"github.com/bbc28f59/engine/journal"
)

// RunPath is the trigger of the route that reads a durable run's state, mounted by
// [With]: GET /_engine/runs/:runId.
const RunPath = "/_engine/runs/:runId"

// RunState is the reply of [RunPath], the type clientx.GetRun decodes: where a durable
// run is, and how it ended.
type RunState = clientx.RunState

// RunError is the failure of a failed run in [RunState].
type RunError = clientx.RunError

// runHandler serves [RunPath]. Access is the follow route's: the caller must pass the
// gates of the flow that started the run (as a read: a rate limit of the flow draws
// nothing from a poll), be in its tenant, and be the starting principal or an operator.
// A caller without credentials gets 401 Unauthorized; any other caller who may not read
// the run gets 404 NotFound, as for a run that does not exist, so another tenant's run
// ids reveal nothing. A run started without a principal and tenant is public.
type runHandler struct{}

func (runHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fx, p, ok := ext.Route(w, r)
	if !ok {
		return
	}
	st, err := readRun(fx, p, r.PathValue("runId"))
	if err != nil {
		engine.WriteError(fx, w, r, err)
		return
	}
	engine.WriteData(fx, w, r, st)
}

// readRun loads a run and applies the access rules of [runHandler] to it.
func readRun(fx *engine.Fx, p *engine.Principal, id string) (RunState, error) {
	j := JournalOf(fx.App())
	ctx := fx.Context()
	notFound := engine.NotFound("no run %s", id)
	if j == nil {
		return RunState{}, notFound
	}
	rec, err := j.GetRun(ctx, id)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		// The database, not the run: a 404 would tell a poller to stop, a 500 to retry.
		return RunState{}, fmt.Errorf("durable: reading run %s: %w", id, err)
	}
	var starter engine.Principal
	if err == nil && len(rec.Principal) > 0 && string(rec.Principal) != "null" {
		if uerr := json.Unmarshal(rec.Principal, &starter); uerr != nil {
			return RunState{}, fmt.Errorf("durable: decoding the principal of run %s: %w", id, uerr)
		}
	}
	public := err == nil && starter.ID == "" && rec.Tenant == ""
	if p == nil && !public {
		return RunState{}, engine.Unauthorized()
	}
	if err != nil {
		return RunState{}, notFound
	}
	if !public && (rec.Tenant != p.Tenant || (starter.ID != p.ID && !p.Operator)) {
		return RunState{}, notFound
	}
	if ext.HasGates(fx.App(), rec.Flow) {
		if gerr := ext.CheckRead(fx.App(), ctx, rec.Flow, p, rec.Input, notFound); gerr != nil {
			return RunState{}, gerr
		}
	}
	st := RunState{RunID: rec.ID, Flow: rec.Flow, Status: string(rec.Status)}
	switch rec.Status {
	case journal.StatusCompleted:
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
