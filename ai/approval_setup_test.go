package ai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// The approval tests' own flows: a bank unit whose transfer tool needs approval above
// 100, and a desk unit whose chat flow runs the teller agent (durable) and whose plain
// flow runs it without the journal.
var (
	apBankUnit = engine.NewUnit("bank")
	apDeskUnit = engine.NewUnit("desk")

	apTransfer = engine.Define[ApTransferIn, ApTransferOut](apBankUnit, "transfer", engine.Describe("Move money to someone."))
	apChat     = engine.DefineStream[ApChatIn, agui.Event, ai.RunResult](apDeskUnit, "chat", engine.POST("/desk/chat"), engine.Durable())
	apPlain    = engine.DefineStream[ApChatIn, agui.Event, ai.RunResult](apDeskUnit, "plain", engine.POST("/desk/plain"))
	apDecide   = engine.Define[ApDecideIn, ai.Decided](apDeskUnit, "decide", engine.POST("/desk/decide"))
)

// ApDecideIn is the input of desk.decide, a flow deciding approvals server-side with
// ai.Approve and ai.Deny (the spec's fx.agent.approve and fx.agent.deny).
type ApDecideIn struct {
	ID      string         `json:"id"`
	Approve bool           `json:"approve,omitempty"`
	Args    map[string]any `json:"args,omitempty"`
	Reason  string         `json:"reason,omitempty"`
}

type ApTransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

type ApTransferOut struct {
	OK     bool    `json:"ok"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

type ApChatIn struct {
	Message string `json:"message"`
}

// The principals of the approval tests. Header X-Test-User is "id@tenant"; X-Test-Operator
// makes the principal an operator. apMallory is denied by the transfer tool's gate.
const (
	apUserHeader     = "X-Test-User"
	apOperatorHeader = "X-Test-Operator"
	apAlice          = "alice@acme"
	apMallory        = "mallory@acme"
)

// apHeaderAuth authenticates from the test headers: no header, no principal.
type apHeaderAuth struct{}

func (apHeaderAuth) Authenticate(r *http.Request) (*engine.Principal, error) {
	v := r.Header.Get(apUserHeader)
	if v == "" {
		return nil, nil
	}
	id, tenant, _ := strings.Cut(v, "@")
	return &engine.Principal{ID: id, Tenant: tenant, Operator: r.Header.Get(apOperatorHeader) != ""}, nil
}

// apDenyMallory is the transfer tool's gate: mallory may not move money.
func apDenyMallory(next engine.HandlerFunc) engine.HandlerFunc {
	return func(fx *engine.Fx, in any) (any, error) {
		if p := fx.Principal(); p != nil && p.ID == "mallory" {
			return nil, engine.Forbidden("teller", "mallory may not move money")
		}
		return next(fx, in)
	}
}

// apConfig shapes one approval test app.
type apConfig struct {
	turns  []openaitest.Turn
	driver journal.Driver // nil: a fresh memory driver
	jopts  journal.Options
	aiOpts ai.Options
	model  *openaitest.Server // shared with an earlier app (a simulated restart)
	binds  []engine.Option    // more of the app: another test's flows
}

// apEnv is one running approval test app behind real HTTP.
type apEnv struct {
	srv   *httptest.Server
	model *openaitest.Server
	app   *engine.App
	j     *journal.Journal
	drv   journal.Driver

	mu        sync.Mutex
	transfers []ApTransferIn
}

func newApEnv(t *testing.T, cfg apConfig) *apEnv {
	t.Helper()
	e := &apEnv{model: cfg.model, drv: cfg.driver}
	if e.model == nil {
		e.model = openaitest.NewServer(cfg.turns...)
		t.Cleanup(e.model.Close)
	}
	if e.drv == nil {
		e.drv = memory.New()
	}
	prov, err := openai.New(openai.Options{BaseURL: e.model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	teller := ai.Agent("teller", ai.Model("default", prov, "gpt-test"), ai.Tools(apTransfer), 0)
	jopts := cfg.jopts
	if jopts.PollInterval == 0 {
		jopts.PollInterval = time.Hour // tests drive recovery with RecoverOnce
	}
	if jopts.CleanupInterval == 0 {
		jopts.CleanupInterval = time.Hour
	}
	e.j, err = journal.New(e.drv, jopts)
	if err != nil {
		t.Fatal(err)
	}
	chat := func(fx *engine.Fx, in ApChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
		return ai.Stream(fx, teller, in.Message, out, ai.RunOptions{})
	}
	e.app, err = engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.WithAuthenticator(apHeaderAuth{}),
		durable.With(e.j),
		ai.Install(cfg.aiOpts),
		engine.Options(cfg.binds...),
		engine.Bind(apTransfer, func(_ *engine.Fx, in ApTransferIn) (ApTransferOut, error) {
			e.mu.Lock()
			e.transfers = append(e.transfers, in)
			e.mu.Unlock()
			return ApTransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
		}, engine.Use(apDenyMallory), ai.Approval(func(in ApTransferIn) bool { return in.Amount > 100 })),
		engine.BindStream(apChat, chat),
		engine.BindStream(apPlain, chat),
		engine.Bind(apDecide, func(fx *engine.Fx, in ApDecideIn) (ai.Decided, error) {
			var err error
			if in.Approve {
				var args json.RawMessage
				if in.Args != nil {
					args, _ = json.Marshal(in.Args)
				}
				err = ai.Approve(fx, in.ID, args)
			} else {
				err = ai.Deny(fx, in.ID, in.Reason)
			}
			return ai.Decided{OK: err == nil}, err
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.app.Close(context.Background()) })
	e.srv = httptest.NewServer(e.app.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

// Transfers returns the inputs the transfer tool ran with.
func (e *apEnv) Transfers() []ApTransferIn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ApTransferIn(nil), e.transfers...)
}

// request sends one request as user ("" for anonymous) and returns the reply.
func (e *apEnv) request(t *testing.T, method, path, user string, hdr http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set(apUserHeader, user)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// openChat starts a chat as alice on /desk/chat and returns the response with its
// stream still open, for tests that act while the run goes on; it is closed at the
// end of the test (ctx ends the request earlier).
func (e *apEnv) openChat(t *testing.T, ctx context.Context, message string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": message})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/desk/chat", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(apUserHeader, apAlice)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// chat starts a run on path as user and returns the live stream's events.
func (e *apEnv) chat(t *testing.T, path, user, message string) (raw []byte, events []agui.Event) {
	t.Helper()
	body, _ := json.Marshal(ApChatIn{Message: message})
	res, raw := e.request(t, http.MethodPost, path, user, nil, string(body))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d %s", path, res.StatusCode, raw)
	}
	for f, err := range agent.ReadFrames(bytes.NewReader(raw)) {
		if err != nil {
			t.Fatalf("reading the chat stream: %v\n%s", err, raw)
		}
		events = append(events, f.Event)
	}
	return raw, events
}

// apDecision is one reply of an approval route.
type apDecision struct {
	status int
	header http.Header
	env    struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code string          `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	raw string
}

