package agui

import (
	"encoding/json"

	"github.com/bbc28f59/engine/internal/jsonx"
)

// RunOutput is what a finished agent run returns to the flow that ran it: the text of
// the last model turn that had any, the last tool result (or the text as a JSON string
// when no tool ran), the run's cost, its stop reason and the token counts the model
// reported. It is the result type of an agent's streaming flow
// (engine.DefineStream[agui.Input, agui.Event, agui.RunOutput]), recorded by a durable
// run and readable at GET /_engine/runs/:runId; RUN_FINISHED carries part of it too.
type RunOutput struct {
	Text       string          `json:"text"`
	Output     json.RawMessage `json:"output,omitempty"`
	Cost       float64         `json:"cost"`
	StopReason string          `json:"stopReason"`
	Usage      *Usage          `json:"usage,omitempty"`
}

// MarshalJSON encodes r as json.Marshal would, copying the output (often the run's whole
// final text) after one scan when it is a plain JSON string.
func (r RunOutput) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, len(r.Text)+len(r.Output)+96))
}

func (r RunOutput) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"text":`...)
	dst = jsonx.AppendString(dst, r.Text)
	var err error
	if len(r.Output) > 0 {
		if dst, err = jsonx.AppendValue(append(dst, `,"output":`...), r.Output); err != nil {
			return dst, err
		}
	}
	if dst, err = jsonx.AppendFloat(append(dst, `,"cost":`...), r.Cost); err != nil {
		return dst, err
	}
	dst = jsonx.AppendString(append(dst, `,"stopReason":`...), r.StopReason)
	if r.Usage != nil {
		b, err := json.Marshal(r.Usage)
		if err != nil {
			return dst, err
		}
		dst = append(append(dst, `,"usage":`...), b...)
	}
	return append(dst, '}'), nil
}
