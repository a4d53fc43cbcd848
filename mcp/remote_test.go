package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/mcp"
	"github.com/bbc28f59/engine/mcp/internal/bank"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An agent's tools from another MCP server: the bank of mcp/internal/bank, in process
// over HTTP and as a command over stdio.

var (
	deskUnit = engine.NewUnit("desk")
	deskChat = engine.DefineStream[ChatIn, agui.Event, ai.RunResult](deskUnit, "chat", engine.POST("/desk/chat"),
		engine.Public(), engine.Durable())
)

// ChatIn is the desk's chat input.
type ChatIn struct {
	Message string `json:"message"`
}

// effects counts the bank's calls by tool and idempotency key.
type effects interface {
	counts() map[string]int // "tool key" → calls
}

// bankTransport is one way to reach the bank.
type bankTransport struct {
	name  string
	start func(t *testing.T) (mcp.Transport, effects)
}

var bankTransports = []bankTransport{{"http", httpBank}, {"stdio", stdioBank}}

// memEffects counts an in-process bank's calls.
type memEffects struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *memEffects) add(tool, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n[tool+" "+key]++
}

func (m *memEffects) counts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, v := range m.n {
		out[k] = v
	}
	return out
}

// httpBank serves the bank in process over the streamable HTTP transport; its crash tool
// cuts the connections of the call, as a server that dies would.
func httpBank(t *testing.T) (mcp.Transport, effects) {
	eff := &memEffects{n: map[string]int{}}
	var srv *httptest.Server
	s := bank.NewServer(eff.add, func() { srv.CloseClientConnections() })
	srv = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return mcp.HTTP(srv.URL, nil), eff
}

// fileEffects counts a bank process's calls from the lines it appended.
type fileEffects struct {
	t    *testing.T
	path string
}

func (f fileEffects) counts() map[string]int {
	b, err := os.ReadFile(f.path)
	if err != nil && !os.IsNotExist(err) {
		f.t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line != "" {
			out[line]++
		}
	}
	return out
}

var (
	bankBinOnce sync.Once
	bankBin     string
)

// stdioBank runs the bank as a command built for the test, over stdio.
func stdioBank(t *testing.T) (mcp.Transport, effects) {
	bankBinOnce.Do(func() { bankBin = testenv.Build(t, "./testdata/bankserver") })
	if _, err := os.Stat(bankBin); err != nil {
		// Built in a test that has finished: its temporary directory is gone.
		bankBin = testenv.Build(t, "./testdata/bankserver")
	}
	path := filepath.Join(t.TempDir(), "effects")
	t.Setenv("BANK_EFFECTS", path)
	return mcp.Command(bankBin), fileEffects{t: t, path: path}
}

// desk is one instance: an app whose teller agent has the bank's tools.
type desk struct {
	srv *httptest.Server
	j   *journal.Journal
}

