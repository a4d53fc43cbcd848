package agui

import (
	"encoding/json"
	"errors"
)

// OutputOf decodes the output of a finished run as a T: for an agent with a typed output
// (ai.Output), the value its final answer carried. r is RUN_FINISHED.result; it fails
// when r is nil or has no output.
//
//	forecast, err := agui.OutputOf[Forecast](finished.Result)
func OutputOf[T any](r *RunResult) (T, error) {
	var v T
	if r == nil || len(r.Output) == 0 {
		return v, errors.New("agui: the run has no output")
	}
	err := json.Unmarshal(r.Output, &v)
	return v, err
}