func (d apDecision) code() string {
	if d.env.Error == nil {
		return ""
	}
	return d.env.Error.Code
}

// decide posts body to the approve or deny route as user.
func (e *apEnv) decide(t *testing.T, op, user, body string) apDecision {
	t.Helper()
	res, raw := e.request(t, http.MethodPost, "/agent/approvals/"+op, user, nil, body)
	d := apDecision{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &d.env); err != nil {
		t.Fatalf("%s reply is not an envelope: %v: %s", op, err, raw)
	}
	return d
}

// apApproveBody and apDenyBody build the routes' request bodies.
func apApproveBody(id string, args string) string {
	if args == "" {
		return `{"id":` + strconv.Quote(id) + `}`
	}
	return `{"id":` + strconv.Quote(id) + `,"args":` + args + `}`
}

func apDenyBody(id, reason string) string {
	b, _ := json.Marshal(ai.DenyIn{ID: id, Reason: reason})
	return string(b)
}

// client returns a clientx client of the app acting as user.
func (e *apEnv) client(t *testing.T, user string) *clientx.Client {
	t.Helper()
	c, err := clientx.New(e.srv.URL, clientx.WithHeaders(http.Header{apUserHeader: {user}}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// follow reads the follow route of stream as user until the server ends it (bounded by
// a generous deadline so a broken follow fails instead of hanging).
func (e *apEnv) follow(t *testing.T, stream, user string, hdr http.Header, query string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, agent.FollowURL(e.srv.URL, stream)+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if user != "" {
		req.Header.Set(apUserHeader, user)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("follow %s: %v (read so far: %s)", stream, err, b)
	}
	return res, b
}

// followFrames follows stream as apAlice from after and decodes the frames.
func (e *apEnv) followFrames(t *testing.T, stream string, after int64) ([]agent.Frame, []byte) {
	t.Helper()
	hdr := http.Header{}
	if after > 0 {
		hdr.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	res, raw := e.follow(t, stream, apAlice, hdr, "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("follow %s after %d: HTTP %d %s", stream, after, res.StatusCode, raw)
	}
	var out []agent.Frame
	for f, err := range agent.ReadFrames(bytes.NewReader(raw)) {
		if err != nil {
			t.Fatalf("follow %s: %v", stream, err)
		}
		out = append(out, f)
	}
	return out, raw
}

// apRunID returns the agent run id of the first RUN_STARTED.
func apRunID(t *testing.T, events []agui.Event) string {
	t.Helper()
	for _, ev := range events {
		if rs, ok := ev.(agui.RunStarted); ok {
			return rs.RunID
		}
	}
	t.Fatalf("no RUN_STARTED in %v", events)
	return ""
}

// apInterrupts returns the interrupts of the stream's RUN_FINISHED events.
func apInterrupts(events []agui.Event) []agui.Interrupt {
	var out []agui.Interrupt
	for _, ev := range events {
		if rf, ok := ev.(agui.RunFinished); ok && rf.Outcome != nil && rf.Outcome.Type == agui.OutcomeInterrupt {
			out = append(out, rf.Outcome.Interrupts...)
		}
	}
	return out
}

// parkedRun starts a run whose model asks for one transfer of amount and returns the
// live events, the agent run id and the single interrupt.
func (e *apEnv) parkedRun(t *testing.T) ([]agui.Event, string, agui.Interrupt) {
	t.Helper()
	_, events := e.chat(t, "/desk/chat", apAlice, "send bob 500")
	in := apInterrupts(events)
	if len(in) != 1 {
		t.Fatalf("want one interrupt, got %d: %v", len(in), events)
	}
	return events, apRunID(t, events), in[0]
}

// apTypes lists the event types of frames, for readable failures.
func apTypes(frames []agent.Frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = string(f.Event.Type())
	}
	return out
}

// apTransferTurns scripts a model that asks for one transfer, then answers.
func apTransferTurns(amount string) []openaitest.Turn {
	return []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{{ID: "call_pay", Name: "bank_transfer", Arguments: `{"to":"bob","amount":` + amount + `}`}}},
		{Text: "Done."},
	}
}

// apToolMessage returns the content of the tool message answering callID in the last
// request the fake model received.
func apToolMessage(t *testing.T, m *openaitest.Server, callID string) string {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model received no request")
	}
	for _, msg := range reqs[len(reqs)-1].Messages {
		if msg.Role == "tool" && msg.ToolCallID == callID {
			return msg.Text()
		}
	}
	t.Fatalf("the model's last request has no tool message for %s: %+v", callID, reqs[len(reqs)-1].Messages)
	return ""
}