// newDesk starts an instance on drv (shared between instances) talking to model and to
// the bank through remote.
func newDesk(t *testing.T, owner string, drv journal.Driver, model *openaitest.Server, remote *mcp.Remote) *desk {
	t.Helper()
	prov, err := openai.New(openai.Options{BaseURL: model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	agent := ai.Agent("teller", ai.Model("default", prov, "gpt-test"), ai.ToolNames().With(remote.Tools()), 0)
	j, err := journal.New(drv, journal.Options{Owner: owner, PollInterval: time.Hour, CleanupInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var opts []mcp.ToolOption
	if remote.Flow("transfer") != nil {
		opts = append(opts, mcp.ForTool("transfer", ai.Approval(func(in map[string]any) bool {
			amount, _ := in["amount"].(float64)
			return amount > 100
		})))
	}
	app, err := engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.WithAuthenticator(teller{}),
		durable.With(j),
		ai.Install(ai.Options{}),
		remote.Bind(opts...),
		engine.BindStream(deskChat, func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, agent, in.Message, out, ai.RunOptions{})
		}),
		ai.Register(agent),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := &desk{srv: httptest.NewServer(app), j: j}
	t.Cleanup(func() {
		d.srv.Close()
		_ = app.Close(context.Background())
	})
	return d
}

// teller authenticates every request as the same signed-in teller: the remote tools are
// gated flows, as every flow not declared public is.
type teller struct{}

func (teller) Authenticate(*http.Request) (*engine.Principal, error) {
	return &engine.Principal{ID: "teller", Tenant: "t1"}, nil
}

// post sends body to path and returns the reply.
func (d *desk) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	res, err := http.Post(d.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

// chat runs the teller and returns the stream's events.
func (d *desk) chat(t *testing.T, message string) []agui.Event {
	t.Helper()
	status, raw := d.post(t, "/desk/chat", `{"message":"`+message+`"}`)
	if status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, raw)
	}
	var evs []agui.Event
	r := httpx.NewSSEReader(bytes.NewReader(raw))
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(f.Data) == "[DONE]" {
			continue
		}
		ev, err := agui.Decode([]byte(f.Data))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestRemoteToolsInADurableRun has the teller check the balance (a remote tool that runs
// at once) and then transfer 500 (a remote tool that needs approval) over each transport:
// the run parks on instance a, is approved and resumed on instance b (one journal), and
// each tool's effect happens once, under the key of its step, with the arguments the
// model gave. The model saw the bank's own descriptions and schemas.
func TestRemoteToolsInADurableRun(t *testing.T) {
	for _, bt := range bankTransports {
		t.Run(bt.name, func(t *testing.T) {
			transport, eff := bt.start(t)
			model := openaitest.NewServer(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_balance", Arguments: `{}`}}},
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_2", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}},
				openaitest.Turn{Text: "Sent 500 to bob."},
			)
			t.Cleanup(model.Close)
			remote := mcp.NewRemote(engine.NewUnit("bank"), transport, "balance", "transfer")
			t.Cleanup(func() { _ = remote.Close() })
			shared := memory.New()
			a := newDesk(t, "a", shared, model, remote)
			b := newDesk(t, "b", shared, model, remote)

			evs := a.chat(t, "send bob 500")
			fin, ok := evs[len(evs)-1].(agui.RunFinished)
			if !ok || fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 {
				t.Fatalf("the run did not park for the transfer's approval: %#v", evs[len(evs)-1])
			}
			if n := len(eff.counts()); n != 1 {
				t.Fatalf("effects before the approval %v, want the balance only", eff.counts())
			}
			status, raw := b.post(t, "/agent/approvals/approve", `{"id":"`+fin.Outcome.Interrupts[0].ID+`"}`)
			if status != http.StatusOK {
				t.Fatalf("approve on b: %d %s", status, raw)
			}
			var got map[string]int
			deadline := time.Now().Add(20 * time.Second)
			for {
				got = eff.counts()
				if len(got) == 2 || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			waitDone(t, model, 3)
			time.Sleep(100 * time.Millisecond) // a second call, if one came, would have arrived
			got = eff.counts()
			if len(got) != 2 {
				t.Fatalf("effects %v, want one balance and one transfer", got)
			}
			for k, n := range got {
				tool, key, _ := strings.Cut(k, " ")
				if n != 1 || key == "" {
					t.Errorf("%s ran %d times under key %q, want once under a key", tool, n, key)
				}
			}
			reqs := model.Requests()
			var offered []string
			for _, tool := range reqs[0].Tools {
				offered = append(offered, tool.Function.Name+": "+tool.Function.Description)
				if tool.Function.Name == "bank_transfer" && !strings.Contains(string(tool.Function.Parameters), `"amount"`) {
					t.Errorf("bank_transfer offered with parameters %s, want the bank's schema", tool.Function.Parameters)
				}
			}
			if strings.Join(offered, "; ") != "bank_balance: The account's balance.; bank_transfer: Transfer an amount to someone." {
				t.Errorf("tools offered: %v", offered)
			}
			if last := reqs[len(reqs)-1].Messages; !strings.Contains(last[len(last)-1].Text(), `"ok":true`) {
				t.Errorf("the model was not given the transfer's result: %q", last[len(last)-1].Text())
			}
		})
	}
}

// waitDone waits until the model has answered n requests.
func waitDone(t *testing.T, model *openaitest.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for model.RequestCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d requests, want %d", model.RequestCount(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRemoteToolFailuresReachTheModel checks that a server that dies mid-call, bad
// arguments and an unknown tool are tool results the model sees (the run completes),
// and that the next call connects again.
func TestRemoteToolFailuresReachTheModel(t *testing.T) {
	for _, bt := range bankTransports {
		t.Run(bt.name, func(t *testing.T) {
			transport, eff := bt.start(t)
			model := openaitest.NewServer(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_crash", Arguments: `{}`}}},
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_2", Name: "bank_transfer", Arguments: `{"to":"bob","amount":"lots"}`}}},
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_3", Name: "bank_balance", Arguments: `{}`}}},
				openaitest.Turn{Text: "The bank had trouble."},
			)
			t.Cleanup(model.Close)
			remote := mcp.NewRemote(engine.NewUnit("bank"), transport, "balance", "transfer", "crash")
			t.Cleanup(func() { _ = remote.Close() })
			d := newDesk(t, "a", memory.New(), model, remote)
			evs := d.chat(t, "check")
			fin, ok := evs[len(evs)-1].(agui.RunFinished)
			if !ok || fin.Result == nil || fin.Result.StopReason != agui.StopCompleted {
				t.Fatalf("the run did not complete: %#v", evs[len(evs)-1])
			}
			var results []string
			for _, ev := range evs {
				if r, ok := ev.(agui.ToolCallResult); ok {
					results = append(results, r.Content)
				}
			}
			if len(results) != 3 || !strings.Contains(results[0], `"code":"MCPUnavailable"`) ||
				!strings.Contains(results[1], `"code":"ValidationError"`) || !strings.Contains(results[2], `"balance":1000`) {
				t.Errorf("tool results %q, want the crash unavailable, the bad amount invalid, then the balance", results)
			}
			if got := eff.counts(); len(got) != 1 {
				t.Errorf("effects %v, want the balance only (the bad transfer never reached the bank)", got)
			}
		})
	}
}

// TestRemoteUnreachable checks that a server that cannot be reached at all still lets
// the run go on: the tool is offered with its flow's own schema and its call is
// MCPUnavailable.
func TestRemoteUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	model := openaitest.NewServer(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_balance", Arguments: `{}`}}},
		openaitest.Turn{Text: "The bank is away."},
	)
	t.Cleanup(model.Close)
	remote := mcp.NewRemote(engine.NewUnit("bank"), mcp.HTTP(srv.URL, nil), "balance")
	d := newDesk(t, "a", memory.New(), model, remote)
	evs := d.chat(t, "balance?")
	var content string
	for _, ev := range evs {
		if r, ok := ev.(agui.ToolCallResult); ok {
			content = r.Content
		}
	}
	var res struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(content), &res); err != nil || res.Error.Code != "MCPUnavailable" {
		t.Errorf("tool result %q, want MCPUnavailable", content)
	}
	if fin, ok := evs[len(evs)-1].(agui.RunFinished); !ok || fin.Result.StopReason != agui.StopCompleted {
		t.Errorf("the run did not complete: %#v", evs[len(evs)-1])
	}
}
