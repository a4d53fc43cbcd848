package ai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// Example streams an agent run that calls a tool, and reads its AG-UI events with the Go
// client's reader. The model is scripted; a real app passes an OpenAI or Anthropic
// provider to ai.Model instead.
func Example() {
	// The tool is an ordinary flow: its input type is the JSON Schema the model sees, and
	// its description tells the model what it is for.
	type cityIn struct {
		City string `json:"city"`
	}
	type weatherOut struct {
		City  string `json:"city"`
		TempC int    `json:"tempC"`
	}
	tools := engine.NewUnit("tools")
	weather := engine.Define[cityIn, weatherOut](tools, "weather", engine.Public(),
		engine.Describe("Current temperature of a city in °C."))

	// The flow that runs the agent and streams it.
	type chatIn struct {
		Message string `json:"message"`
	}
	chat := engine.NewUnit("chat")
	ask := engine.DefineStream[chatIn, agui.Event, ai.RunResult](chat, "ask", engine.POST("/chat"), engine.Public())

	// The model asks for the tool (whose wire name is tools_weather), then answers.
	model := ai.Model("offline", scripted.New(
		scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "tools_weather", Arguments: `{"city":"Oslo"}`}}},
		scripted.Turn{Text: "It is 4 °C in Oslo."},
	), "scripted-1")
	assistant := ai.Agent("assistant", model, ai.Tools(weather), 6)

	app, err := engine.New(
		engine.Bind(weather, func(fx *engine.Fx, in cityIn) (weatherOut, error) {
			return weatherOut{City: in.City, TempC: 4}, nil
		}),
		engine.BindStream(ask, func(fx *engine.Fx, in chatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, assistant, in.Message, out, ai.RunOptions{})
		}),
		ai.Register(assistant),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/chat", "application/json", strings.NewReader(`{"message":"Weather in Oslo?"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range agent.ReadAgentEventsResponse(resp) {
		if err != nil {
			fmt.Println(err)
			return
		}
		switch ev := ev.(type) {
		case agui.ToolCallStart:
			fmt.Println(ev.Type(), ev.ToolCallName)
		case agui.ToolCallResult:
			fmt.Println(ev.Type(), ev.Content)
		case agui.ToolCallArgs:
			fmt.Printf("%s %q\n", ev.Type(), ev.Delta)
		case agui.TextMessageContent:
			fmt.Printf("%s %q\n", ev.Type(), ev.Delta)
		case agui.RunFinished:
			fmt.Println(ev.Type(), ev.Result.StopReason, string(ev.Result.Output))
		default:
			fmt.Println(ev.Type())
		}
	}
	// Output:
	// RUN_STARTED
	// STEP_STARTED
	// TOOL_CALL_START tools.weather
	// TOOL_CALL_ARGS "{\"city\""
	// TOOL_CALL_ARGS ":\"Oslo\"}"
	// TOOL_CALL_END
	// TOOL_CALL_RESULT {"city":"Oslo","tempC":4}
	// STEP_FINISHED
	// STEP_STARTED
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT "It "
	// TEXT_MESSAGE_CONTENT "is "
	// TEXT_MESSAGE_CONTENT "4 "
	// TEXT_MESSAGE_CONTENT "°C "
	// TEXT_MESSAGE_CONTENT "in "
	// TEXT_MESSAGE_CONTENT "Oslo."
	// TEXT_MESSAGE_END
	// STEP_FINISHED
	// RUN_FINISHED completed {"city":"Oslo","tempC":4}
}

// ExampleRun runs an agent without streaming: the handler gets the finished run, and the
// caller a plain envelope. A budget stops the run, without an error, once its spend
// reaches the limit; the spend comes from the reported token counts and the model's prices.
func ExampleRun() {
	type topicIn struct {
		Topic string `json:"topic"`
	}
	notes := engine.NewUnit("notes")
	summarize := engine.Define[topicIn, ai.RunResult](notes, "summarize", engine.Public())

	in, out := int64(2_000), int64(500)
	model := ai.Model("offline", scripted.New(
		scripted.Turn{Text: "Tides follow the moon.", Usage: ai.Usage{InputTokens: &in, OutputTokens: &out}},
	), "scripted-1", ai.WithPricing(2, 8)) // per million tokens: this turn costs 0.008
	writer := ai.Agent("writer", model, ai.Tools(), 0, ai.System("Answer in one sentence."), ai.Budget(0.005))

	app, err := engine.New(engine.Bind(summarize, func(fx *engine.Fx, in topicIn) (ai.RunResult, error) {
		run, err := ai.Run(fx, writer, "Summarize: "+in.Topic, ai.RunOptions{})
		if err != nil {
			return ai.RunResult{}, err
		}
		return run.Result(), nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := clientx.New("http://app", clientx.WithDoer(clientx.InProcess(app.Handler())))
	res := clientx.Call(context.Background(), c, summarize, topicIn{Topic: "tides"})
	if res.Failed() {
		fmt.Println(res.Error)
		return
	}
	fmt.Println(res.Data.Text)
	fmt.Println(res.Data.StopReason, res.Data.Cost, *res.Data.Usage.InputTokens, *res.Data.Usage.OutputTokens)
	// Output:
	// Tides follow the moon.
	// budget 0.008 2000 500
}

// ExampleAsk sends one prompt from a handler and refuses an answer that cost more than
// the prompt may spend.
func ExampleAsk() {
	type countryIn struct {
		Country string `json:"country"`
	}
	geo := engine.NewUnit("geo")
	capital := engine.Define[countryIn, string](geo, "capital", engine.Public())

	in, out := int64(1_000), int64(20)
	model := ai.Model("offline", scripted.New(
		scripted.Turn{Text: "Paris.", Usage: ai.Usage{InputTokens: &in, OutputTokens: &out}},
	), "scripted-1", ai.WithPricing(2, 8)) // this prompt costs 0.00216

	app, err := engine.New(engine.Bind(capital, func(fx *engine.Fx, in countryIn) (string, error) {
		return ai.Ask(fx, model, "Capital of "+in.Country+"?", ai.AskOptions{Name: "capital", MaxCostPerCall: 0.01})
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := clientx.New("http://app", clientx.WithDoer(clientx.InProcess(app.Handler())))
	res := clientx.Call(context.Background(), c, capital, countryIn{Country: "France"})
	fmt.Println(res.Data, res.Error == nil)
	// Output:
	// Paris. true
}
