package ai_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
)

// TestRunCostAndUsage checks rules 2 and 3: cost is the sum of model-reported spend
// when the model reports it, else the token counts priced with ai.WithPricing, else 0;
// usage is a one-element array only when the model reported counts.
func TestRunCostAndUsage(t *testing.T) {
	t.Parallel()
	tool := []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}
	cases := []struct {
		name      string
		kind      string
		modelOpts []ai.ModelOption
		u1, u2    *usage
		wantCost  float64
		wantUsage *[2]int64 // nil: usage must be absent
	}{
		{"reported spend wins over pricing", "openai", []ai.ModelOption{ai.WithPricing(1000, 1000)},
			&usage{In: 10, Out: 5, Cost: spend(0.5)}, &usage{In: 10, Out: 5, Cost: spend(0.25)}, 0.75, &[2]int64{20, 10}},
		{"tokens priced with WithPricing (openai)", "openai", []ai.ModelOption{ai.WithPricing(1, 2)},
			&usage{In: 1000, Out: 500}, &usage{In: 3000, Out: 100}, (4000*1 + 600*2) / 1e6, &[2]int64{4000, 600}},
		{"tokens priced with WithPricing (anthropic)", "anthropic", []ai.ModelOption{ai.WithPricing(3, 15)},
			&usage{In: 1000, Out: 500}, &usage{In: 3000, Out: 100}, (4000*3 + 600*15) / 1e6, &[2]int64{4000, 600}},
		{"tokens without pricing cost nothing", "anthropic", []ai.ModelOption{},
			&usage{In: 7, Out: 3}, &usage{In: 7, Out: 3}, 0, &[2]int64{14, 6}},
		{"nothing reported (openai)", "openai", []ai.ModelOption{ai.WithPricing(1, 2)}, nil, nil, 0, nil},
		{"nothing reported (anthropic)", "anthropic", []ai.ModelOption{ai.WithPricing(1, 2)}, nil, nil, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: tc.kind, modelOpts: tc.modelOpts, turns: []turn{
				{Calls: tool, Usage: tc.u1}, {Text: "Cold.", Usage: tc.u2},
			}})
			tr := w.stream(t, "/chat/plain", `{"message":"Oslo?"}`)
			fin := tr.finished(t)
			if math.Abs(fin.Result.Cost-tc.wantCost) > 1e-12 {
				t.Errorf("cost = %v, want %v", fin.Result.Cost, tc.wantCost)
			}
			if tc.wantUsage == nil {
				if len(fin.Usage) != 0 || strings.Contains(tr.raw, `"usage"`) {
					t.Errorf("usage sent although the model reported no counts:\n%s", tr.raw)
				}
				if strings.Contains(tr.raw, `"inputTokens":0`) {
					t.Errorf("invented zero counts:\n%s", tr.raw)
				}
				return
			}
			if len(fin.Usage) != 1 || fin.Usage[0].InputTokens == nil || fin.Usage[0].OutputTokens == nil {
				t.Fatalf("usage = %+v, want one element with both counts", fin.Usage)
			}
			eq(t, "inputTokens", *fin.Usage[0].InputTokens, tc.wantUsage[0])
			eq(t, "outputTokens", *fin.Usage[0].OutputTokens, tc.wantUsage[1])
			var raw map[string]json.RawMessage
			line := rawEvent(t, tr, "RUN_FINISHED")
			if err := json.Unmarshal([]byte(line), &raw); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw["usage"]), "cost") || strings.Contains(string(raw["usage"]), "stopReason") {
				t.Errorf("cost or stopReason on usage, they belong on result: %s", raw["usage"])
			}
		})
	}
}

// rawEvent returns the data of the first frame of type typ as sent.
func rawEvent(t *testing.T, tr transcript, typ string) string {
	t.Helper()
	for _, b := range blocks(t, tr.raw) {
		if strings.Contains(b.data, `"type":"`+typ+`"`) {
			return b.data
		}
	}
	t.Fatalf("no %s frame in:\n%s", typ, tr.raw)
	return ""
}

