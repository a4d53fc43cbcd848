package ai

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
