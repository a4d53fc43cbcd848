// Command provider runs an agent on a real model: OpenAI, any OpenAI-compatible server
// (Ollama, vLLM, a gateway), or Anthropic. The agent streams its run as AG-UI events and
// may call one tool, a flow of the app. It is the quickstart's agent with a real provider;
// the quickstart itself stays offline so that it links no provider SDK.
//
//	OPENAI_API_KEY=sk-… go run ./examples/provider
//	ANTHROPIC_API_KEY=sk-ant-… go run ./examples/provider
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 go run ./examples/provider
//
// OPENAI_MODEL and ANTHROPIC_MODEL choose the model (gpt-4o-mini and claude-haiku-4-5 by
// default). Then:
//
//	curl -N -X POST http://127.0.0.1:8080/chat -d '{"message":"What is the weather in Paris?"}'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/openai"
)

// Tools is the unit of the agent's tools.
var Tools = engine.NewUnit("tools")

// WeatherIn is the weather tool's input; the model sees its JSON Schema.
type WeatherIn struct {
	City string `json:"city"`
}

// WeatherOut is the weather tool's output.
type WeatherOut struct {
	City  string `json:"city"`
	TempC int    `json:"tempC"`
}

// Weather is a tool the agent may call: an ordinary flow, gated like any other.
var Weather = engine.Define[WeatherIn, WeatherOut](Tools, "weather", engine.Public(),
	engine.Describe("Current temperature of a city in °C."))

// Chat is the unit of the agent flow.
var Chat = engine.NewUnit("chat")

// ChatIn is the chat flow's input.
type ChatIn struct {
	Message string `json:"message"`
}

// Ask streams the agent's run as AG-UI events.
var Ask = engine.DefineStream[ChatIn, agui.Event, agui.RunOutput](Chat, "ask", engine.POST("/chat"), engine.Public())

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	model, err := modelFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	app, err := newApp(model)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := engine.NewServer("", app.Handler())
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	fmt.Printf("agent on %s (%s) at http://%s\n\n  curl -N -X POST http://%[3]s/chat -d '{\"message\":\"What is the weather in Paris?\"}'\n",
		model.ModelID(), model.Provider().Name(), ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// modelFromEnv picks the provider: Anthropic when ANTHROPIC_API_KEY is set, else
// OpenAI (or a compatible server) when OPENAI_API_KEY or OPENAI_BASE_URL is. Prices are
// per million tokens; they turn the reported token counts into the run's cost.
func modelFromEnv(getenv func(string) string) (*ai.ModelDef, error) {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	switch {
	case getenv("ANTHROPIC_API_KEY") != "":
		p, err := anthropic.New(anthropic.Options{APIKey: getenv("ANTHROPIC_API_KEY"), BaseURL: getenv("ANTHROPIC_BASE_URL")})
		if err != nil {
			return nil, err
		}
		return ai.Model("default", p, or(getenv("ANTHROPIC_MODEL"), "claude-haiku-4-5"), ai.WithPricing(1, 5)), nil
	case getenv("OPENAI_API_KEY") != "" || getenv("OPENAI_BASE_URL") != "":
		p, err := openai.New(openai.Options{APIKey: getenv("OPENAI_API_KEY"), BaseURL: getenv("OPENAI_BASE_URL")})
		if err != nil {
			return nil, err
		}
		return ai.Model("default", p, or(getenv("OPENAI_MODEL"), "gpt-4o-mini"), ai.WithPricing(0.15, 0.60)), nil
	}
	return nil, errors.New("set OPENAI_API_KEY, OPENAI_BASE_URL or ANTHROPIC_API_KEY (the offline model is in examples/quickstart)")
}

// newApp binds the tool and the agent flow. The agent may call the weather tool and
// make at most three tool calls a run.
func newApp(model *ai.ModelDef) (*engine.App, error) {
	assistant := ai.Agent("assistant", model, ai.Tools(Weather), 3,
		ai.System("You answer questions about the weather. Use the weather tool; answer in one sentence."))
	return engine.New(
		engine.Bind(Weather, func(fx *engine.Fx, in WeatherIn) (WeatherOut, error) {
			return WeatherOut{City: in.City, TempC: 12 + len(in.City)}, nil
		}),
		engine.BindStream(Ask, func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, assistant, in.Message, out, ai.RunOptions{})
		}),
		ai.Register(assistant),
	)
}