// TestStopBudget checks stop reason budget: when the run's spend reaches
// maxCostPerRun the loop stops without throwing and without running the step's tools.
func TestStopBudget(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			// openai reports spend; anthropic reports tokens, priced at 1 per million.
			u := &usage{In: 600, Out: 0, Cost: spend(0.0006)}
			w := newWorld(t, setup{kind: kind, agentOpts: []ai.AgentOption{ai.Budget(0.001)}, modelOpts: []ai.ModelOption{ai.WithPricing(1, 1)},
				turns: []turn{
					{Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}, Usage: u},
					{Calls: []call{{ID: "c2", Name: "tools_weather", Args: `{"city":"Rome"}`}}, Usage: u},
					{Text: "never reached"},
				}})
			tr := w.stream(t, "/chat/plain", `{"message":"spend"}`)
			if kind == "openai" {
				golden(t, "budget", tr)
				checkFollow(t, w, "budget", tr)
			}
			res := tr.result(t)
			eq(t, "stopReason", res.StopReason, agui.StopBudget)
			if math.Abs(res.Cost-0.0012) > 1e-12 {
				t.Errorf("cost = %v, want 0.0012", res.Cost)
			}
			eq(t, "model requests", w.model.RequestCount(), 2)
			eq(t, "tool runs", w.count("weather"), 1)
			eq(t, "output (the trail so far)", string(res.Output), `{"city":"Oslo","tempC":12}`)
			if len(of[agui.RunError](tr)) != 0 {
				t.Errorf("a budget stop must not be a RUN_ERROR:\n%s", tr.raw)
			}
			if !strings.HasSuffix(tr.raw, "data: [DONE]\n\n") {
				t.Errorf("no [DONE] after the budget stop")
			}
		})
	}
}

// TestStopReasonError checks that a tool that throws (an error the flow does not
// declare, or a panic) ends the run with RUN_FINISHED stopReason error, then [DONE],
// and the model is not called again.
func TestStopReasonError(t *testing.T) {
	t.Parallel()
	cases := []struct{ tool, ran string }{
		{"tools_boom", "boom"},
		{"tools_undeclared", "undeclared"},
		{"tools_panics", "panics"},
	}
	for _, kind := range providerKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.tool, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, turns: []turn{
					{Calls: []call{{ID: "c1", Name: tc.tool, Args: `{"city":"Oslo"}`}}},
					{Text: "never reached"},
				}})
				tr := w.stream(t, "/chat/plain", `{"message":"break it"}`)
				if kind == "openai" && tc.ran == "boom" {
					golden(t, "stop_error", tr)
					checkFollow(t, w, "stop_error", tr)
				}
				eq(t, "stopReason", tr.result(t).StopReason, agui.StopError)
				eq(t, "tool runs", w.count(tc.ran), 1)
				eq(t, "model requests", w.model.RequestCount(), 1)
				types := tr.types()
				eq(t, "last event", types[len(types)-1], "RUN_FINISHED")
				if !strings.HasSuffix(tr.raw, "data: [DONE]\n\n") {
					t.Errorf("no [DONE] after stopReason error")
				}
				res := of[agui.ToolCallResult](tr)
				if len(res) != 1 || !strings.Contains(res[0].Content, "InternalError") {
					t.Errorf("tool result = %+v, want one InternalError result", res)
				}
				if strings.Contains(tr.raw, "on fire") || strings.Contains(tr.raw, "panicked") {
					t.Errorf("internal error detail leaked into the stream:\n%s", tr.raw)
				}
			})
		}
	}
}

