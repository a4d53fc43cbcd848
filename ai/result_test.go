package ai

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
)

// The stored output of a durable agent run is RunResult.appendJSON's bytes, stored as
// is: they must be exactly what json.Marshal writes, for every text and output.
func checkResultEncoding(t *testing.T, r RunResult) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := r.appendJSON([]byte("prefix:"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendJSON(%#v) err = %v, json.Marshal err = %v", r, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, append([]byte("prefix:"), want...)) {
		t.Fatalf("appendJSON(%#v):\n got %s\nwant prefix:%s", r, got, want)
	}
}

func TestRunResultEncodesAsJSONMarshalDoes(t *testing.T) {
	t.Parallel()
	in, out := int64(12), int64(0)
	texts := []string{"", "plain", "hello <b> & \u2028 \u2029 \x00 \xff \"q\" \\ \t\n\r\b\f", "été ☃ 𝄞"}
	outputs := []json.RawMessage{nil, json.RawMessage(`"done"`), json.RawMessage(`"<tag> & \u2028"`),
		json.RawMessage(` {"a": [1, 2]} `), json.RawMessage(`"\u00e9\/"`), json.RawMessage(`[`), json.RawMessage(`"open`)}
	for _, text := range texts {
		for _, o := range outputs {
			for _, cost := range []float64{0, 0.0123, 1e-7, 1e21, -3e-8} {
				checkResultEncoding(t, RunResult{Text: text, Output: o, Cost: cost, StopReason: "completed"})
				checkResultEncoding(t, RunResult{Text: text, Output: o, Cost: cost, StopReason: text,
					Usage: &agui.Usage{InputTokens: &in, OutputTokens: &out}})
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := (RunResult{Cost: bad}).appendJSON(nil); err == nil {
			t.Fatalf("cost %v encoded", bad)
		}
	}
}

func FuzzRunResultEncoding(f *testing.F) {
	f.Add("hello <b> & \u2028 \xff", []byte(`"x"`), 0.5)
	f.Fuzz(func(t *testing.T, text string, output []byte, cost float64) {
		checkResultEncoding(t, RunResult{Text: text, Output: output, Cost: cost, StopReason: text})
	})
}
