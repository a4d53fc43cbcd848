package clientx

import (
	"context"
	"net/http"
	"net/url"

	"github.com/bbc28f59/engine"
)

// RunState is where a durable run is and how it ended ([engine.RunState]).
type RunState = engine.RunState

// RunError is the failure of a failed run in [RunState].
type RunError = engine.RunError

// GetRun reads the state of the durable run runID. Whoever may follow the run may read
// it: the flow's gates, its tenant, and its starter or an operator. Without credentials
// the error is Unauthorized; any other refusal is NotFound, as for an unknown run.
func GetRun(ctx context.Context, c *Client, runID string) Result[RunState] {
	if c == nil || runID == "" {
		return Result[RunState]{Error: clientError(engine.CodeValidation, "clientx: GetRun: nil client or empty run id")}
	}
	r, e := c.t.do(ctx, request{method: http.MethodGet, url: c.base + "/_engine/runs/" + url.PathEscape(runID)})
	if e != nil {
		return Result[RunState]{Error: e, Status: e.Status}
	}
	defer r.release()
	return decodeReply[RunState](http.MethodGet, r)
}
