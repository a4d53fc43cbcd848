package ai_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// reasoningOpts asks for reasoning the way each provider takes it.
var reasoningOpts = []ai.ModelOption{ai.WithPricing(1, 2), ai.WithReasoning(ai.ReasoningOptions{Effort: "low", BudgetTokens: 2048})}

// TestReasoningStream checks that a model's reasoning streams as AG-UI reasoning
// messages before the text and tool calls it led to, one span per message with ids from
// the run's numbering; that Anthropic's signature (and a redacted block's data) follows
// as REASONING_ENCRYPTED_VALUE; that the log keeps reasoning like text; that reasoning
// tokens are counted where reported; and that each provider was asked for reasoning as it
// takes it and got the signed thinking back with the tool result (the Anthropic fake
// refuses a request without it, as the API does).
func TestReasoningStream(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			first := turn{Reasoning: "The user wants the weather in Paris.",
				Calls: []call{{ID: "call_1", Name: "tools_weather", Args: `{"city":"Paris"}`}}, Usage: &usage{In: 10, Out: 40, Reasoning: 30}}
			if kind == "anthropic" {
				first.Redacted = "EmwKAhgBEgy3va3pzix"
			}
			w := newWorld(t, setup{kind: kind, modelOpts: reasoningOpts, turns: []turn{first,
				{Reasoning: "It is warm there.", Text: "It is 15C in Paris.", Usage: &usage{In: 20, Out: 10, Reasoning: 4}}}})
			tr := w.stream(t, "/chat/plain", `{"message":"weather in Paris?"}`)
			golden(t, "reasoning_"+kind, tr)
			checkFollow(t, w, "reasoning_"+kind, tr)

			reasoning := map[string]string{}
			for _, c := range of[agui.ReasoningMessageContent](tr) {
				reasoning[c.MessageID] += c.Delta
			}
			starts := of[agui.ReasoningMessageStart](tr)
			want := []string{"The user wants the weather in Paris.", "It is warm there."}
			if kind == "anthropic" {
				want = []string{want[0], "", want[1]} // the redacted block is a message with no text
			}
			if len(starts) != len(want) {
				t.Fatalf("%d reasoning messages, want %d:\n%s", len(starts), len(want), tr.raw)
			}
			for i, s := range starts {
				eq(t, fmt.Sprintf("reasoning %d", i), reasoning[s.MessageID], want[i])
			}
			eq(t, "reasoning spans", len(of[agui.ReasoningStart](tr)), len(want))
			eq(t, "reasoning span ends", len(of[agui.ReasoningEnd](tr)), len(want))
			types := joined(tr.types())
			if !strings.Contains(types, "STEP_STARTED REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT") ||
				strings.Index(types, "REASONING_END") > strings.Index(types, "TOOL_CALL_START") {
				t.Errorf("reasoning does not open the step before the tool call: %s", types)
			}
			enc := of[agui.ReasoningEncryptedValue](tr)
			res := tr.finished(t)
			switch kind {
			case "openai":
				eq(t, "encrypted values", len(enc), 0)
				if u := res.Usage; len(u) != 1 || u[0].ReasoningTokens == nil || *u[0].ReasoningTokens != 34 {
					t.Errorf("RUN_FINISHED.usage = %+v, want reasoningTokens 34", u)
				}
				for _, r := range w.model.(*openaitest.Server).Requests() {
					eq(t, "reasoning_effort", r.ReasoningEffort, "low")
				}
			case "anthropic":
				if len(enc) != 3 || enc[0].EncryptedValue != anthropictest.Signature(want[0]) || enc[0].EntityID != starts[0].MessageID ||
					enc[1].EncryptedValue != first.Redacted || enc[0].Subtype != agui.EncryptedMessage ||
					enc[2].EncryptedValue != anthropictest.Signature(want[2]) || enc[2].EntityID != starts[2].MessageID {
					t.Errorf("REASONING_ENCRYPTED_VALUE = %+v", enc)
				}
				if u := res.Usage; len(u) != 1 || u[0].ReasoningTokens != nil {
					t.Errorf("RUN_FINISHED.usage = %+v, want no reasoningTokens (Anthropic reports none)", u)
				}
				reqs := w.model.(*anthropictest.Server).Requests()
				for _, r := range reqs {
					if r.Thinking == nil || r.Thinking.Type != "enabled" || r.Thinking.BudgetTokens != 2048 || r.MaxTokens <= 2048 {
						t.Errorf("request thinking = %+v, max_tokens %d", r.Thinking, r.MaxTokens)
					}
				}
				back := reqs[len(reqs)-1].Messages[1].Content
				if len(back) < 3 || back[0].Type != "thinking" || back[0].Thinking != want[0] || back[1].Type != "redacted_thinking" || back[1].Data != first.Redacted {
					t.Errorf("the reasoning sent back with the tool result = %+v", back)
				}
			}
			eq(t, "stopReason", res.Result.StopReason, agui.StopCompleted)
		})
	}
}

// TestReasoningSurvivesApproval checks that a durable run keeps its reasoning in the
// recorded turn: after an approval the resumed run sends the signed thinking back with
// the tool result (the Anthropic fake refuses the request otherwise), and the replayed
// turn keeps the message numbering, so the resumed events do not reuse a reasoning
// message's id.
func TestReasoningSurvivesApproval(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, modelOpts: reasoningOpts, turns: []turn{
				{Reasoning: "A transfer needs approval.", Calls: []call{{ID: "call_t", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}},
				{Reasoning: "It went through.", Text: "Sent."},
			}})
			live := w.stream(t, "/chat", `{"message":"send bob 500"}`)
			in := interruptOf(t, live)
			if status, body := w.post(t, "/agent/approvals/approve", fmt.Sprintf(`{"id":%q}`, in.ID)); status != http.StatusOK {
				t.Fatalf("approve: %d %s", status, body)
			}
			follow := w.follow(t, live.started(t).RunID, "")
			verifyAGUI(t, follow.raw, true)
			eq(t, "stopReason", follow.result(t).StopReason, agui.StopCompleted)
			eq(t, "transfers", w.count("transfer"), 1)
			ids := map[string]int{}
			for _, s := range of[agui.ReasoningMessageStart](follow) {
				ids[s.MessageID]++
			}
			for _, s := range of[agui.TextMessageStart](follow) {
				ids[s.MessageID]++
			}
			for _, r := range of[agui.ToolCallResult](follow) {
				ids[r.MessageID]++
			}
			for id, n := range ids {
				if n > 1 {
					t.Errorf("message id %s used %d times:\n%s", id, n, follow.raw)
				}
			}
			if kind == "anthropic" {
				reqs := w.model.(*anthropictest.Server).Requests()
				back := reqs[len(reqs)-1].Messages[1].Content
				if len(back) == 0 || back[0].Type != "thinking" || back[0].Signature != anthropictest.Signature("A transfer needs approval.") {
					t.Errorf("the resumed run sent back %+v", back)
				}
			}
		})
	}
}
