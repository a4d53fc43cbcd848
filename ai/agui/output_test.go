package agui

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// checkEncodesAsMarshal holds a hand-written encoder to json.Marshal's bytes and errors.
func checkEncodesAsMarshal[T any](t *testing.T, v T, appendJSON func(T, []byte) ([]byte, error)) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := appendJSON(v, []byte("prefix:"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendJSON(%#v) err = %v, json.Marshal err = %v", v, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, append([]byte("prefix:"), want...)) {
		t.Fatalf("appendJSON(%#v):\n got %s\nwant prefix:%s", v, got, want)
	}
}

// The stored output of a durable agent run is RunOutput.appendJSON's bytes, stored as
// is: they must be exactly what json.Marshal writes, for every text and output.
func checkResultEncoding(t *testing.T, r RunOutput) {
	t.Helper()
	checkEncodesAsMarshal(t, r, RunOutput.appendJSON)
}

func TestRunOutputEncodesAsJSONMarshalDoes(t *testing.T) {
	t.Parallel()
	in, out := int64(12), int64(0)
	texts := []string{"", "plain", "hello <b> & \u2028 \u2029 \x00 \xff \"q\" \\ \t\n\r\b\f", "été ☃ 𝄞"}
	outputs := []json.RawMessage{nil, json.RawMessage(`"done"`), json.RawMessage(`"<tag> & \u2028"`),
		json.RawMessage(` {"a": [1, 2]} `), json.RawMessage(`"\u00e9\/"`), json.RawMessage(`[`), json.RawMessage(`"open`)}
	for _, text := range texts {
		for _, o := range outputs {
			for _, cost := range []float64{0, 0.0123, 1e-7, 1e21, -3e-8} {
				checkResultEncoding(t, RunOutput{Text: text, Output: o, Cost: cost, StopReason: "completed"})
				checkResultEncoding(t, RunOutput{Text: text, Output: o, Cost: cost, StopReason: text,
					Usage: &Usage{InputTokens: &in, OutputTokens: &out}})
			}
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := (RunOutput{Cost: bad}).appendJSON(nil); err == nil {
			t.Fatalf("cost %v encoded", bad)
		}
	}
}

func FuzzRunOutputEncoding(f *testing.F) {
	f.Add("hello <b> & \u2028 \xff", []byte(`"x"`), 0.5)
	f.Fuzz(func(t *testing.T, text string, output []byte, cost float64) {
		checkResultEncoding(t, RunOutput{Text: text, Output: output, Cost: cost, StopReason: text})
	})
}
