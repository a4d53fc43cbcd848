package agent

import (
	"context"
	"net/http"
	"net/url"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

// StopPath is the path of the stop route of the agent run runID (RUN_STARTED.runId),
// relative to the client's base URL.
func StopPath(runID string) string { return "/agent/runs/" + url.PathEscape(runID) + "/stop" }

// Stop stops the agent run runID (RUN_STARTED.runId) on the app c talks to, whichever
// instance runs it, through POST /agent/runs/:runId/stop with c's headers, auth and
// timeout. The run's live stream and its followers then get RUN_FINISHED with outcome
// cancelled; a parked run is cancelled and its pending approvals refused.
//
// Refusals are [*DecisionError]s with Op "stop": NotFound for an unknown run or one the
// caller may not follow, and Conflict, which matches [ErrConflict], for a run that has
// already finished.
func Stop(ctx context.Context, c *clientx.Client, runID string) error {
	if c == nil {
		return &DecisionError{Op: "stop", Err: clientError(engine.CodeValidation, "nil client")}
	}
	if runID == "" {
		return &DecisionError{Op: "stop", Err: clientError(engine.CodeValidation, "the run id is required")}
	}
	status, _, reply, terr := c.Transport().Do(ctx, http.MethodPost, c.BaseURL()+StopPath(runID), []byte(`{}`))
	if terr != nil {
		return &DecisionError{Op: "stop", Err: terr}
	}
	if e := replyError(status, reply); e != nil {
		return &DecisionError{Op: "stop", Err: e}
	}
	return nil
}
