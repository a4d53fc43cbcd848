package ai_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/journal"
)

func TestApprovalApproveResumesOnOriginalToolCall(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	live, stream, in := e.parkedRun(t)
	if in.Reason != agui.ReasonApproval || in.Payload.Tool != "bank.transfer" || in.ToolCallID != "call_pay" {
		t.Fatalf("interrupt = %+v", in)
	}
	if got := string(in.Payload.Args); got != `{"to":"bob","amount":500}` {
		t.Fatalf("interrupt args = %s", got)
	}
	if n := len(e.Transfers()); n != 0 {
		t.Fatalf("the tool ran %d times before approval", n)
	}
	d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, ""))
	if d.status != 200 || d.raw != `{"data":{"ok":true},"error":null}`+"\n" {
		t.Fatalf("approve: HTTP %d %q", d.status, d.raw)
	}
	frames, raw := e.followFrames(t, stream, 0)
	var result *agui.ToolCallResult
	runs := 0
	for _, f := range frames {
		switch ev := f.Event.(type) {
		case agui.ToolCallResult:
			result = &ev
		case agui.RunStarted:
			runs++
			if ev.RunID != stream {
				t.Fatalf("resumed run id %s, want %s", ev.RunID, stream)
			}
		}
	}
	if result == nil || result.ToolCallID != "call_pay" || !strings.Contains(result.Content, `"ok":true`) {
		t.Fatalf("want TOOL_CALL_RESULT on call_pay, got %+v in %v", result, apTypes(frames))
	}
	if runs != 2 {
		t.Fatalf("want the parked run and the resumed run, got %d RUN_STARTED: %v", runs, apTypes(frames))
	}
	last, ok := frames[len(frames)-1].Event.(agui.RunFinished)
	if !ok || last.Outcome != nil || last.Result == nil || last.Result.StopReason != agui.StopCompleted {
		t.Fatalf("the follow stream does not end with a completed RUN_FINISHED: %v", apTypes(frames))
	}
	if got := e.Transfers(); len(got) != 1 || got[0].Amount != 500 {
		t.Fatalf("transfers = %+v", got)
	}
	_ = live
	apRecord(t, "approve", raw, in)
}

func TestApprovalDenyReasonReachesModel(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	d := e.decide(t, "deny", apAlice, apDenyBody(in.ID, "bob is not a known payee"))
	if d.status != 200 || d.code() != "" || string(d.env.Data) != `{"ok":true}` {
		t.Fatalf("deny: HTTP %d %s", d.status, d.raw)
	}
	frames, raw := e.followFrames(t, stream, 0)
	if got := apToolMessage(t, e.model, "call_pay"); !strings.Contains(got, "bob is not a known payee") || !strings.Contains(got, "Denied") {
		t.Fatalf("the model saw %q as the tool result, want the denial reason", got)
	}
	if n := len(e.Transfers()); n != 0 {
		t.Fatalf("a denied transfer ran %d times", n)
	}
	var result agui.ToolCallResult
	for _, f := range frames {
		if r, ok := f.Event.(agui.ToolCallResult); ok {
			result = r
		}
	}
	if result.ToolCallID != "call_pay" || !strings.Contains(result.Content, "bob is not a known payee") {
		t.Fatalf("TOOL_CALL_RESULT = %+v", result)
	}
	apRecord(t, "deny", raw, in)
}

func TestApprovalDenyWithoutReason(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	if d := e.decide(t, "deny", apAlice, `{"id":"`+in.ID+`"}`); d.status != 200 {
		t.Fatalf("deny: HTTP %d %s", d.status, d.raw)
	}
	e.followFrames(t, stream, 0)
	if got := apToolMessage(t, e.model, "call_pay"); !strings.Contains(got, `"Denied"`) {
		t.Fatalf("the model saw %q, want a denial", got)
	}
}

// Once a apDecision is stored every later one, of either kind, is 409 Conflict without
// Retry-After, and the stored one stands.
func TestApprovalSecondDecisionConflicts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		first, second string
		wantTransfers int
	}{
		{"approve then approve", "approve", "approve", 1},
		{"approve then deny", "approve", "deny", 1},
		{"deny then approve (stale)", "deny", "approve", 0},
		{"deny then deny", "deny", "deny", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
			_, stream, in := e.parkedRun(t)
			body := func(op string) string {
				if op == "approve" {
					return apApproveBody(in.ID, "")
				}
				return apDenyBody(in.ID, "no")
			}
			if d := e.decide(t, c.first, apAlice, body(c.first)); d.status != 200 {
				t.Fatalf("first %s: HTTP %d %s", c.first, d.status, d.raw)
			}
			d := e.decide(t, c.second, apAlice, body(c.second))
			if d.status != 409 || d.code() != "Conflict" {
				t.Fatalf("second %s: HTTP %d %s, want 409 Conflict", c.second, d.status, d.raw)
			}
			if ra := d.header.Get("Retry-After"); ra != "" {
				t.Fatalf("Conflict carries Retry-After %q; it must not be retried", ra)
			}
			if !strings.Contains(d.raw, "already in use") {
				t.Fatalf("Conflict message %s does not say the value is already in use", d.raw)
			}
			e.followFrames(t, stream, 0)
			if n := len(e.Transfers()); n != c.wantTransfers {
				t.Fatalf("transfers ran %d times, want %d", n, c.wantTransfers)
			}
		})
	}
}

