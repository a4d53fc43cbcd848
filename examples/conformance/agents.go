package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/openai"
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

// ChatIn is chat.ask's input: a message, or a whole conversation, and an optional thread.
type ChatIn struct {
	Message  string            `json:"message,omitempty"`
	Messages []ai.InputMessage `json:"messages,omitempty"`
	ThreadID string            `json:"threadId,omitempty"`
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
	Ask = engine.Define[ChatIn, *ai.AgentRun](Chat, "ask", engine.POST("/chat"), engine.Durable(),
		engine.InputSchema(func(s *jsonschema.Schema) {
			if p := s.Properties["message"]; p != nil {
				p.MinLength = new(1)
			}
		}))
	Story = engine.Define[StoryIn, *ai.TextStream](Chat, "story", engine.POST("/chat/story"))
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
	researcher := ai.Agent("researcher", model, []string{"tools.weather"}, 0,
		ai.System("You research questions; use the weather tool for temperatures."))
	assistant := ai.Agent("assistant", model, []string{"tools.weather", "tools.transfer", "tools.explode", "tools.research"}, 6,
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
		engine.Bind(Ask, func(fx *engine.Fx, in ChatIn) (*ai.AgentRun, error) {
			return ai.Run(fx, assistant, ai.Input{Message: in.Message, Messages: in.Messages, ThreadID: in.ThreadID}, ai.RunOptions{Stream: true})
		}),
		engine.Bind(Story, func(fx *engine.Fx, in StoryIn) (*ai.TextStream, error) {
			return ai.StreamText(fx, model, in.Prompt)
		}),
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