// TestUnlistedToolHalts checks that a tool the agent does not list ends the run with
// RUN_ERROR code AgentLoopHalt and a message saying how to fix it, even when the flow is
// bound in the app; the tool does not run.
func TestUnlistedToolHalts(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, tool string }{
		{"bound flow not in tools", "tools_boom"},
		{"unknown flow", "tools_nowhere"},
	}
	for _, kind := range providerKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, tools: []string{"tools.weather"}, turns: []turn{
					{Calls: []call{{ID: "c1", Name: tc.tool, Args: `{"city":"Oslo"}`}}},
					{Text: "never reached"},
				}})
				tr := w.stream(t, "/chat/plain", `{"message":"sneak"}`)
				if kind == "openai" && tc.tool == "tools_boom" {
					golden(t, "halt", tr)
					checkFollow(t, w, "halt", tr)
				}
				re := tr.runError(t)
				eq(t, "RUN_ERROR.code", re.Code, ai.CodeAgentLoopHalt)
				flowID := strings.Replace(tc.tool, "_", ".", 1)
				if !strings.Contains(re.Message, "agent's tools") ||
					!(strings.Contains(re.Message, tc.tool) || strings.Contains(re.Message, flowID)) {
					t.Errorf("message %q should name the tool and say to add it to the agent's tools", re.Message)
				}
				eq(t, "RUN_FINISHED events", len(of[agui.RunFinished](tr)), 0)
				eq(t, "boom runs", w.count("boom"), 0)
				eq(t, "model requests", w.model.RequestCount(), 1)
				types := tr.types()
				eq(t, "last event", types[len(types)-1], "RUN_ERROR")
			})
		}
	}
}

// TestFedBackToModel checks the failures that are fed back to the model as the tool's
// result, after which the model answers and the run ends completed: a gate denial
// (Unauthorized for an anonymous run calling a non-public tool, Forbidden from an
// engine.Use middleware), a declared error code, and arguments that fail the tool's
// input schema (ValidationError).
func TestFedBackToModel(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool, args, code string
	}{
		{"unauthorized", "tools_secret", `{"city":"Oslo"}`, "Unauthorized"},
		{"forbidden", "tools_guarded", `{"city":"Oslo"}`, "Forbidden"},
		{"declared error", "tools_declared", `{"city":"Atlantis"}`, "UnknownCity"},
		{"schema violation", "tools_weather", `{"city":42}`, "ValidationError"},
		{"not JSON", "tools_weather", `{"city":`, "ValidationError"},
	}
	for _, kind := range providerKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, turns: []turn{
					{Calls: []call{{ID: "c1", Name: tc.tool, Args: tc.args}}},
					{Text: "I could not do that."},
				}})
				tr := w.stream(t, "/chat/plain", `{"message":"try"}`)
				if kind == "openai" && tc.code == "Forbidden" {
					golden(t, "gate_denied", tr)
					checkFollow(t, w, "gate_denied", tr)
				}
				eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
				res := of[agui.ToolCallResult](tr)
				if len(res) != 1 {
					t.Fatalf("%d tool results, want 1:\n%s", len(res), tr.raw)
				}
				var content struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(res[0].Content), &content); err != nil {
					t.Fatalf("tool result content %q is not a JSON error: %v", res[0].Content, err)
				}
				eq(t, "fed-back code", content.Error.Code, tc.code)
				eq(t, "weather runs", w.count("weather"), 0)
				eq(t, "model requests", w.model.RequestCount(), 2)
			})
		}
	}
}

// TestProviderFailure checks that a provider failure, before or in the middle of the
// stream, ends the run with RUN_ERROR code ProviderError carrying the provider's message.
func TestProviderFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		turn turn
	}{
		{"http status", turn{Status: 400, ErrMsg: "the model is on strike"}},
		{"mid-stream error", turn{Text: "Half an ", ErrMsg: "the model is on strike"}},
	}
	for _, kind := range providerKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, turns: []turn{tc.turn}})
				tr := w.stream(t, "/chat/plain", `{"message":"hi"}`)
				if kind == "openai" && tc.turn.Status == 0 {
					golden(t, "provider_error", tr)
					checkFollow(t, w, "provider_error", tr)
				}
				re := tr.runError(t)
				eq(t, "RUN_ERROR.code", re.Code, ai.CodeProviderError)
				if !strings.Contains(re.Message, "the model is on strike") {
					t.Errorf("RUN_ERROR.message %q lost the provider's message", re.Message)
				}
				types := tr.types()
				eq(t, "last event", types[len(types)-1], "RUN_ERROR")
			})
		}
	}
}