func TestApprovalNotFound(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	runID, _, err := agui.ParseInterruptID(in.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherCall, _ := agui.NewInterruptID(runID, "call_other")
	unknownRun, _ := agui.NewInterruptID("nosuchrun", "call_pay")
	cases := []struct {
		name, user, body string
	}{
		{"unknown run", apAlice, apApproveBody(unknownRun, "")},
		{"unknown tool call", apAlice, apApproveBody(otherCall, "")},
		{"malformed id", apAlice, apApproveBody("!!not-base64!!", "")},
		{"id without a dot", apAlice, apApproveBody("bm9kb3Q", "")},
		{"empty id", apAlice, `{"id":""}`},
		{"other tenant", "eve@globex", apApproveBody(in.ID, "")},
		{"other tenant, same user id", "alice@globex", apApproveBody(in.ID, "")},
		{"anonymous (no tenant)", "", apApproveBody(in.ID, "")},
	}
	for _, c := range cases {
		for _, op := range []string{"approve", "deny"} {
			d := e.decide(t, op, c.user, c.body)
			if d.status != 404 || d.code() != "NotFound" {
				t.Errorf("%s %s: HTTP %d %s, want 404 NotFound", op, c.name, d.status, d.raw)
			}
		}
	}
	// The id is required: a body without one is a ValidationError naming it, as the
	// declared schema (and the generated TypeScript type) says.
	for _, op := range []string{"approve", "deny"} {
		d := e.decide(t, op, apAlice, `{}`)
		if d.status != 400 || d.code() != "ValidationError" || !strings.Contains(d.raw, `{"path":"id","message":"required"}`) {
			t.Errorf("%s without an id: HTTP %d %s, want 400 ValidationError on id", op, d.status, d.raw)
		}
	}
	// None of them decided anything: the owner still can.
	if d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, "")); d.status != 200 {
		t.Fatalf("approve after the refusals: HTTP %d %s", d.status, d.raw)
	}
	e.followFrames(t, stream, 0)
}

func TestApprovalToolGateForbids(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	for _, op := range []string{"approve", "deny"} {
		body := apApproveBody(in.ID, "")
		if op == "deny" {
			body = apDenyBody(in.ID, "mine now")
		}
		d := e.decide(t, op, apMallory, body)
		if d.status != 403 || d.code() != "Forbidden" || !strings.Contains(string(d.env.Error.Data), `"gate":"teller"`) {
			t.Fatalf("%s as apMallory: HTTP %d %s, want 403 Forbidden from the tool's gate", op, d.status, d.raw)
		}
	}
	if d := e.decide(t, "deny", apAlice, apDenyBody(in.ID, "checked")); d.status != 200 {
		t.Fatalf("deny as apAlice after apMallory's refusals: HTTP %d %s", d.status, d.raw)
	}
	e.followFrames(t, stream, 0)
	if got := apToolMessage(t, e.model, "call_pay"); !strings.Contains(got, "checked") {
		t.Fatalf("the model saw %q, want apAlice's reason", got)
	}
}

func TestApprovalReplacementArgs(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	bad := []struct{ name, args string }{
		{"wrong type", `{"to":"bob","amount":"lots"}`},
		{"not an object", `[1,2]`},
		{"a string", `"carol"`},
	}
	for _, b := range bad {
		d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, b.args))
		if d.status != 400 || d.code() != "ValidationError" {
			t.Errorf("approve with %s args: HTTP %d %s, want 400 ValidationError", b.name, d.status, d.raw)
		}
	}
	// Nothing was stored: the next apDecision is the first.
	if d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, `{"to":"carol","amount":50}`)); d.status != 200 {
		t.Fatalf("approve with good args: HTTP %d %s", d.status, d.raw)
	}
	frames, _ := e.followFrames(t, stream, 0)
	if got := e.Transfers(); len(got) != 1 || got[0].To != "carol" || got[0].Amount != 50 {
		t.Fatalf("the tool ran with %+v, want the replacement args", got)
	}
	for _, f := range frames {
		if r, ok := f.Event.(agui.ToolCallResult); ok && !strings.Contains(r.Content, `"to":"carol"`) {
			t.Fatalf("TOOL_CALL_RESULT %s does not reflect the replacement args", r.Content)
		}
	}
}

