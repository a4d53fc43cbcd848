package ai_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
)

// TestInterruptBoundarySnapshots checks AG-UI 1.0's "State at the interrupt boundary":
// MESSAGES_SNAPSHOT (with the conversation so far) and STATE_SNAPSHOT (the run has
// state) right before the RUN_FINISHED that carries the interrupt.
func TestInterruptBoundarySnapshots(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Text: "Sending.", Calls: []call{{ID: "call_t", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}},
	}})
	tr := w.stream(t, "/chat/agui", `{"threadId":"th","runId":"r1","state":{"mood":"calm"},"messages":[{"id":"u","role":"user","content":"send bob 500"}]}`)
	verifyAGUI(t, tr.raw, false)
	types := tr.types()
	n := len(types)
	if n < 3 || types[n-1] != "RUN_FINISHED" || types[n-2] != "MESSAGES_SNAPSHOT" || types[n-3] != "STATE_SNAPSHOT" {
		t.Fatalf("the interrupt's RUN_FINISHED is not preceded by STATE_SNAPSHOT and MESSAGES_SNAPSHOT: %s", joined(types))
	}
	snap := of[agui.MessagesSnapshot](tr)[0]
	if len(snap.Messages) != 2 || snap.Messages[0].Role != "user" || snap.Messages[0].Content != "send bob 500" ||
		snap.Messages[1].Role != "assistant" || snap.Messages[1].Content != "Sending." || len(snap.Messages[1].ToolCalls) != 1 ||
		snap.Messages[1].ToolCalls[0].Function.Name != "tools.transfer" {
		t.Fatalf("MESSAGES_SNAPSHOT = %+v", snap.Messages)
	}
	states := of[agui.StateSnapshot](tr)
	if string(states[len(states)-1].Snapshot) != `{"mood":"calm"}` {
		t.Fatalf("STATE_SNAPSHOT = %s", states[len(states)-1].Snapshot)
	}
}

// TestInputOnAThreadWithAPendingInterrupt checks AG-UI 1.0's contract rule: an input on
// a thread whose run waits for the answer to an interrupt, without resume, is answered
// with RUN_ERROR and starts no second run; the resume then goes through, and a replayed
// resume with the same answers runs nothing twice.
func TestInputOnAThreadWithAPendingInterrupt(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Calls: []call{{ID: "call_t", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}},
		{Text: "Done."},
	}})
	fin := parkTransfer(t, w)
	status, raw := w.post(t, "/chat/agui", `{"threadId":"th","runId":"r2","messages":[{"id":"u","role":"user","content":"send bob 500"},{"id":"u2","role":"user","content":"and carol 20"}]}`)
	if status != http.StatusOK {
		t.Fatalf("second input: %d %s", status, raw)
	}
	tr := parse(t, raw)
	verifyAGUI(t, raw, false)
	if types := tr.types(); len(types) != 1 || types[0] != "RUN_ERROR" {
		t.Fatalf("second input got %s, want a lone RUN_ERROR", joined(types))
	}
	eq(t, "RUN_ERROR.code", tr.runError(t).Code, ai.CodeInterruptPending)
	eq(t, "model requests", w.model.RequestCount(), 1)
	runs, err := w.journal.ThreadRuns(t.Context(), "th", 0, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("thread runs = %+v, %v: want the parked one only", runs, err)
	}

	resume := fmt.Sprintf(`{"threadId":"th","runId":"r3","messages":[],"resume":[{"interruptId":%q,"status":"resolved","payload":null}]}`, fin.Outcome.Interrupts[0].ID)
	done := w.stream(t, "/chat/agui", resume)
	if r := done.finished(t); r.Result == nil || r.Result.StopReason != agui.StopCompleted {
		t.Fatalf("the resume did not complete the run: %s", done.raw)
	}
	// A replayed resume decides nothing again: the interrupt is answered already.
	if status, raw := w.post(t, "/chat/agui", resume); status != http.StatusConflict {
		t.Fatalf("a replayed resume: %d %s, want 409 Conflict", status, raw)
	}
	eq(t, "transfers", w.count("transfer"), 1)
	eq(t, "model requests", w.model.RequestCount(), 2)
	// With the interrupt answered, the thread takes new input again.
	if status, raw := w.post(t, "/chat/agui", `{"threadId":"th","runId":"r4","messages":[{"id":"u","role":"user","content":"thanks"}]}`); status != http.StatusOK || strings.Contains(raw, ai.CodeInterruptPending) {
		t.Fatalf("input after the answer: %d %s", status, raw)
	}
}
