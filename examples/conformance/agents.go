package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/uimessage"
	"github.com/bbc28f59/engine/gate"
	"github.com/google/jsonschema-go/jsonschema"
)

// The agent part: tools, the chat flows and the agents of APP.md. The model talks to the
// OpenAI-compatible endpoint at ENGINE_MODEL_BASE_URL.
var (
	Tools = engine.NewUnit("tools")
	Chat  = engine.NewUnit("chat")
)

type WeatherIn struct {
	City string `json:"city"`
}
type WeatherOut struct {
	City  string `json:"city"`
	TempC int    `json:"tempC"`
}

type TransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}
type TransferOut struct {
	OK     bool    `json:"ok"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

type ResearchIn struct {
	Question string `json:"question"`
}
type ResearchOut struct {
	Answer string `json:"answer"`
}

// RememberIn is tools.remember's input: state[key] = value.
type RememberIn struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// RememberOut is tools.remember's reply.
type RememberOut struct {
	OK bool `json:"ok"`
}

type StoryIn struct {
	Prompt string `json:"prompt"`
}

var (
	Weather = engine.Define[WeatherIn, WeatherOut](Tools, "weather",
		engine.Describe("The current temperature of a city, in degrees Celsius."))
	Transfer = engine.Define[TransferIn, TransferOut](Tools, "transfer", engine.Durable(),
		engine.Describe("Transfer an amount of money to someone. Amounts above 100 need a human's approval."))
	Explode = engine.Define[struct{}, struct{}](Tools, "explode",
		engine.Describe("A tool that always fails."))
	Research = engine.Define[ResearchIn, ResearchOut](Tools, "research",
		engine.Describe("Ask the researcher agent a question; it can look up the weather."))
	Remember = engine.Define[RememberIn, RememberOut](Tools, "remember",
		engine.Describe("Remember a value in the state shared with the user's app, under key."))
	// Ask takes AG-UI's RunAgentInput as it is ({message} and {messages} are its forms
	// too), so any AG-UI frontend talks to it unchanged.
	Ask = engine.DefineStream[agui.Input, agui.Event, agui.RunOutput](Chat, "ask", engine.POST("/chat"), engine.Durable(),
		engine.InputSchema(func(s *jsonschema.Schema) {
			if p := s.Properties["message"]; p != nil {
				p.MinLength = new(1)
			}
		}))
	Story = engine.DefineStream[StoryIn, string, string](Chat, "story", engine.POST("/chat/story"))
	// AskUI is the assistant for the Vercel AI SDK's useChat: it takes the AI SDK's chat
	// request and answers with its UI message stream, gated as chat.ask.
	AskUI = engine.DefineStream[uimessage.Request, uimessage.Chunk, agui.RunOutput](Chat, "ui", engine.POST("/chat/ui"), engine.Durable(),
		engine.Describe("The assistant for the Vercel AI SDK's useChat: its chat request in, its UI message stream out."))
)

func init() {
	register("agents", agentsPart)
}

func agentsPart(_ context.Context, e *env) (engine.Option, error) {
	prov, err := openai.New(openai.Options{BaseURL: e.ModelBaseURL, APIKey: e.ModelAPIKey})
	if err != nil {
		return nil, err
	}
	var transferDelay time.Duration
	if v := os.Getenv("ENGINE_TRANSFER_DELAY"); v != "" {
		if transferDelay, err = time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("ENGINE_TRANSFER_DELAY: %w", err)
		}
	}
	model := ai.Model("default", prov, e.ModelName, ai.WithPricing(1.0, 2.0))
	researcher := ai.Agent("researcher", model, ai.Tools(Weather), 0,
		ai.System("You research questions; use the weather tool for temperatures."))
	assistant := ai.Agent("assistant", model, ai.Tools(Weather, Transfer, Explode, Research, Remember), 6,
		ai.Budget(0.05), ai.System("You are a helpful assistant. Use the tools when they help."))

	return engine.Options(
		engine.Bind(Weather, func(_ *engine.Fx, in WeatherIn) (WeatherOut, error) {
			return WeatherOut{City: in.City, TempC: tempOf(in.City)}, nil
		}),
		engine.Bind(Transfer, transfer(e.DB, transferDelay), gate.Scopes("tools:transfer"), ai.Approval(func(in TransferIn) bool { return in.Amount > 100 })),
		engine.Bind(Explode, func(*engine.Fx, struct{}) (struct{}, error) {
			return struct{}{}, errors.New("tools.explode: this tool always fails")
		}),
		engine.Bind(Research, func(fx *engine.Fx, in ResearchIn) (ResearchOut, error) {
			run, err := ai.Run(fx, researcher, in.Question, ai.RunOptions{})
			if err != nil {
				return ResearchOut{}, err
			}
			return ResearchOut{Answer: run.Result().Text}, nil
		}),
		engine.Bind(Remember, func(fx *engine.Fx, in RememberIn) (RememberOut, error) {
			if err := ai.SetState(fx, in.Key, in.Value); err != nil {
				return RememberOut{}, err
			}
			return RememberOut{OK: true}, nil
		}),
		engine.BindStream(Ask, func(fx *engine.Fx, in agui.Input, out *engine.Stream[agui.Event]) (agui.RunOutput, error) {
			return ai.Stream(fx, assistant, in, out, ai.RunOptions{})
		}),
		engine.BindStream(AskUI, func(fx *engine.Fx, in uimessage.Request, out *engine.Stream[uimessage.Chunk]) (agui.RunOutput, error) {
			return ai.StreamUI(fx, assistant, in, out, ai.RunOptions{})
		}),
		// AG-UI clients read what the assistant supports here (their getCapabilities),
		// behind chat.ask's gates: only who may talk to the assistant sees its tools.
		ai.ServeCapabilities("/chat/capabilities", assistant, Ask),
		engine.BindStream(Story, func(fx *engine.Fx, in StoryIn, out *engine.Stream[string]) (string, error) {
			return ai.StreamText(fx, model, in.Prompt, out)
		}),
		ai.Register(researcher, assistant),
	), nil
}

// tempOf is a deterministic temperature for a city name, so tests can predict it.
func tempOf(city string) int {
	sum := 0
	for _, r := range city {
		sum += int(r)
	}
	return sum%35 - 5
}
