package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/journal"
)

// The resume tests' own flows: a vault unit whose pay tool needs approval above 100
// (mallory may not pay) and whose wipe tool always does (only operators may wipe), and a
// counter unit whose streaming flows take AG-UI's RunAgentInput and run the cashier
// agent: chat (whose result a caller may ask for alone, as JSON), and other, a second
// flow of the same agent. The counter flows let red threads (threadId "red-…") through for the red team
// only.
var (
	rsVaultUnit   = engine.NewUnit("vault")
	rsCounterUnit = engine.NewUnit("counter")

	rsPay   = engine.Define[ApTransferIn, ApTransferOut](rsVaultUnit, "pay")
	rsWipe  = engine.Define[ApTransferIn, ApTransferOut](rsVaultUnit, "wipe")
	rsChat  = engine.DefineStream[ai.Input, agui.Event, ai.RunResult](rsCounterUnit, "chat", engine.POST("/counter/chat"), engine.Durable())
	rsOther = engine.DefineStream[ai.Input, agui.Event, ai.RunResult](rsCounterUnit, "other", engine.POST("/counter/other"), engine.Durable())
)

// rsRedTeam are the principals a red thread lets through.
var rsRedTeam = map[string]bool{"alice": true, "rita": true}

// rsRedOnly is the counter flows' gate: a red thread is the red team's.
func rsRedOnly(next engine.HandlerFunc) engine.HandlerFunc {
	return func(fx *engine.Fx, in any) (any, error) {
		var thread string
		switch v := in.(type) {
		case ai.Input:
			thread = v.ThreadID
		case *ai.Input:
			thread = v.ThreadID
		}
		if p := fx.Principal(); strings.HasPrefix(thread, "red-") && (p == nil || !rsRedTeam[p.ID]) {
			return nil, engine.Forbidden("team", "red threads are the red team's")
		}
		return next(fx, in)
	}
}

// rsOperatorsOnly is the wipe tool's gate.
func rsOperatorsOnly(next engine.HandlerFunc) engine.HandlerFunc {
	return func(fx *engine.Fx, in any) (any, error) {
		if p := fx.Principal(); p == nil || !p.Operator {
			return nil, engine.Forbidden("vault", "only operators may wipe")
		}
		return next(fx, in)
	}
}

type rsConfig struct {
	turns []openaitest.Turn
	clock *apClock // nil: the wall clock; the pay tool's approval moves it 1h on seeing eve
	wait  time.Duration
}

// rsEnv is one running resume test app behind real HTTP: an apEnv (header
// authentication) with the vault and counter flows.
type rsEnv struct {
	*apEnv
	mu       sync.Mutex
	paid     []ApTransferIn
	reparked []string // the runs ai.Stream said parked again (AcceptedError) in the chat flow
}

func newRsEnv(t *testing.T, cfg rsConfig) *rsEnv {
	t.Helper()
	model := openaitest.NewServer(cfg.turns...)
	t.Cleanup(model.Close)
	prov, err := openai.New(openai.Options{BaseURL: model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	cashier := ai.Agent("cashier", ai.Model("default", prov, "gpt-test", ai.WithPricing(1, 2)), ai.Tools(rsPay, rsWipe), 0)
	var jopts journal.Options
	if cfg.clock != nil {
		jopts.Now = cfg.clock.Now
		jopts.LeaseTTL = 24 * time.Hour // the test moves the clock by hours; no lease lapses
	}
	e := &rsEnv{}
	stream := func(fx *engine.Fx, in ai.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
		return ai.Stream(fx, cashier, in, out, ai.RunOptions{})
	}
	pay := func(_ *engine.Fx, in ApTransferIn) (ApTransferOut, error) {
		e.mu.Lock()
		e.paid = append(e.paid, in)
		e.mu.Unlock()
		return ApTransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
	}
	var sawEve sync.Once
	e.apEnv = newApEnv(t, apConfig{model: model, jopts: jopts, aiOpts: ai.Options{ApprovalWait: cfg.wait}, binds: []engine.Option{
		engine.Bind(rsPay, pay, engine.Use(apDenyMallory), ai.Approval(func(in ApTransferIn) bool {
			if in.To == "eve" && cfg.clock != nil {
				sawEve.Do(func() { cfg.clock.Advance(time.Hour) })
			}
			return in.Amount > 100
		})),
		engine.Bind(rsWipe, pay, engine.Use(rsOperatorsOnly), ai.Approval(func(ApTransferIn) bool { return true })),
		engine.BindStream(rsChat, func(fx *engine.Fx, in ai.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			res, err := ai.Stream(fx, cashier, in, out, ai.RunOptions{})
			var again *engine.AcceptedError
			if errors.As(err, &again) {
				e.mu.Lock()
				e.reparked = append(e.reparked, again.RunID)
				e.mu.Unlock()
			}
			return res, err
		}, engine.Use(rsRedOnly)),
		engine.BindStream(rsOther, stream, engine.Use(rsRedOnly)),
	}})
	return e
}

func (e *rsEnv) payments() []ApTransferIn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ApTransferIn(nil), e.paid...)
}

