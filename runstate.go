package engine

import "encoding/json"

// RunState is where a durable run is and how it ended: the reply of
// GET /_engine/runs/:runId, which package durable serves and clientx.GetRun reads. A
// caller polls it after a parked reply (202, meta.runId) named the run.
type RunState struct {
	RunID string `json:"runId"`
	Flow  string `json:"flow"`
	// Status is running, parked, completed or failed.
	Status string `json:"status"`
	// Result is the flow's output (a streaming flow's result) once the run completed.
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