// Twenty deciders race: exactly one apDecision is stored, every other caller gets 409
// Conflict.
func TestApprovalConcurrentDecisions(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	const n = 20
	results := make(chan apDecision, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if i%2 == 0 {
				results <- e.decide(t, "approve", apAlice, apApproveBody(in.ID, ""))
			} else {
				results <- e.decide(t, "deny", apAlice, apDenyBody(in.ID, "racer "+strconv.Itoa(i)))
			}
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	ok, conflicts := 0, 0
	for d := range results {
		switch {
		case d.status == 200:
			ok++
		case d.status == 409 && d.code() == "Conflict":
			conflicts++
		default:
			t.Errorf("unexpected reply HTTP %d %s", d.status, d.raw)
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Fatalf("%d deciders won and %d got Conflict; want 1 and %d", ok, conflicts, n-1)
	}
	e.followFrames(t, stream, 0)
	if n := len(e.Transfers()); n > 1 {
		t.Fatalf("the transfer ran %d times", n)
	}
}

// Another worker holds the run's lease: the apDecision is refused with 409
// JournalLeaseBusy and Retry-After, nothing is stored, and it succeeds once the lease is
// given back.
func TestApprovalLeaseBusy(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	runID, _, _ := agui.ParseInterruptID(in.ID)
	other, err := journal.New(e.drv, journal.Options{Owner: "other-worker", LeaseTTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	held, err := other.Claim(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"approve", "deny"} {
		body := apApproveBody(in.ID, "")
		if op == "deny" {
			body = apDenyBody(in.ID, "no")
		}
		d := e.decide(t, op, apAlice, body)
		if d.status != 409 || d.code() != "JournalLeaseBusy" {
			t.Fatalf("%s while leased: HTTP %d %s, want 409 JournalLeaseBusy", op, d.status, d.raw)
		}
		secs, err := strconv.Atoi(d.header.Get("Retry-After"))
		if err != nil || secs < 1 || secs > 30 {
			t.Fatalf("Retry-After = %q, want 1..30 seconds", d.header.Get("Retry-After"))
		}
		if !strings.Contains(d.raw, "locked by another worker") {
			t.Fatalf("JournalLeaseBusy message %s does not say the run is locked", d.raw)
		}
	}
	// The other worker parks the run again and lets go, as a worker does.
	if err := held.Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, "")); d.status != 200 {
		t.Fatalf("approve after the lease was released: HTTP %d %s (a busy reply must store nothing)", d.status, d.raw)
	}
	e.followFrames(t, stream, 0)
	if n := len(e.Transfers()); n != 1 {
		t.Fatalf("transfers ran %d times, want 1", n)
	}
}

// Two calls that need approval in one model step park together: one RUN_FINISHED
// carries both interrupts, and the run resumes only when both are decided.
func TestApprovalSeveralInOneStep(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: []openaitest.Turn{
		{ToolCalls: []openaitest.ToolCall{
			{ID: "call_a", Name: "bank_transfer", Arguments: `{"to":"ann","amount":500}`},
			{ID: "call_b", Name: "bank_transfer", Arguments: `{"to":"ben","amount":700}`},
		}},
		{Text: "One sent, one refused."},
	}})
	_, events := e.chat(t, "/desk/chat", apAlice, "pay ann and ben")
	finished := 0
	for _, ev := range events {
		if _, ok := ev.(agui.RunFinished); ok {
			finished++
		}
	}
	ins := apInterrupts(events)
	if finished != 1 || len(ins) != 2 || ins[0].ToolCallID != "call_a" || ins[1].ToolCallID != "call_b" {
		t.Fatalf("want one RUN_FINISHED with interrupts for call_a and call_b, got %d RUN_FINISHED, %+v", finished, ins)
	}
	stream := apRunID(t, events)
	if d := e.decide(t, "approve", apAlice, apApproveBody(ins[0].ID, "")); d.status != 200 {
		t.Fatalf("approve a: HTTP %d %s", d.status, d.raw)
	}
	runID, _, _ := agui.ParseInterruptID(ins[0].ID)
	rec, err := e.j.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != journal.StatusParked || len(e.Transfers()) != 0 || e.model.RequestCount() != 1 {
		t.Fatalf("after one of two decisions: status %s, %d transfers, %d model calls; want still parked", rec.Status, len(e.Transfers()), e.model.RequestCount())
	}
	if n, err := e.j.RecoverOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("recovery resumed %d runs (err %v) with a apDecision still pending", n, err)
	}
	if d := e.decide(t, "deny", apAlice, apDenyBody(ins[1].ID, "ben is blocked")); d.status != 200 {
		t.Fatalf("deny b: HTTP %d %s", d.status, d.raw)
	}
	frames, raw := e.followFrames(t, stream, 0)
	results := map[string]string{}
	for _, f := range frames {
		if r, ok := f.Event.(agui.ToolCallResult); ok {
			results[r.ToolCallID] = r.Content
		}
	}
	if !strings.Contains(results["call_a"], `"to":"ann"`) || !strings.Contains(results["call_b"], "ben is blocked") {
		t.Fatalf("tool results = %v", results)
	}
	if got := e.Transfers(); len(got) != 1 || got[0].To != "ann" {
		t.Fatalf("transfers = %+v, want ann's only", got)
	}
	// The durable run stores the agent's result (encoded once, stored as is).
	waitFor(t, "the resumed run to complete", func() bool {
		rec, err = e.j.GetRun(context.Background(), runID)
		return err == nil && rec.Status.Final()
	})
	var stored ai.RunResult
	if err := json.Unmarshal(rec.Output, &stored); err != nil || rec.Status != journal.StatusCompleted ||
		stored.Text != "One sent, one refused." || stored.StopReason != "completed" || !strings.Contains(string(stored.Output), `"to":"ann"`) {
		t.Fatalf("stored run: status %s, output %s (%v)", rec.Status, rec.Output, err)
	}
	apRecord(t, "two-interrupts", raw, ins...)
}