// post sends body to path as user (X-Test-Operator set when operator).
func (e *rsEnv) post(t *testing.T, path, user string, operator bool, body string) (int, string) {
	t.Helper()
	hdr := http.Header{}
	if operator {
		hdr.Set(apOperatorHeader, "1")
	}
	if strings.Contains(body, `"forwardedProps":{"sync":true}`) {
		hdr.Set("Accept", "application/json") // the result alone, not the events
	}
	res, raw := e.request(t, http.MethodPost, path, user, hdr, body)
	return res.StatusCode, string(raw)
}

// start posts a first turn on thread to /counter/chat as alice and returns the stream,
// which must end parked.
func (e *rsEnv) start(t *testing.T, thread string) transcript {
	t.Helper()
	status, raw := e.post(t, "/counter/chat", apAlice, false,
		`{"threadId":"`+thread+`","runId":"r1","messages":[{"id":"u","role":"user","content":"pay"}]}`)
	if status != http.StatusOK {
		t.Fatalf("start: HTTP %d %s", status, raw)
	}
	tr := parse(t, raw)
	if fin := tr.finished(t); fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeInterrupt {
		t.Fatalf("the run did not park: %s", raw)
	}
	return tr
}

func rsResume(thread string, entries ...string) string {
	return `{"threadId":"` + thread + `","runId":"r2","messages":[],"resume":[` + strings.Join(entries, ",") + `]}`
}

// rsResumeSync is rsResume asking for a reply without streaming (post sends it with
// Accept: application/json).
func rsResumeSync(thread string, entries ...string) string {
	return `{"threadId":"` + thread + `","runId":"r2","messages":[],"forwardedProps":{"sync":true},"resume":[` + strings.Join(entries, ",") + `]}`
}

func rsEntry(id, status string) string {
	return fmt.Sprintf(`{"interruptId":%q,"status":%q}`, id, status)
}