var (
	apExpiresRe = regexp.MustCompile(`"expiresAt":"[^"]*"`)
	apRunIDRe   = regexp.MustCompile(`run_[0-9a-f-]{36}`)
)

// apRecord normalises a follow transcript that ended cleanly (agent run ids,
// interrupt ids, expiry times), checks it with AG-UI's verifier when it is installed and
// stores it as testdata/sse/approval-<name>.follow.sse (written when missing or with
// -record-follow) so CI's AG-UI check covers it.
func apRecord(t *testing.T, name string, raw []byte, interrupts ...agui.Interrupt) {
	t.Helper()
	s := string(raw)
	for _, in := range interrupts {
		s = strings.ReplaceAll(s, in.ID, base64.RawURLEncoding.EncodeToString([]byte("flow-run-1."+in.ToolCallID)))
	}
	s = apExpiresRe.ReplaceAllString(s, `"expiresAt":"2026-01-02T03:04:05Z"`)
	n := 0
	seen := map[string]string{}
	s = apRunIDRe.ReplaceAllStringFunc(s, func(id string) string {
		if v, ok := seen[id]; ok {
			return v
		}
		n++
		seen[id] = "run-" + strconv.Itoa(n)
		return seen[id]
	})
	dir := filepath.Join("testdata", "sse")
	path := filepath.Join(dir, "approval-"+name+".follow.sse")
	tmp := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	apVerifyFollow(t, tmp)
	if _, err := os.Stat(path); *update || os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}

// apVerifyFollow runs AG-UI's verifier (tools/agui-verify, --no-done for follow streams)
// on path when node and the verifier are installed, and says so when they are not.
func apVerifyFollow(t *testing.T, path string) {
	t.Helper()
	script := os.Getenv("AGUI_VERIFY")
	if script == "" {
		script = "/tmp/agui-verify/verify.mjs"
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node is not installed; the AG-UI verifier did not check " + path)
		return
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@ag-ui", "core")); err != nil {
		t.Logf("agui-verify is not installed next to %s; the AG-UI verifier did not check %s", script, path)
		return
	}
	out, err := exec.Command(node, script, "--no-done", path).CombinedOutput()
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("agui-verify rejects the follow transcript: %v\n%s\n%s", err, out, b)
	}
}

// apHeaders are the request headers that authenticate as user.
func apHeaders(user string) http.Header { return http.Header{apUserHeader: {user}} }

// apCheckSeqs fails unless frames carry the seqs from, from+1, ... with no gap and no
// duplicate.
func apCheckSeqs(t *testing.T, frames []agent.Frame, from int64) {
	t.Helper()
	for i, f := range frames {
		if f.Seq != from+int64(i) {
			t.Fatalf("frame %d has seq %d, want %d (gap or duplicate); seqs %v", i, f.Seq, from+int64(i), apSeqs(frames))
		}
	}
}

func apSeqs(frames []agent.Frame) []int64 {
	out := make([]int64, len(frames))
	for i, f := range frames {
		out[i] = f.Seq
	}
	return out
}
