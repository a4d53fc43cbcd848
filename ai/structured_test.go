package ai_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// The structured-output scenarios: ai.AskAs against the real providers and their wire
// fakes, in each provider's native mode and in the prompted fallback.

var extractUnit = engine.NewUnit("extract")

// ExtractIn is the text to extract from.
type ExtractIn struct {
	Text string `json:"text"`
}

// Extracted is the typed value the model is asked for.
type Extracted struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

var (
	extractAgentFlow = engine.DefineStream[ChatIn, agui.Event, ai.RunResult](extractUnit, "agent", engine.POST("/extract/agent"), engine.Public())
	extractFlow      = engine.Define[ExtractIn, Extracted](extractUnit, "weather", engine.Public(),
		engine.Errors(ai.InvalidModelOutput))
	// extractDurable asks, then waits for a decision, so a test can resume it and watch
	// the replay.
	extractDurable = engine.Define[ExtractIn, Extracted](extractUnit, "durable", engine.Public(), engine.Durable(),
		engine.Errors(ai.InvalidModelOutput))
	extractList = engine.Define[ExtractIn, []string](extractUnit, "cities", engine.Public(),
		engine.Errors(ai.InvalidModelOutput))
)

// structuredApp serves the extract flows with model on provider p.
type structuredApp struct {
	srv     *httptest.Server
	journal *journal.Journal
	runID   atomic.Value // the durable flow's run id
}