// A resume streams the parked run's events, so it needs the follow route's access on top
// of the decision's: the interrupt must be of a run of the flow called, and the caller in
// its tenant, its starter or an operator, and let through by the flow's gates with the
// run's input. Every other caller gets exactly the 404 of an unknown interrupt, sees none
// of the run, and decides nothing. A tenant member who may approve but not read uses the
// approval route; an operator on the red team may resume.
func TestResumeNeedsFollowAccess(t *testing.T) {
	t.Parallel()
	e := newRsEnv(t, rsConfig{turns: []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "vault_pay", Arguments: `{"to":"bob","amount":500}`}}},
		{Text: "ALICE-PRIVATE-ANSWER"},
	}})
	first := e.start(t, "red-1")
	in := first.finished(t).Outcome.Interrupts[0]
	stream := first.started(t).RunID

	unknownID, err := agui.NewInterruptID("00000000-0000-0000-0000-000000000000", "call_1")
	if err != nil {
		t.Fatal(err)
	}
	_, unknown := e.post(t, "/counter/chat", "bob@acme", false, rsResume("t", rsEntry(unknownID, "resolved")))
	cases := []struct {
		name, path, user string
		operator         bool
	}{
		{"other user of the tenant", "/counter/chat", "bob@acme", false},
		{"operator the flow's gate refuses the run", "/counter/chat", "olga@acme", true},
		{"the starter, through another flow", "/counter/other", apAlice, false},
		{"same user id, other tenant", "/counter/chat", "alice@globex", false},
	}
	for _, c := range cases {
		status, body := e.post(t, c.path, c.user, c.operator, rsResume("t", rsEntry(in.ID, "resolved")))
		if status != http.StatusNotFound || !strings.Contains(body, `"code":"NotFound"`) {
			t.Errorf("%s: HTTP %d %s, want 404 NotFound", c.name, status, body)
		}
		if strings.Contains(body, "ALICE-PRIVATE-ANSWER") || strings.Contains(body, stream) {
			t.Errorf("%s: the reply shows the run: %s", c.name, body)
		}
		if body != unknown {
			t.Errorf("%s: reply %s, want exactly the unknown interrupt's %s", c.name, body, unknown)
		}
	}
	// The follow route agrees with every refusal above that it can express.
	for _, who := range []struct {
		user     string
		operator bool
	}{{"bob@acme", false}, {"olga@acme", true}} {
		hdr := http.Header{}
		if who.operator {
			hdr.Set(apOperatorHeader, "1")
		}
		if res, raw := e.follow(t, stream, who.user, hdr, ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("follow as %s: HTTP %d %s, want 404", who.user, res.StatusCode, raw)
		}
	}
	if n := e.model.RequestCount(); n != 1 {
		t.Fatalf("the model was called %d times, want 1: a refused resume decided something", n)
	}

	// Bob may approve (the tool's gate lets him) but not read: the approval route.
	if d := e.decide(t, "approve", "bob@acme", apApproveBody(in.ID, "")); d.status != http.StatusOK {
		t.Fatalf("approve as bob: HTTP %d %s", d.status, d.raw)
	}
	frames, raw := e.followFrames(t, stream, 0)
	if last := frames[len(frames)-1].Event; last.Type() != agui.TypeRunFinished || !strings.Contains(string(raw), "ALICE-PRIVATE-ANSWER") {
		t.Fatalf("the approved run did not finish: %s", raw)
	}

	// Rita, an operator on the red team, may resume alice's next run.
	second := e.start(t, "red-2")
	status, body := e.post(t, "/counter/chat", "rita@acme", true, rsResume("red-2", rsEntry(second.finished(t).Outcome.Interrupts[0].ID, "resolved")))
	if status != http.StatusOK {
		t.Fatalf("resume as rita: HTTP %d %s", status, body)
	}
	tr := parse(t, body)
	eq(t, "resumed run", tr.started(t).RunID, second.started(t).RunID)
	eq(t, "stop reason", tr.result(t).StopReason, agui.StopCompleted)
	if got := e.payments(); len(got) != 2 {
		t.Errorf("payments %+v, want one for each run", got)
	}
}