func TestApprovalPredicateFalseRunsTool(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("50")})
	_, events := e.chat(t, "/desk/chat", apAlice, "send bob 50")
	if in := apInterrupts(events); len(in) != 0 {
		t.Fatalf("a transfer of 50 was parked: %+v", in)
	}
	last, ok := events[len(events)-1].(agui.RunFinished)
	if !ok || last.Result == nil || last.Result.StopReason != agui.StopCompleted {
		t.Fatalf("the run did not complete: %v", events[len(events)-1])
	}
	if got := e.Transfers(); len(got) != 1 || got[0].Amount != 50 {
		t.Fatalf("transfers = %+v", got)
	}
}

func TestApprovalNeedsDurableFlow(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, events := e.chat(t, "/desk/plain", apAlice, "send bob 500")
	last, ok := events[len(events)-1].(agui.RunError)
	want := "ai: flow named desk.plain must set durable: true to run agent named teller"
	if !ok || last.Message != want {
		t.Fatalf("last event %#v, want RUN_ERROR %q", events[len(events)-1], want)
	}
	if n := len(e.Transfers()); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// ai.Approve and ai.Deny inside a flow (the spec's fx.agent.approve and deny) follow
// the same rules as the routes, as the flow's caller.
func TestApprovalServerSideCalls(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	call := func(user, body string) apDecision {
		t.Helper()
		res, raw := e.request(t, "POST", "/desk/decide", user, nil, body)
		d := apDecision{status: res.StatusCode, header: res.Header, raw: string(raw)}
		if err := json.Unmarshal(raw, &d.env); err != nil {
			t.Fatalf("desk.decide reply is not an envelope: %s", raw)
		}
		return d
	}
	id := strconv.Quote(in.ID)
	if d := call("mallory@acme", `{"id":`+id+`,"approve":true}`); d.status != 403 || d.code() != "Forbidden" {
		t.Fatalf("server-side approve as mallory: HTTP %d %s, want 403", d.status, d.raw)
	}
	if d := call("eve@globex", `{"id":`+id+`,"reason":"x"}`); d.status != 404 || d.code() != "NotFound" {
		t.Fatalf("server-side deny from another tenant: HTTP %d %s, want 404", d.status, d.raw)
	}
	if d := call(apAlice, `{"id":`+id+`,"approve":true,"args":{"to":"dan","amount":120}}`); d.status != 200 || string(d.env.Data) != `{"ok":true}` {
		t.Fatalf("server-side approve: HTTP %d %s", d.status, d.raw)
	}
	if d := call(apAlice, `{"id":`+id+`,"reason":"late"}`); d.status != 409 || d.code() != "Conflict" {
		t.Fatalf("server-side deny after approval: HTTP %d %s, want 409 Conflict", d.status, d.raw)
	}
	e.followFrames(t, stream, 0)
	if got := e.Transfers(); len(got) != 1 || got[0].To != "dan" || got[0].Amount != 120 {
		t.Fatalf("transfers = %+v, want dan 120", got)
	}
}
