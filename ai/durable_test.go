package ai_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/journal"
)

// transferTurns is a model that asks for a transfer needing approval, then answers.
var transferTurns = []turn{
	{Text: "Sending it.", Calls: []call{{ID: "call_t", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}, Usage: &usage{In: 10, Out: 5}},
	{Text: "Done.", Usage: &usage{In: 20, Out: 2}},
}

// interruptOf returns the approval interrupt the live stream parked on.
func interruptOf(t *testing.T, tr transcript) agui.Interrupt {
	t.Helper()
	fin := tr.finished(t)
	if fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeInterrupt || len(fin.Outcome.Interrupts) != 1 {
		t.Fatalf("RUN_FINISHED.outcome = %+v, want one interrupt:\n%s", fin.Outcome, tr.raw)
	}
	return fin.Outcome.Interrupts[0]
}

// TestDurableReplaySkipsRecordedModelSteps checks item 13 with an approval: the live
// stream parks with an interrupt (then [DONE]); after the decision the durable run
// resumes, the recorded model step is replayed without a model request, and the follow
// route carries the whole story to the final RUN_FINISHED.
func TestDurableReplaySkipsRecordedModelSteps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		decision, body string
		transfers      int
		wantContent    string
	}{
		{"approve", `{"id":%q}`, 1, `{"ok":true,"to":"bob","amount":500}`},
		{"deny", `{"id":%q,"reason":"too much"}`, 0, `{"error":{"code":"Denied","data":{"reason":"too much"}}}`},
	}
	for _, kind := range providerKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.decision, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, turns: transferTurns})
				live := w.stream(t, "/chat", `{"message":"send bob 500"}`)
				if kind == "openai" {
					golden(t, "durable_"+tc.decision, live)
				}
				in := interruptOf(t, live)
				eq(t, "interrupt.reason", in.Reason, "approval")
				eq(t, "interrupt.payload.tool", in.Payload.Tool, "tools.transfer")
				eq(t, "interrupt.payload.args", string(in.Payload.Args), `{"to":"bob","amount":500}`)
				eq(t, "interrupt.toolCallId", in.ToolCallID, "call_t")
				if !strings.HasSuffix(live.raw, "data: [DONE]\n\n") {
					t.Errorf("the parked stream does not end with [DONE]")
				}
				eq(t, "TOOL_CALL_RESULT before the decision", len(of[agui.ToolCallResult](live)), 0)
				eq(t, "model requests before the decision", w.model.RequestCount(), 1)

				status, body := w.post(t, "/agent/approvals/"+tc.decision, fmt.Sprintf(tc.body, in.ID))
				eq(t, "decision status", status, http.StatusOK)
				if !strings.Contains(body, `"ok":true`) {
					t.Errorf("decision reply %s", body)
				}
				status, body = w.post(t, "/agent/approvals/"+tc.decision, fmt.Sprintf(tc.body, in.ID))
				eq(t, "second decision status", status, http.StatusConflict)
				if !strings.Contains(body, "Conflict") {
					t.Errorf("second decision reply %s", body)
				}

				runID := live.started(t).RunID
				follow := w.follow(t, runID, "")
				if kind == "openai" {
					goldenFollow(t, "durable_"+tc.decision, follow)
				}
				finals := of[agui.RunFinished](follow)
				if len(finals) != 2 || finals[0].Outcome == nil || finals[1].Result == nil {
					t.Fatalf("the log should hold the interrupt then the final RUN_FINISHED:\n%s", follow.raw)
				}
				eq(t, "final stopReason", finals[1].Result.StopReason, agui.StopCompleted)
				eq(t, "final runId", finals[1].RunID, runID)
				results := of[agui.ToolCallResult](follow)
				if len(results) != 1 {
					t.Fatalf("%d tool results in the log, want 1", len(results))
				}
				eq(t, "tool result", results[0].Content, tc.wantContent)
				eq(t, "tool result toolCallId", results[0].ToolCallID, "call_t")
				eq(t, "transfers", w.count("transfer"), tc.transfers)
				// One request per model turn: the resumed run replays turn 1 from the journal.
				eq(t, "model requests", w.model.RequestCount(), 2)
				// Message ids keep counting through the replay: m-1 text, m-2 result, m-3 text.
				var ids []string
				for _, ev := range follow.events() {
					switch e := ev.(type) {
					case agui.TextMessageStart:
						ids = append(ids, e.MessageID)
					case agui.ToolCallResult:
						ids = append(ids, e.MessageID)
					}
				}
				eq(t, "message ids", joined(ids), "m-1 m-2 m-3")
			})
		}
	}
}