// Every entry's tool gates run before any decision is stored: a resume that one tool's
// gate refuses leaves every interrupt of the set undecided.
func TestResumeChecksEveryGateFirst(t *testing.T) {
	t.Parallel()
	e := newRsEnv(t, rsConfig{turns: []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{
			{ID: "call_pay", Name: "vault_pay", Arguments: `{"to":"bob","amount":500}`},
			{ID: "call_wipe", Name: "vault_wipe", Arguments: `{"to":"all","amount":0}`},
		}},
		{Text: "Done."},
	}})
	ins := e.start(t, "t").finished(t).Outcome.Interrupts
	if len(ins) != 2 || ins[0].ToolCallID != "call_pay" || ins[1].ToolCallID != "call_wipe" {
		t.Fatalf("interrupts %+v, want call_pay then call_wipe", ins)
	}
	status, body := e.post(t, "/counter/chat", apAlice, false, rsResume("t", rsEntry(ins[0].ID, "resolved"), rsEntry(ins[1].ID, "resolved")))
	if status != http.StatusForbidden || !strings.Contains(body, "only operators may wipe") {
		t.Fatalf("resume: HTTP %d %s, want 403 from the wipe tool's gate", status, body)
	}
	// Nothing was stored: both interrupts still take a decision.
	if d := e.decide(t, "approve", apAlice, apApproveBody(ins[0].ID, "")); d.status != http.StatusOK {
		t.Errorf("approve call_pay after the refused resume: HTTP %d %s, want 200 (it was decided by the refused resume)", d.status, d.raw)
	}
	hdr := http.Header{apOperatorHeader: {"1"}}
	res, raw := e.request(t, http.MethodPost, "/agent/approvals/deny", "olga@acme", hdr, apDenyBody(ins[1].ID, "no"))
	if res.StatusCode != http.StatusOK {
		t.Errorf("deny call_wipe as an operator: HTTP %d %s, want 200", res.StatusCode, raw)
	}
}

// A resume without streaming answers as a direct call without streaming does: when the
// resumed run parks again, the parked reply (202, no data, meta parked and the parked
// run's id) with the new interrupts in ai.Run's result; when it finishes, the run's
// result, text and usage included, exactly as the run stored it.
func TestResumeWithoutStreaming(t *testing.T) {
	t.Parallel()
	e := newRsEnv(t, rsConfig{turns: []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "vault_pay", Arguments: `{"to":"bob","amount":500}`}},
			Usage: &openaitest.Usage{PromptTokens: 10, CompletionTokens: 3}},
		{Text: "Paying eve next.", ToolCalls: []openaitest.ToolCall{{ID: "call_2", Name: "vault_pay", Arguments: `{"to":"eve","amount":700}`}},
			Usage: &openaitest.Usage{PromptTokens: 20, CompletionTokens: 5}},
		{Text: "Both paid.", Usage: &openaitest.Usage{PromptTokens: 30, CompletionTokens: 7}},
	}})
	first := e.start(t, "t")
	in := first.finished(t).Outcome.Interrupts[0]
	flowRun, _, err := agui.ParseInterruptID(in.ID)
	if err != nil {
		t.Fatal(err)
	}

	status, body := e.post(t, "/counter/chat", apAlice, false, rsResumeSync("t", rsEntry(in.ID, "resolved")))
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error json.RawMessage `json:"error"`
		Meta  struct {
			Parked bool   `json:"parked"`
			RunID  string `json:"runId"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("reply %s: %v", body, err)
	}
	if status != http.StatusAccepted || string(env.Data) != "null" || string(env.Error) != "null" || !env.Meta.Parked || env.Meta.RunID != flowRun {
		t.Fatalf("parked again: HTTP %d %s, want 202 with data null, meta parked and runId %s", status, body, flowRun)
	}
	e.mu.Lock()
	reparked := e.reparked
	e.mu.Unlock()
	if len(reparked) != 1 || reparked[0] != flowRun {
		t.Fatalf("ai.Stream said %v parked again, want %s", reparked, flowRun)
	}
	second, err := agui.NewInterruptID(flowRun, "call_2")
	if err != nil {
		t.Fatal(err)
	}
	status, body = e.post(t, "/counter/chat", apAlice, false, rsResumeSync("t", rsEntry(second, "resolved")))
	if status != http.StatusOK {
		t.Fatalf("finished: HTTP %d %s", status, body)
	}
	var got struct {
		Data ai.RunResult `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	res := got.Data
	if res.Text != "Both paid." || string(res.Output) != `{"ok":true,"to":"eve","amount":700}` || res.StopReason != "completed" {
		t.Errorf("result %+v (output %s), want text \"Both paid.\", the last tool's output, completed", res, res.Output)
	}
	if res.Usage == nil || res.Usage.InputTokens == nil || *res.Usage.InputTokens != 60 || res.Usage.OutputTokens == nil || *res.Usage.OutputTokens != 15 {
		t.Errorf("usage %+v, want 60 in and 15 out: every turn of the run", res.Usage)
	}
	// What the parked run itself stored as its result: what a direct call returns.
	var stored journal.RunRecord
	waitFor(t, "the resumed run to complete", func() bool {
		stored, err = e.j.GetRun(context.Background(), flowRun)
		return err == nil && stored.Status == journal.StatusCompleted
	})
	want, _ := json.Marshal(res)
	var direct ai.RunResult
	if err := json.Unmarshal(stored.Output, &direct); err != nil {
		t.Fatal(err)
	}
	if have, _ := json.Marshal(direct); string(have) != string(want) {
		t.Errorf("the resume answered %s, the run stored %s", want, have)
	}
}

