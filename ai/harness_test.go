package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/ai/uimessage"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// The harness drives the real openai and anthropic providers against their wire fakes,
// behind a real app served over HTTP. The flows below are the tools and entry points every
// scenario shares; each test binds them into its own app.

var (
	toolsUnit = engine.NewUnit("tools")
	chatUnit  = engine.NewUnit("chat")
)

// WeatherIn is the input of the weather tool.
type WeatherIn struct {
	City string `json:"city"`
}

// WeatherOut is the output of the weather tool.
type WeatherOut struct {
	City  string `json:"city"`
	TempC int    `json:"tempC"`
}

// TransferIn is the input of the transfer tool, which needs approval above 100.
type TransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// TransferOut is the output of the transfer tool.
type TransferOut struct {
	OK     bool    `json:"ok"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// ResearchIn is the input of the research tool, which runs a subagent.
type ResearchIn struct {
	Topic string `json:"topic"`
}

// RememberIn is the input of the remember tool, which sets state[key] = value.
type RememberIn struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// RememberOut reports the state the tool saw before it changed it.
type RememberOut struct {
	OK     bool            `json:"ok"`
	Before json.RawMessage `json:"before"`
}

// ChatIn is the input of the chat flows. Text, when set, is passed to ai.Run as a plain
// string; Raw, when set, is passed as it decoded (a map or a string: the "any value encoding
// to one" form); otherwise the other members form an ai.Input.
type ChatIn struct {
	Text     string            `json:"text,omitempty"`
	Raw      any               `json:"raw,omitempty"`
	Message  string            `json:"message,omitempty"`
	Messages []ai.InputMessage `json:"messages,omitempty"`
	ThreadID string            `json:"threadId,omitempty"`
}

// unknownCity is a declared error code of the declared tool: fed back to the model.
var unknownCity = engine.NewCode[WeatherIn]("UnknownCity", http.StatusNotFound)

var (
	weatherFlow    = engine.Define[WeatherIn, WeatherOut](toolsUnit, "weather", engine.Public(), engine.Describe("Weather of a city."))
	transferFlow   = engine.Define[TransferIn, TransferOut](toolsUnit, "transfer", engine.Public())
	secretFlow     = engine.Define[WeatherIn, WeatherOut](toolsUnit, "secret") // gated: anonymous callers get Unauthorized
	guardedFlow    = engine.Define[WeatherIn, WeatherOut](toolsUnit, "guarded", engine.Public())
	boomFlow       = engine.Define[WeatherIn, WeatherOut](toolsUnit, "boom", engine.Public())
	undeclaredFlow = engine.Define[WeatherIn, WeatherOut](toolsUnit, "undeclared", engine.Public())
	panicsFlow     = engine.Define[WeatherIn, WeatherOut](toolsUnit, "panics", engine.Public())
	declaredFlow   = engine.Define[WeatherIn, WeatherOut](toolsUnit, "declared", engine.Public(), engine.Errors(unknownCity))
	researchFlow   = engine.Define[ResearchIn, string](toolsUnit, "research", engine.Public())
	rememberFlow   = engine.Define[RememberIn, RememberOut](toolsUnit, "remember", engine.Public(), engine.Describe("Remember a value in the shared state."))

	chatFlow  = engine.DefineStream[ChatIn, agui.Event, ai.RunResult](chatUnit, "ask", engine.POST("/chat"), engine.Public(), engine.Durable())
	chatPlain = engine.DefineStream[ChatIn, agui.Event, ai.RunResult](chatUnit, "plain", engine.POST("/chat/plain"), engine.Public())
	// chatAGUI takes AG-UI's RunAgentInput as it is: what an AG-UI frontend posts to.
	chatAGUI = engine.DefineStream[ai.Input, agui.Event, ai.RunResult](chatUnit, "agui", engine.POST("/chat/agui"), engine.Public(), engine.Durable())
	chatSync = engine.Define[ChatIn, *ai.AgentRun](chatUnit, "sync", engine.POST("/chat/sync"), engine.Public())
	// chatOnSignal waits for the signal nudge under its thread id, then streams an agent
	// run on that thread with the signal's value as the message: a run a signal starts.
	chatOnSignal = engine.DefineStream[ChatIn, agui.Event, ai.RunResult](chatUnit, "onSignal", engine.POST("/chat/on-signal"), engine.Public(), engine.Durable())
	nudge        = durable.NewSignal[string]("nudge")
	// chatUI takes the AI SDK's chat request and answers with its UI message stream.
	chatUI     = engine.DefineStream[uimessage.Request, uimessage.Chunk, ai.RunResult](chatUnit, "ui", engine.POST("/chat/ui"), engine.Public(), engine.Durable())
	promptFlow = engine.Define[ChatIn, string](chatUnit, "prompt", engine.POST("/chat/prompt"), engine.Public(), engine.Durable())
	textFlow   = engine.DefineStream[ChatIn, string, string](chatUnit, "text", engine.POST("/chat/text"), engine.Public())
)

// allTools is every tool flow; agents get these unless a scenario says otherwise.
var allTools = []string{"tools.weather", "tools.transfer", "tools.secret", "tools.guarded", "tools.boom",
	"tools.undeclared", "tools.panics", "tools.declared", "tools.research"}

// providerKinds are the real providers every scenario runs against.
var providerKinds = []string{"openai", "anthropic"}

// usage is what a scripted turn reports. Cost and Reasoning (reasoning tokens) are sent
// by the openai fake only.
type usage struct {
	In, Out   int64
	Cost      *float64
	Reasoning int64
}

// call is a tool call a scripted turn makes.
type call struct{ ID, Name, Args string }

// turn scripts one model response, for either provider.
type turn struct {
	Reasoning string // reasoning_content (openai), a signed thinking block (anthropic)
	Redacted  string // a redacted_thinking block's data (anthropic only)
	Text      string
	Calls     []call
	OmitIDs   bool
	Usage     *usage
	Delay     time.Duration
	Status    int
	ErrMsg    string
}

// fakeModel is what the tests need of either wire fake.
type fakeModel interface {
	RequestCount() int
	Disconnected() <-chan struct{}
	Close()
}

// startModel starts the wire fake of kind playing turns and returns the real provider
// pointed at it.
func startModel(t *testing.T, kind string, turns []turn) (ai.Provider, fakeModel) {
	t.Helper()
	switch kind {
	case "openai":
		var ts []openaitest.Turn
		for _, x := range turns {
			ot := openaitest.Turn{Reasoning: x.Reasoning, Text: x.Text, OmitToolCallIDs: x.OmitIDs, Delay: x.Delay, Status: x.Status, ErrorMessage: x.ErrMsg}
			for _, c := range x.Calls {
				ot.ToolCalls = append(ot.ToolCalls, openaitest.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Args})
			}
			if u := x.Usage; u != nil {
				ot.Usage = &openaitest.Usage{PromptTokens: u.In, CompletionTokens: u.Out, Cost: u.Cost, ReasoningTokens: u.Reasoning}
			}
			ts = append(ts, ot)
		}
		fake := openaitest.NewServer(ts...)
		t.Cleanup(fake.Close)
		p, err := openai.New(openai.Options{BaseURL: fake.URL()})
		if err != nil {
			t.Fatal(err)
		}
		return p, fake
	case "anthropic":
		var ts []anthropictest.Turn
		for _, x := range turns {
			at := anthropictest.Turn{Thinking: x.Reasoning, RedactedThinking: x.Redacted, Text: x.Text, OmitToolCallIDs: x.OmitIDs,
				Delay: x.Delay, Status: x.Status, ErrorMessage: x.ErrMsg}
			for _, c := range x.Calls {
				at.ToolCalls = append(at.ToolCalls, anthropictest.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Args})
			}
			if u := x.Usage; u != nil {
				at.Usage = &anthropictest.Usage{InputTokens: u.In, OutputTokens: u.Out}
			}
			ts = append(ts, at)
		}
		fake := anthropictest.NewServer(ts...)
		t.Cleanup(fake.Close)
		p, err := anthropic.New(anthropic.Options{BaseURL: fake.URL()}) // no key: the documented gateway mode
		if err != nil {
			t.Fatal(err)
		}
		return p, fake
	}
	t.Fatalf("unknown provider kind %q", kind)
	return nil, nil
}

// setup describes one scenario's app.
type setup struct {
	kind      string // "openai" (default) or "anthropic"
	turns     []turn
	subTurns  []turn // the researcher subagent's script
	maxSteps  int
	tools     []string // nil means allTools
	agentOpts []ai.AgentOption
	modelOpts []ai.ModelOption
	maxCost   float64 // MaxCostPerCall of the prompt flow
	install   ai.Options
	noJournal bool        // run the app without a journal: no event log, no durable runs
	provider  ai.Provider // replaces the wire fake for chunk orders no fake sends

	subProvider ai.Provider // replaces the researcher's wire fake
	subTools    []string    // the researcher's tools; nil means tools.weather
}

// world is a running scenario: the app over HTTP, its model fakes and what ran.
type world struct {
	srv     *httptest.Server
	app     *engine.App
	model   fakeModel
	sub     fakeModel
	journal *journal.Journal

	mu      sync.Mutex
	ran     map[string]int
	runErr  error  // the last error ai.Run or ai.Stream returned to a chat handler
	runID   string // the last durable run id seen by the prompt flow
	askErrs []error
}

func (w *world) count(tool string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ran[tool]
}

func (w *world) note(tool string) {
	w.mu.Lock()
	w.ran[tool]++
	w.mu.Unlock()
}

// newWorld builds and starts the scenario's app.
func newWorld(t *testing.T, s setup) *world {
	t.Helper()
	if s.kind == "" {
		s.kind = "openai"
	}
	w := &world{ran: map[string]int{}}
	prov, fake := startModel(t, s.kind, s.turns)
	w.model = fake
	if s.provider != nil {
		prov = s.provider
	}
	modelOpts := s.modelOpts
	if modelOpts == nil {
		modelOpts = []ai.ModelOption{ai.WithPricing(1, 2)}
	}
	model := ai.Model("default", prov, "model-test", modelOpts...)
	subProv, subFake := startModel(t, s.kind, s.subTurns)
	w.sub = subFake
	if s.subProvider != nil {
		subProv = s.subProvider
	}
	subTools := s.subTools
	if subTools == nil {
		subTools = []string{"tools.weather"}
	}
	researcher := ai.Agent("researcher", ai.Model("small", subProv, "model-small"), ai.ToolNames(subTools...), 0)
	tools := s.tools
	if tools == nil {
		tools = allTools
	}
	assistant := ai.Agent("assistant", model, ai.ToolNames(tools...), s.maxSteps, s.agentOpts...)

	j, err := journal.New(memory.New(), journal.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	journalOpt := durable.With(j)
	if s.noJournal {
		journalOpt = engine.Options()
	} else {
		w.journal = j
	}
	chat := func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
		return w.streamAgent(fx, assistant, in, out)
	}
	weather := func(_ *engine.Fx, in WeatherIn) (WeatherOut, error) {
		w.note("weather")
		return WeatherOut{City: in.City, TempC: len(in.City) * 3}, nil
	}
	forbid := func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			return nil, engine.Forbidden("policy", "tools.guarded is off limits")
		}
	}
	w.app, err = engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.WithAuthenticator(anonymous{}), // every caller is anonymous: tools.secret refuses them
		journalOpt,
		ai.Install(s.install),
		engine.Bind(weatherFlow, weather),
		engine.Bind(transferFlow, func(_ *engine.Fx, in TransferIn) (TransferOut, error) {
			w.note("transfer")
			return TransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
		}, ai.Approval(func(in TransferIn) bool { return in.Amount > 100 })),
		engine.Bind(secretFlow, weather),
		engine.Bind(rememberFlow, func(fx *engine.Fx, in RememberIn) (RememberOut, error) {
			w.note("remember")
			before := ai.State(fx)
			if before == nil {
				before = json.RawMessage("null")
			}
			return RememberOut{OK: true, Before: before}, ai.SetState(fx, in.Key, in.Value)
		}),
		engine.Bind(guardedFlow, weather, engine.Use(forbid)),
		engine.Bind(boomFlow, func(*engine.Fx, WeatherIn) (WeatherOut, error) {
			w.note("boom")
			return WeatherOut{}, errors.New("the weather station is on fire")
		}),
		engine.Bind(undeclaredFlow, func(*engine.Fx, WeatherIn) (WeatherOut, error) {
			w.note("undeclared")
			return WeatherOut{}, engine.NewError("Teapot", map[string]any{"why": "not declared"})
		}),
		engine.Bind(panicsFlow, func(*engine.Fx, WeatherIn) (WeatherOut, error) {
			w.note("panics")
			panic("tool panicked")
		}),
		engine.Bind(declaredFlow, func(_ *engine.Fx, in WeatherIn) (WeatherOut, error) {
			w.note("declared")
			return WeatherOut{}, unknownCity.New(in)
		}),
		engine.Bind(researchFlow, func(fx *engine.Fx, in ResearchIn) (string, error) {
			w.note("research")
			run, err := ai.Run(fx, researcher, in.Topic, ai.RunOptions{})
			if err != nil {
				return "", err
			}
			return run.Result().Text, nil
		}),
		engine.BindStream(chatFlow, chat),
		engine.BindStream(chatPlain, chat),
		engine.BindStream(chatAGUI, func(fx *engine.Fx, in ai.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			res, err := ai.Stream(fx, assistant, in, out, ai.RunOptions{})
			w.keepErr(err)
			return res, err
		}),
		engine.BindStream(chatUI, func(fx *engine.Fx, in uimessage.Request, out *engine.Stream[uimessage.Chunk]) (ai.RunResult, error) {
			res, err := ai.StreamUI(fx, assistant, in, out, ai.RunOptions{})
			w.keepErr(err)
			return res, err
		}),
		engine.BindStream(chatOnSignal, func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			msg, err := nudge.Wait(fx, in.ThreadID, time.Time{})
			if err != nil {
				return ai.RunResult{}, err // engine.ErrParked until the signal is set
			}
			return w.streamAgent(fx, assistant, ChatIn{Message: msg, ThreadID: in.ThreadID}, out)
		}),
		engine.Bind(chatSync, func(fx *engine.Fx, in ChatIn) (*ai.AgentRun, error) {
			run, err := ai.Run(fx, assistant, chatInput(in), ai.RunOptions{ThreadID: in.ThreadID})
			w.keepErr(err)
			return run, err
		}),
		engine.Bind(promptFlow, func(fx *engine.Fx, in ChatIn) (string, error) {
			if run := durable.RunOf(fx); run != nil {
				w.mu.Lock()
				w.runID = run.ID
				w.mu.Unlock()
			}
			text, err := ai.Ask(fx, model, in.Message, ai.AskOptions{Name: "summary", MaxCostPerCall: s.maxCost})
			if err != nil {
				w.mu.Lock()
				w.askErrs = append(w.askErrs, err)
				w.mu.Unlock()
				return "", err
			}
			// Wait for a decision, so a test can resume the run and watch the replay.
			if _, err := durable.Park(fx, "continue", time.Time{}, map[string]string{"text": text}); err != nil {
				return "", err // engine.ErrParked until decided
			}
			return text, nil
		}),
		engine.BindStream(textFlow, func(fx *engine.Fx, in ChatIn, out *engine.Stream[string]) (string, error) {
			return ai.StreamText(fx, model, in.Message, out)
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.app.Close(context.Background()) })
	w.srv = httptest.NewServer(w.app.Handler())
	t.Cleanup(w.srv.Close)
	return w
}

// chatInput is the agent input a chat request carries.
func chatInput(in ChatIn) any {
	var input any = ai.Input{Message: in.Message, Messages: in.Messages, ThreadID: in.ThreadID}
	switch {
	case in.Text != "":
		input = in.Text
	case in.Raw != nil:
		input = in.Raw
	}
	return input
}

// streamAgent is the streaming chat flows' handler: it streams assistant's run on the
// input the request carried and keeps ai.Stream's error for the test to inspect.
func (w *world) streamAgent(fx *engine.Fx, assistant *ai.AgentDef, in ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
	res, err := ai.Stream(fx, assistant, chatInput(in), out, ai.RunOptions{ThreadID: in.ThreadID})
	w.keepErr(err)
	return res, err
}

// keepErr keeps the last error a chat handler's run returned.
func (w *world) keepErr(err error) {
	w.mu.Lock()
	w.runErr = err
	w.mu.Unlock()
}

// post sends body to path and returns the status and raw body.
func (w *world) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	res, b := w.request(t, path, body)
	return res.StatusCode, b
}

// request posts body to path as JSON and returns the response (its body read) and the body.
func (w *world) request(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := w.open(t, ctx, path, body)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// open posts body to path as JSON under ctx and returns the response, its body unread:
// the caller reads (and closes) it.
func (w *world) open(t *testing.T, ctx context.Context, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// stream posts body to path and parses the reply as an agent stream.
func (w *world) stream(t *testing.T, path, body string) transcript {
	t.Helper()
	status, raw := w.post(t, path, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", path, status, raw)
	}
	return parse(t, raw)
}

// follow reads the follow route of run until the stream ends (the run is finished).
func (w *world) follow(t *testing.T, runID string, lastEventID string) transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.srv.URL+"/agent/runs/"+runID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("follow %s: %v (a follow that never ends means the stream was never finished)", runID, err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("follow %s: status %d: %s", runID, res.StatusCode, b)
	}
	return parse(t, string(b))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// chatBody encodes a ChatIn.
func chatBody(t *testing.T, in ChatIn) string {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eq compares two comparable values and reports a mismatch with its subject.
func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// joined renders a list of types for messages.
func joined(s []string) string { return strings.Join(s, " ") }

func spend(v float64) *float64 { return &v }

// anonymous authenticates nobody: the harness's callers are all anonymous.
type anonymous struct{}

func (anonymous) Authenticate(*http.Request) (*engine.Principal, error) { return nil, nil }
