package telemetry_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/telemetry"
	"github.com/bbc28f59/engine/vault"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type (
	cityIn struct {
		City string `json:"city"`
	}
	weatherOut struct {
		City  string       `json:"city"`
		TempC int          `json:"tempC"`
		Key   vault.Secret `json:"key"` // a tool result that carries a secret by mistake
	}
	chatIn struct {
		Message string `json:"message"`
	}
)

const (
	prompt     = "Weather in Oslo, my card is 4111?"
	completion = "It is 4 degrees in Oslo."
	secretKey  = "sk-live-very-secret"
)

var (
	toolsUnit = engine.NewUnit("tools")
	weather   = engine.Define[cityIn, weatherOut](toolsUnit, "weather", engine.Public(), engine.Describe("Temperature of a city."))
	chatUnit  = engine.NewUnit("chat")
	ask       = engine.DefineStream[chatIn, agui.Event, ai.RunResult](chatUnit, "ask", engine.POST("/chat"), engine.Public())
)

// runAgent serves an agent that calls the weather tool once and answers, with the
// telemetry option given, and streams one run of it to its end.
func runAgent(t *testing.T, opts telemetry.Options) {
	t.Helper()
	in, out := int64(12), int64(7)
	model := ai.Model("offline", scripted.New(
		scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "tools_weather", Arguments: `{"city":"Oslo"}`}},
			Usage: ai.Usage{InputTokens: &in, OutputTokens: &out}},
		scripted.Turn{Text: completion, Usage: ai.Usage{InputTokens: &in, OutputTokens: &out}},
	), "scripted-1", ai.WithPricing(1, 2))
	assistant := ai.Agent("assistant", model, ai.Tools(weather), 6, ai.System("You are terse."))
	v, err := vault.New(vault.Map{"WEATHER_KEY": secretKey})
	if err != nil {
		t.Fatal(err)
	}
	app, err := engine.New(telemetry.New(opts), vault.With(v),
		engine.Bind(weather, func(fx *engine.Fx, in cityIn) (weatherOut, error) {
			key, err := vault.Of(fx).Get(fx.Context(), "WEATHER_KEY")
			if err != nil {
				return weatherOut{}, err
			}
			return weatherOut{City: in.City, TempC: 4, Key: key}, nil
		}),
		engine.BindStream(ask, func(fx *engine.Fx, in chatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, assistant, in.Message, out, ai.RunOptions{})
		}),
		ai.Register(assistant),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/chat", "application/json", strings.NewReader(`{"message":"`+prompt+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var last agui.Event
	for ev, err := range agent.ReadAgentEventsResponse(resp) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if _, ok := last.(agui.RunFinished); !ok {
		t.Fatalf("the run ended with %T", last)
	}
}

func TestAgentSpans(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	runAgent(t, rec.options(false))

	server := rec.one(t, "POST /chat")
	run := rec.one(t, "invoke_agent assistant")
	chats := rec.named("chat scripted-1")
	tool := rec.one(t, "execute_tool tools.weather")
	toolCall := rec.one(t, "tools.weather") // the tool's flow call, made by the agent
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chats))
	}
	wantChild := func(child, parent tracetest.SpanStub) {
		t.Helper()
		if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.SpanContext.TraceID() != server.SpanContext.TraceID() {
			t.Fatalf("%s is not a child of %s in the call's trace", child.Name, parent.Name)
		}
	}
	wantChild(run, server)
	wantChild(chats[0], run)
	wantChild(chats[1], run)
	wantChild(tool, run)
	wantChild(toolCall, tool)

	wantAttr(t, run, "gen_ai.operation.name", "invoke_agent")
	wantAttr(t, run, "gen_ai.agent.name", "assistant")
	wantAttr(t, run, "engine.run.stop_reason", "completed")
	wantAttr(t, chats[0], "gen_ai.operation.name", "chat")
	wantAttr(t, chats[0], "gen_ai.request.model", "scripted-1")
	wantAttr(t, chats[0], "gen_ai.response.model", "scripted-1")
	wantAttr(t, chats[0], "gen_ai.usage.input_tokens", int64(12))
	wantAttr(t, chats[0], "gen_ai.usage.output_tokens", int64(7))
	wantAttr(t, chats[0], "engine.cost", float64(12)*1/1e6+float64(7)*2/1e6)
	if v, _ := attrOf(chats[0], "gen_ai.response.finish_reasons"); len(v.AsStringSlice()) != 1 || v.AsStringSlice()[0] != "tool_calls" {
		t.Fatalf("finish reasons %v", v.AsStringSlice())
	}
	wantAttr(t, tool, "gen_ai.operation.name", "execute_tool")
	wantAttr(t, tool, "gen_ai.tool.name", "tools.weather")
	wantAttr(t, tool, "gen_ai.tool.call.id", "call_1")

	// Without the opt-in no prompt, completion or tool argument or result is recorded.
	for _, s := range rec.spans.GetSpans() {
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			for _, text := range []string{"Oslo", "4111", "terse", "degrees", secretKey} {
				if strings.Contains(v, text) {
					t.Fatalf("span %s attribute %s = %q holds content without the opt-in", s.Name, kv.Key, v)
				}
			}
		}
	}

	// The token histogram: 2 calls × 12 input and 7 output tokens.
	h := rec.metric(t, "gen_ai.client.token.usage").(metricdata.Histogram[int64])
	sums := map[string]int64{}
	for _, dp := range h.DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		sums[typ.AsString()] += dp.Sum
	}
	if sums["input"] != 24 || sums["output"] != 14 {
		t.Fatalf("token usage %v, want input 24 and output 14", sums)
	}
	d := rec.metric(t, "gen_ai.client.operation.duration").(metricdata.Histogram[float64])
	if n := d.DataPoints[0].Count; len(d.DataPoints) != 1 || n != 2 {
		t.Fatalf("operation durations %+v, want one series of 2", d.DataPoints)
	}
}

// With the opt-in the prompt, the completion and the tool's arguments and result are
// recorded, and still no secret of the vault.
func TestAgentContentCapture(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	runAgent(t, rec.options(true))
	chats := rec.named("chat scripted-1")
	tool := rec.one(t, "execute_tool tools.weather")
	if v, _ := attrOf(chats[0], "gen_ai.input.messages"); !strings.Contains(v.AsString(), "4111") {
		t.Fatalf("input messages %q lack the prompt", v.AsString())
	}
	if v, _ := attrOf(chats[0], "gen_ai.system_instructions"); v.AsString() != "You are terse." {
		t.Fatalf("system instructions %q", v.AsString())
	}
	if v, _ := attrOf(chats[1], "gen_ai.output.messages"); !strings.Contains(v.AsString(), completion) {
		t.Fatalf("output messages %q lack the completion", v.AsString())
	}
	wantAttr(t, tool, "gen_ai.tool.call.arguments", `{"city":"Oslo"}`)
	if v, _ := attrOf(tool, "gen_ai.tool.call.result"); !strings.Contains(v.AsString(), `"tempC":4`) ||
		!strings.Contains(v.AsString(), vault.Redacted) {
		t.Fatalf("tool result %q", v.AsString())
	}
	for _, s := range rec.spans.GetSpans() {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), secretKey) {
				t.Fatalf("span %s attribute %s holds the vault's secret", s.Name, kv.Key)
			}
		}
	}
}

type researchOut struct {
	Answer string `json:"answer"`
}

var research = engine.Define[cityIn, researchOut](toolsUnit, "research", engine.Public(), engine.Describe("Ask the researcher."))

// A subagent (an agent run by a tool's flow) nests under the tool call that ran it.
func TestSubagentSpansNest(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	researcher := ai.Agent("researcher", ai.Model("offline", scripted.New(scripted.Turn{Text: "Oslo is cold."}), "scripted-2"), ai.Tools(), 2)
	boss := ai.Agent("boss", ai.Model("offline", scripted.New(
		scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_r", Name: "tools_research", Arguments: `{"city":"Oslo"}`}}},
		scripted.Turn{Text: "Cold."},
	), "scripted-1"), ai.Tools(research), 4)
	app, err := engine.New(telemetry.New(rec.options(false)),
		engine.Bind(research, func(fx *engine.Fx, in cityIn) (researchOut, error) {
			run, err := ai.Run(fx, researcher, "About "+in.City, ai.RunOptions{})
			if err != nil {
				return researchOut{}, err
			}
			return researchOut{Answer: string(run.Result().Output)}, nil
		}),
		engine.BindStream(ask, func(fx *engine.Fx, in chatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, boss, in.Message, out, ai.RunOptions{})
		}),
		ai.Register(boss, researcher),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/chat", "application/json", strings.NewReader(`{"message":"Oslo?"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range agent.ReadAgentEventsResponse(resp) {
		if err != nil {
			t.Fatal(err)
		}
	}
	tool := rec.one(t, "execute_tool tools.research")
	call := rec.one(t, "tools.research")
	sub := rec.one(t, "invoke_agent researcher")
	subChat := rec.one(t, "chat scripted-2")
	if call.Parent.SpanID() != tool.SpanContext.SpanID() || sub.Parent.SpanID() != call.SpanContext.SpanID() ||
		subChat.Parent.SpanID() != sub.SpanContext.SpanID() {
		t.Fatal("the subagent's spans do not nest under the tool call that ran it")
	}
	if sub.SpanContext.TraceID() != rec.one(t, "POST /chat").SpanContext.TraceID() {
		t.Fatal("the subagent is not in the request's trace")
	}
}
