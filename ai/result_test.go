package ai

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
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

// The stored output of a durable agent run is RunResult.appendJSON's bytes, stored as
// is: they must be exactly what json.Marshal writes, for every text and output.
func checkResultEncoding(t *testing.T, r RunResult) {
	t.Helper()
	checkEncodesAsMarshal(t, r, RunResult.appendJSON)
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

// A durable run records each turn with turn.appendJSON; a replay decodes it with
// json.Unmarshal, so its bytes must be json.Marshal's.
func checkTurnEncoding(t *testing.T, tr turn) {
	t.Helper()
	checkEncodesAsMarshal(t, tr, turn.appendJSON)
}

func TestTurnEncodesAsJSONMarshalDoes(t *testing.T) {
	t.Parallel()
	in, out, cost := int64(12), int64(0), 0.000125
	calls := []ToolCall{{ID: "call_1", Name: "tools_weather", Arguments: `{"city":"Paris"}`}, {Name: "x<y>", Arguments: "\xff"}}
	for _, text := range []string{"", "plain", "hello <b> & \u2028 \x00 \xff \"q\"", "été ☃ 𝄞"} {
		for _, tc := range [][]ToolCall{nil, calls[:1], calls} {
			for _, u := range []Usage{{}, {InputTokens: &in}, {InputTokens: &in, OutputTokens: &out, Cost: &cost}} {
				for _, finish := range []string{"", "stop", "tool_calls"} {
					checkTurnEncoding(t, turn{Text: text, TextIDs: len(text) % 3, ToolCalls: tc, Usage: u, Finish: finish})
				}
			}
		}
	}
	nan := math.NaN()
	if _, err := (turn{Usage: Usage{Cost: &nan}}).appendJSON(nil); err == nil {
		t.Fatal("a NaN cost encoded")
	}
}

func FuzzTurnEncoding(f *testing.F) {
	f.Add("hello <b> & \u2028 \xff", 2, "call_1", "tools_x", `{"a":1}`, int64(5), 0.5, "stop")
	f.Fuzz(func(t *testing.T, text string, ids int, id, name, args string, tokens int64, cost float64, finish string) {
		checkTurnEncoding(t, turn{Text: text, TextIDs: ids, ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}},
			Usage: Usage{OutputTokens: &tokens, Cost: &cost}, Finish: finish})
	})
}