// A resume takes the text of its result from the run's last turn that had text, even
// when that turn came before the park.
func TestResumeWithoutStreamingTextBeforePark(t *testing.T) {
	t.Parallel()
	e := newRsEnv(t, rsConfig{turns: []openaitest.Turn{
		{Text: "Paying bob.", ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "vault_pay", Arguments: `{"to":"bob","amount":500}`}}},
		{Text: ""},
	}})
	in := e.start(t, "t").finished(t).Outcome.Interrupts[0]
	status, body := e.post(t, "/counter/chat", apAlice, false, rsResumeSync("t", rsEntry(in.ID, "resolved")))
	var got struct {
		Data ai.RunResult `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil {
		t.Fatalf("HTTP %d %s", status, body)
	}
	eq(t, "text", got.Data.Text, "Paying bob.")
	eq(t, "stop reason", got.Data.StopReason, "completed")
}

// An interrupt past its deadline that the recovery loop has not swept yet is decided: it
// timed out. A resume answering the others is not refused for leaving it out, and the
// run resumes with that call denied for timeout.
func TestResumeCountsLapsedInterruptAsAnswered(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &apClock{t: t0}
	e := newRsEnv(t, rsConfig{clock: clock, wait: time.Hour, turns: []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{
			{ID: "call_bob", Name: "vault_pay", Arguments: `{"to":"bob","amount":500}`},
			{ID: "call_eve", Name: "vault_pay", Arguments: `{"to":"eve","amount":700}`},
		}},
		{Text: "Done."},
	}})
	ins := e.start(t, "t").finished(t).Outcome.Interrupts
	if len(ins) != 2 || !ins[0].ExpiresAt.Equal(t0.Add(time.Hour)) || !ins[1].ExpiresAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("interrupts %+v, want bob's expiring at t0+1h and eve's at t0+2h", ins)
	}
	clock.Advance(30 * time.Minute) // t0+90m: bob's wait is over, eve's is not; nothing swept
	status, body := e.post(t, "/counter/chat", apAlice, false, rsResume("t", rsEntry(ins[1].ID, "resolved")))
	if status != http.StatusOK {
		t.Fatalf("resume answering eve's only: HTTP %d %s, want 200", status, body)
	}
	tr := parse(t, body)
	eq(t, "stop reason", tr.result(t).StopReason, agui.StopCompleted)
	results := map[string]string{}
	for _, r := range of[agui.ToolCallResult](tr) {
		results[r.ToolCallID] = r.Content
	}
	if !strings.Contains(results["call_bob"], "timeout") {
		t.Errorf("bob's call: %q, want it denied for timeout", results["call_bob"])
	}
	if got := e.payments(); len(got) != 1 || got[0].To != "eve" {
		t.Errorf("payments %+v, want eve's only", got)
	}
	// Bob's interrupt is decided: answering it now is the 409 of an expired one.
	if d := e.decide(t, "approve", apAlice, apApproveBody(ins[0].ID, "")); d.status != http.StatusConflict {
		t.Errorf("approve bob's after: HTTP %d %s, want 409", d.status, d.raw)
	}
}
