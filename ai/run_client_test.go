package ai_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx"
)

// The flows of the client round-trip tests: a forecast tool, and an agent flow that
// returns its run without streaming.
var (
	rcUnit     = engine.NewUnit("rc")
	rcForecast = engine.Define[rcForecastIn, rcForecastOut](rcUnit, "forecast", engine.Public())
	rcSummary  = engine.Define[ChatIn, *ai.AgentRun](rcUnit, "summary", engine.POST("/rc/summary"), engine.Public())
)

type rcForecastIn struct {
	City string `json:"city"`
}

type rcForecastOut struct {
	City string `json:"city"`
	Sky  string `json:"sky"`
}

// rcServer serves the summary flow, played by a scripted model that calls the forecast
// tool and then answers. It keeps the result of every run the server finished, to
// compare with what the client decodes.
type rcServer struct {
	*httptest.Server
	app *engine.App

	mu      sync.Mutex
	results []ai.RunResult
}

func newRCServer(t *testing.T) *rcServer {
	t.Helper()
	in, out := int64(40), int64(7)
	model := ai.Model("rc", scripted.New(
		scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "rc_forecast", Arguments: `{"city":"Paris"}`}}},
		scripted.Turn{Text: "It is sunny in Paris.", Usage: ai.Usage{InputTokens: &in, OutputTokens: &out}},
	), "scripted-1", ai.WithPricing(1, 2))
	forecaster := ai.Agent("forecaster", model, ai.Tools(rcForecast), 0)
	s := &rcServer{}
	var err error
	s.app, err = engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(rcForecast, func(_ *engine.Fx, in rcForecastIn) (rcForecastOut, error) {
			return rcForecastOut{City: in.City, Sky: "sunny"}, nil
		}),
		engine.Bind(rcSummary, func(fx *engine.Fx, in ChatIn) (*ai.AgentRun, error) {
			run, err := ai.Run(fx, forecaster, in.Message, ai.RunOptions{})
			if err == nil {
				s.mu.Lock()
				s.results = append(s.results, run.Result())
				s.mu.Unlock()
			}
			return run, err
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	s.Server = httptest.NewServer(s.app.Handler())
	t.Cleanup(s.Close)
	return s
}

func (s *rcServer) lastResult(t *testing.T) ai.RunResult {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.results) == 0 {
		t.Fatal("the server finished no run")
	}
	return s.results[len(s.results)-1]
}

// A flow that returns its agent run without streaming answers the run's result as data,
// and clientx.Call decodes it into the *ai.AgentRun the flow declares: Result() is the
// server's result, output and usage included, over REST and over RPC.
func TestCallDecodesAnUnstreamedRun(t *testing.T) {
	t.Parallel()
	s := newRCServer(t)
	rest, err := clientx.ForApp(s.app, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	rpc, err := clientx.New(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*clientx.Client{"REST": rest, "RPC": rpc} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res := clientx.Call(ctx, c, rcSummary, ChatIn{Message: "Weather in Paris?"})
			if res.Failed() {
				t.Fatalf("call failed: %v (status %d)", res.Error, res.Status)
			}
			if res.Data == nil {
				t.Fatal("the run decoded as nil")
			}
			got, want := res.Data.Result(), s.lastResult(t)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded result %+v, the server's %+v", got, want)
			}
			var tool rcForecastOut
			if err := json.Unmarshal(got.Output, &tool); err != nil || tool.Sky != "sunny" {
				t.Fatalf("output %s is not the tool's result (%v)", got.Output, err)
			}
			if got.Text != "It is sunny in Paris." || got.StopReason != "completed" || got.Cost <= 0 ||
				got.Usage == nil || got.Usage.InputTokens == nil || *got.Usage.InputTokens != 40 {
				t.Fatalf("decoded result %+v", got)
			}
			if res.Data.ID() != "" || res.Data.Interrupts() != nil {
				t.Fatalf("a decoded run is a record of the outcome: id %q, interrupts %v", res.Data.ID(), res.Data.Interrupts())
			}
		})
	}
}

// What AgentRun.MarshalJSON writes, UnmarshalJSON reads back; what is not a result is an
// error, not a silently empty run.
func TestAgentRunJSONRoundTrip(t *testing.T) {
	t.Parallel()
	var run ai.AgentRun
	in := `{"text":"hi","output":{"a":[1,2]},"cost":0.25,"stopReason":"max_steps","usage":{"inputTokens":3}}`
	if err := json.Unmarshal([]byte(in), &run); err != nil {
		t.Fatal(err)
	}
	if r := run.Result(); r.Text != "hi" || r.StopReason != "max_steps" || r.Cost != 0.25 || string(r.Output) != `{"a":[1,2]}` {
		t.Fatalf("decoded %+v", r)
	}
	out, err := json.Marshal(&run)
	if err != nil || string(out) != in {
		t.Fatalf("re-encoded %s (%v), want %s", out, err, in)
	}
	for _, bad := range []string{`"text/event-stream"`, `[1]`, `{"cost":"free"}`} {
		if err := json.Unmarshal([]byte(bad), new(ai.AgentRun)); err == nil {
			t.Errorf("%s decoded as a run", bad)
		}
	}
}