func newStructuredApp(t *testing.T, p ai.Provider) *structuredApp {
	t.Helper()
	model := ai.Model("default", p, "model-test", ai.WithPricing(1, 2))
	j, err := journal.New(memory.New(), journal.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a := &structuredApp{journal: j}
	extractor := ai.Agent("extractor", model, ai.Tools(weatherFlow), 0, ai.Output[Extracted](), ai.System("You extract data."))
	app, err := engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		durable.With(j),
		engine.Bind(extractFlow, func(fx *engine.Fx, in ExtractIn) (Extracted, error) {
			return ai.AskAs[Extracted](fx, model, "Extract the weather: "+in.Text, ai.AskOptions{Name: "weather", System: "You extract data."})
		}),
		engine.Bind(extractDurable, func(fx *engine.Fx, in ExtractIn) (Extracted, error) {
			a.runID.Store(durable.RunOf(fx).ID)
			w, err := ai.AskAs[Extracted](fx, model, "Extract the weather: "+in.Text, ai.AskOptions{Name: "weather"})
			if err != nil {
				return Extracted{}, err
			}
			if _, err := durable.Park(fx, "continue", time.Time{}, w); err != nil {
				return Extracted{}, err
			}
			return w, nil
		}),
		engine.Bind(weatherFlow, func(_ *engine.Fx, in WeatherIn) (WeatherOut, error) {
			return WeatherOut{City: in.City, TempC: -3}, nil
		}),
		engine.BindStream(extractAgentFlow, func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, extractor, in.Message, out, ai.RunOptions{})
		}),
		engine.Bind(extractList, func(fx *engine.Fx, in ExtractIn) ([]string, error) {
			return ai.AskAs[[]string](fx, model, "List the cities: "+in.Text, ai.AskOptions{Name: "cities", Retries: -1})
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	a.srv = httptest.NewServer(app)
	t.Cleanup(a.srv.Close)
	return a
}

// call posts in to the RPC route of flow and decodes the envelope.
func (a *structuredApp) call(t *testing.T, flow string, in string) (int, envelope) {
	t.Helper()
	res, err := http.Post(a.srv.URL+"/_engine/extract/"+flow, "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env envelope
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, env
}

type envelope struct {
	Data  json.RawMessage `json:"data"`
	Error *struct {
		Code string          `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
	Meta map[string]any `json:"meta"`
}

const goodReply = `{"city":"Oslo","tempC":-3.5}`

// structuredFake is a provider of one kind and mode against its wire fake, with what the
// test checks of the requests it received.
type structuredFake struct {
	name     string
	provider func(t *testing.T, replies []string) (ai.Provider, func() []sentRequest)
}

// sentRequest is what a structured-output test checks of one model request.
type sentRequest struct {
	native   string // the native mode's schema as sent ("" in the fallback)
	system   string
	lastUser string
}

var structuredFakes = []structuredFake{
	{"openai/json_schema", openaiFake(false)},
	{"openai/fallback", openaiFake(true)},
	{"anthropic/output_config", anthropicFake(anthropic.OutputNative)},
	{"anthropic/forced_tool", anthropicFake(anthropic.OutputTool)},
	{"anthropic/fallback", anthropicFake(anthropic.OutputPrompt)},
}

func openaiFake(noJSONSchema bool) func(t *testing.T, replies []string) (ai.Provider, func() []sentRequest) {
	return func(t *testing.T, replies []string) (ai.Provider, func() []sentRequest) {
		var turns []openaitest.Turn
		for _, r := range replies {
			turns = append(turns, openaitest.Turn{Text: r, Usage: &openaitest.Usage{PromptTokens: 10, CompletionTokens: 5}})
		}
		fake := openaitest.NewServer(turns...)
		t.Cleanup(fake.Close)
		p, err := openai.New(openai.Options{BaseURL: fake.URL(), NoJSONSchema: noJSONSchema})
		if err != nil {
			t.Fatal(err)
		}
		return p, func() []sentRequest {
			var out []sentRequest
			for _, r := range fake.Requests() {
				s := sentRequest{lastUser: r.Messages[len(r.Messages)-1].Text()}
				if r.Messages[0].Role == "system" {
					s.system = r.Messages[0].Text()
				}
				if f := r.ResponseFormat; f != nil {
					if f.Type != "json_schema" || !slices.Contains([]string{"weather", "cities", "extractor"}, f.JSONSchema.Name) {
						t.Errorf("response_format = %+v, want json_schema named after the prompt", f)
					}
					s.native = string(f.JSONSchema.Schema)
				}
				out = append(out, s)
			}
			return out
		}
	}
}

func anthropicFake(mode anthropic.OutputMode) func(t *testing.T, replies []string) (ai.Provider, func() []sentRequest) {
	return func(t *testing.T, replies []string) (ai.Provider, func() []sentRequest) {
		var turns []anthropictest.Turn
		for _, r := range replies {
			turn := anthropictest.Turn{Text: r, Usage: &anthropictest.Usage{InputTokens: 10, OutputTokens: 5}}
			if mode == anthropic.OutputTool && json.Valid([]byte(r)) {
				// The model answers by calling the forced tool, as Claude does.
				turn = anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{ID: "toolu_1", Name: "weather", Arguments: r}}}
			}
			turns = append(turns, turn)
		}
		fake := anthropictest.NewServer(turns...)
		t.Cleanup(fake.Close)
		p, err := anthropic.New(anthropic.Options{BaseURL: fake.URL(), Output: mode})
		if err != nil {
			t.Fatal(err)
		}
		return p, func() []sentRequest {
			var out []sentRequest
			for _, r := range fake.Requests() {
				last := r.Messages[len(r.Messages)-1]
				s := sentRequest{system: r.SystemText()}
				for _, b := range last.Content {
					s.lastUser += b.Text
				}
				if oc := r.OutputConfig; oc != nil && oc.Format != nil {
					s.native = string(oc.Format.Schema)
				}
				if c := r.ToolChoice; c != nil {
					if c.Type != "tool" || len(r.Tools) != 1 || r.Tools[0].Name != c.Name {
						t.Errorf("tool_choice %+v with tools %+v, want the one output tool forced", c, r.Tools)
					}
					s.native = string(r.Tools[0].InputSchema)
				}
				out = append(out, s)
			}
			return out
		}
	}
}

// TestAskAsStructuredOutput checks that ai.AskAs sends T's schema in each provider's
// native mode (or, in the fallback, in the system prompt, tolerating a code fence around
// the reply) and decodes the reply into T.
func TestAskAsStructuredOutput(t *testing.T) {
	t.Parallel()
	for _, f := range structuredFakes {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			reply := goodReply
			fallback := strings.HasSuffix(f.name, "fallback")
			if fallback {
				reply = "```json\n" + goodReply + "\n```"
			}
			p, sent := f.provider(t, []string{reply})
			a := newStructuredApp(t, p)
			status, env := a.call(t, "weather", `{"text":"It is -3.5 degrees in Oslo."}`)
			if status != http.StatusOK || env.Error != nil {
				t.Fatalf("status %d, error %+v", status, env.Error)
			}
			var got Extracted
			if err := json.Unmarshal(env.Data, &got); err != nil {
				t.Fatal(err)
			}
			eq(t, "output", got, Extracted{City: "Oslo", TempC: -3.5})
			reqs := sent()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			r := reqs[0]
			const wantSchema = `"properties":{"city":{"type":"string"},"tempC":{"type":"number"}},"required":["city","tempC"],"additionalProperties":false`
			if fallback {
				eq(t, "native schema sent", r.native, "")
				if !strings.Contains(r.system, wantSchema) || !strings.HasPrefix(r.system, "You extract data.") {
					t.Errorf("system prompt %q lacks the agent's prompt followed by the schema", r.system)
				}
			} else {
				if !sameJSON(r.native, `{"type":"object",`+wantSchema+`}`) {
					t.Errorf("native schema %s, want Extracted's", r.native)
				}
				eq(t, "system prompt", r.system, "You extract data.")
			}
		})
	}
}

// sameJSON reports whether two JSON texts encode the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestAskAsAsksAgainWithIssues checks that a reply that does not validate is asked again
// with its issues, and that one that never validates fails after two retries with the
// declared error InvalidModelOutput carrying the last issues.
func TestAskAsAsksAgainWithIssues(t *testing.T) {
	t.Parallel()
	for _, f := range structuredFakes {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			t.Run("recovers", func(t *testing.T) {
				p, sent := f.provider(t, []string{`{"city":"Oslo"}`, goodReply})
				a := newStructuredApp(t, p)
				status, env := a.call(t, "weather", `{"text":"Oslo, -3.5"}`)
				if status != http.StatusOK {
					t.Fatalf("status %d, error %+v", status, env.Error)
				}
				reqs := sent()
				if len(reqs) != 2 {
					t.Fatalf("%d model requests, want 2", len(reqs))
				}
				if !strings.Contains(reqs[1].lastUser, "tempC") || !strings.Contains(reqs[1].lastUser, "required") {
					t.Errorf("the second request's last message %q does not name the missing tempC", reqs[1].lastUser)
				}
			})
			t.Run("fails", func(t *testing.T) {
				bad := []string{`{"city":"Oslo","tempC":"cold"}`, `not json at all`, `{"city":7,"tempC":1}`, goodReply}
				p, sent := f.provider(t, bad)
				a := newStructuredApp(t, p)
				status, env := a.call(t, "weather", `{"text":"Oslo"}`)
				eq(t, "status", status, http.StatusBadGateway)
				if env.Error == nil || env.Error.Code != "InvalidModelOutput" {
					t.Fatalf("error %+v, want InvalidModelOutput", env.Error)
				}
				var data ai.InvalidOutputData
				if err := json.Unmarshal(env.Error.Data, &data); err != nil {
					t.Fatal(err)
				}
				if len(data.Issues) == 0 || !strings.HasPrefix(data.Issues[0], "city:") {
					t.Errorf("issues %q, want the last reply's (city is not a string)", data.Issues)
				}
				eq(t, "model requests", len(sent()), 3) // the first and two retries
			})
		})
	}
}

// TestAskAsNonObject checks that a type that is not an object is asked for wrapped as
// {"value": …} (vendors want an object) and unwrapped, and that Retries: -1 asks once.
func TestAskAsNonObject(t *testing.T) {
	t.Parallel()
	p, sent := openaiFake(false)(t, []string{`{"value":["Oslo","Lima"]}`})
	a := newStructuredApp(t, p)
	status, env := a.call(t, "cities", `{"text":"Oslo and Lima"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d, error %+v", status, env.Error)
	}
	eq(t, "output", string(env.Data), `["Oslo","Lima"]`)
	if s := sent()[0].native; !strings.Contains(s, `"required":["value"]`) {
		t.Errorf("schema %s, want the list wrapped under value", s)
	}

	p, sent = openaiFake(false)(t, []string{`{"value":"Oslo"}`, `{"value":["Oslo"]}`})
	a = newStructuredApp(t, p)
	status, env = a.call(t, "cities", `{"text":"Oslo"}`)
	eq(t, "status without retries", status, http.StatusBadGateway)
	eq(t, "model requests without retries", len(sent()), 1)
}

// TestAskAsDurableReplay checks that in a durable flow the typed result is the recorded
// step: the run resumed after its decision replays it without calling the model.
func TestAskAsDurableReplay(t *testing.T) {
	t.Parallel()
	for _, f := range structuredFakes[:3] {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			p, sent := f.provider(t, []string{goodReply, `{"city":"Lima","tempC":20}`})
			a := newStructuredApp(t, p)
			status, env := a.call(t, "durable", `{"text":"Oslo, -3.5"}`)
			eq(t, "status of the parked call", status, http.StatusAccepted)
			runID, _ := a.runID.Load().(string)
			if err := a.journal.Decide(context.Background(), runID, "continue", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
				t.Fatal(err)
			}
			var rec journal.RunRecord
			waitFor(t, "the resumed run to complete", func() bool {
				r, err := a.journal.GetRun(context.Background(), runID)
				rec = r
				return err == nil && r.Status == journal.StatusCompleted
			})
			var got Extracted
			if err := json.Unmarshal(rec.Output, &got); err != nil {
				t.Fatalf("output %s: %v (%+v)", rec.Output, err, env)
			}
			eq(t, "replayed output", got, Extracted{City: "Oslo", TempC: -3.5})
			eq(t, "model requests", len(sent()), 1)
		})
	}
}

// TestAgentOutput checks an agent with a typed output: the schema goes with every model
// call beside the tools, a final answer that does not validate is fed back with its
// issues for another turn, RUN_FINISHED.result.output is the value (agui.OutputOf decodes
// it), and answers that never validate end the run with RUN_ERROR InvalidModelOutput.
func TestAgentOutput(t *testing.T) {
	t.Parallel()
	for _, f := range []structuredFake{structuredFakes[0], structuredFakes[1], structuredFakes[2]} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			p, sent := f.provider(t, []string{`{"city":"Oslo","tempC":"minus three"}`, goodReply})
			a := newStructuredApp(t, p)
			tr := a.stream(t, `{"message":"Oslo is at -3.5"}`)
			res := tr.result(t)
			got, err := agui.OutputOf[Extracted](res)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, "output", got, Extracted{City: "Oslo", TempC: -3.5})
			eq(t, "stop reason", res.StopReason, agui.StopCompleted)
			reqs := sent()
			eq(t, "model requests", len(reqs), 2)
			if !strings.Contains(reqs[1].lastUser, "tempC") {
				t.Errorf("the second request's last message %q does not name tempC", reqs[1].lastUser)
			}
			if native := !strings.HasSuffix(f.name, "fallback"); native != (reqs[0].native != "") {
				t.Errorf("native schema sent = %q", reqs[0].native)
			}

			p, _ = f.provider(t, []string{`{}`, `{}`, `{}`})
			a = newStructuredApp(t, p)
			eq(t, "run error code", a.stream(t, `{"message":"Oslo"}`).runError(t).Code, "InvalidModelOutput")
		})
	}
}

// stream posts to the agent flow and parses its events.
func (a *structuredApp) stream(t *testing.T, body string) transcript {
	t.Helper()
	res, err := http.Post(a.srv.URL+"/extract/agent", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, string(raw))
}
