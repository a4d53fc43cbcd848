package clientx

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/bbc28f59/engine"
)

// RunState is where a durable run is and how it ended, as GET /_engine/runs/:runId
// answers it. A caller polls it after a parked reply named the run ([Meta.RunID]).
type RunState struct {
	RunID string `json:"runId"`
	Flow  string `json:"flow"`
	// Status is running, parked, completed or failed.
	Status string `json:"status"`
	// Result is the flow's output once the run completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the failure of a failed run as its caller saw it; a failure that was not a
	// declared or framework code reads as InternalError, without its message.
	Error *RunError `json:"error,omitempty"`
}

// RunError is the failure of a failed run in [RunState].
type RunError struct {
	Code string          `json:"code"`
	Data json.RawMessage `json:"data"`
}

// Final reports whether the run has ended (completed or failed).
func (s RunState) Final() bool { return s.Status == "completed" || s.Status == "failed" }

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