// TestApprovalPerCallEvenWithReusedIDs checks that a decision approves one tool call,
// not every later call that happens to reuse its id: some OpenAI-compatible servers
// number calls per turn (call_0 in every turn), and a second transfer under the same id
// must wait for its own decision.
func TestApprovalPerCallEvenWithReusedIDs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Calls: []call{{ID: "call_0", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}},
		{Calls: []call{{ID: "call_0", Name: "tools_transfer", Args: `{"to":"eve","amount":900}`}}},
		{Text: "Both sent."},
	}})
	live := w.stream(t, "/chat", `{"message":"pay bob then eve"}`)
	first := interruptOf(t, live)
	status, body := w.post(t, "/agent/approvals/approve", fmt.Sprintf(`{"id":%q}`, first.ID))
	if status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	runID := live.started(t).RunID
	// The run must park again for eve's transfer: wait for a second interrupt in the log.
	waitFor(t, "the resumed run to park again or finish", func() bool {
		rows, err := w.journal.Driver().ReadEvents(context.Background(), runID, 0, 1000)
		if err != nil || len(rows) == 0 {
			return false
		}
		return endsWithRunEnd(rows[len(rows)-1].Event) && strings.Count(string(lastEvents(rows)), `"RUN_FINISHED"`) >= 2
	})
	eq(t, "transfers before the second decision", w.count("transfer"), 1)
	rows, err := w.journal.Driver().ReadEvents(context.Background(), runID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var second []agui.Interrupt
	for _, r := range rows {
		if ev, err := agui.Decode(r.Event); err == nil {
			if f, ok := ev.(agui.RunFinished); ok && f.Outcome != nil && len(f.Outcome.Interrupts) > 0 {
				second = f.Outcome.Interrupts
			}
		}
	}
	if len(second) != 1 || second[0].ID == first.ID {
		t.Fatalf("eve's transfer did not wait for its own decision; log:\n%s", lastEvents(rows))
	}
	eq(t, "second interrupt args", string(second[0].Payload.Args), `{"to":"eve","amount":900}`)

	// Approving eve's transfer finishes the run; each model turn was asked for once, and
	// every tool message sent back names a call of the assistant turn before it.
	status, body = w.post(t, "/agent/approvals/approve", fmt.Sprintf(`{"id":%q}`, second[0].ID))
	if status != http.StatusOK {
		t.Fatalf("second approve: %d %s", status, body)
	}
	follow := w.follow(t, runID, "")
	verifyAGUI(t, follow.raw, true)
	eq(t, "final stopReason", follow.result(t).StopReason, agui.StopCompleted)
	eq(t, "transfers", w.count("transfer"), 2)
	eq(t, "model requests", w.model.RequestCount(), 3)
	reqs := w.model.(*openaitest.Server).Requests()
	last := reqs[len(reqs)-1].Messages
	callIDs := map[string]bool{}
	for _, m := range last {
		for _, c := range m.ToolCalls {
			if callIDs[c.ID] {
				t.Errorf("tool call id %q sent twice to the model", c.ID)
			}
			callIDs[c.ID] = true
		}
		if m.Role == "tool" && !callIDs[m.ToolCallID] {
			t.Errorf("tool message for %q follows no call with that id", m.ToolCallID)
		}
	}
	eq(t, "tool calls in the history", len(callIDs), 2)
}

// endsWithRunEnd reports whether a stored event ends a run segment.
func endsWithRunEnd(ev []byte) bool {
	return strings.Contains(string(ev), `"type":"RUN_FINISHED"`) || strings.Contains(string(ev), `"type":"RUN_ERROR"`)
}

// lastEvents joins stored rows for failure messages.
func lastEvents(rows []journal.EventRow) []byte {
	var b []byte
	for _, r := range rows {
		b = append(b, r.Event...)
		b = append(b, '\n')
	}
	return b
}

// TestApprovalPerCallWithinOneTurn checks that two calls sharing an id inside one turn
// still get one interrupt each, with distinct ids, so one decision cannot cover both.
func TestApprovalPerCallWithinOneTurn(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Calls: []call{
			{ID: "call_0", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`},
			{ID: "call_0", Name: "tools_transfer", Args: `{"to":"eve","amount":900}`},
		}},
		{Text: "Both sent."},
	}})
	live := w.stream(t, "/chat", `{"message":"pay bob and eve"}`)
	fin := live.finished(t)
	if fin.Outcome == nil || len(fin.Outcome.Interrupts) != 2 {
		t.Fatalf("outcome = %+v, want two interrupts", fin.Outcome)
	}
	a, b := fin.Outcome.Interrupts[0], fin.Outcome.Interrupts[1]
	if a.ID == b.ID || a.ToolCallID == b.ToolCallID {
		t.Errorf("the two transfers share interrupt id %q / toolCallId %q: one decision would cover both", a.ID, a.ToolCallID)
	}
}

// TestNoApprovalAskedForACallMaxStepsDrops checks that a call the step limit will drop
// is not put to a human: with maxSteps 1 and a turn calling weather then a transfer
// needing approval, weather runs, the run stops with max_steps, and nobody is asked to
// approve a transfer that would never run.
func TestNoApprovalAskedForACallMaxStepsDrops(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{maxSteps: 1, turns: []turn{
		{Calls: []call{
			{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`},
			{ID: "c2", Name: "tools_transfer", Args: `{"to":"eve","amount":900}`},
		}},
		{Text: "never"},
	}})
	tr := w.stream(t, "/chat", `{"message":"weather, then pay eve"}`)
	fin := tr.finished(t)
	if fin.Outcome != nil {
		t.Fatalf("the run parked for a call maxSteps drops: %+v", fin.Outcome)
	}
	eq(t, "stopReason", tr.result(t).StopReason, agui.StopMaxSteps)
	eq(t, "weather runs", w.count("weather"), 1)
	eq(t, "transfers", w.count("transfer"), 0)
}
