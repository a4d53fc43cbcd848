package openai_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// TestReasoning checks that the effort is sent as reasoning_effort, that reasoning text
// in either member compatible servers use streams as reasoning before the text, that
// reasoning tokens are reported, and that reasoning is never sent back.
func TestReasoning(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"reasoning_content", "reasoning"} {
		turn := openaitest.Turn{Reasoning: "Think first.", ReasoningField: field, Text: "Answer",
			Usage: &openaitest.Usage{PromptTokens: 5, CompletionTokens: 20, ReasoningTokens: 12}}
		srv, p := setup(t, turn, turn) // the request holds one assistant message
		req := ai.Request{Model: "m", Reasoning: &ai.ReasoningOptions{Effort: "high", BudgetTokens: 9000},
			Messages: []ai.Message{{Role: ai.RoleUser, Content: "hi"},
				{Role: ai.RoleAssistant, Content: "earlier", Reasoning: []ai.Reasoning{{Text: "secret", Signature: "s"}}},
				{Role: ai.RoleUser, Content: "again"}}}
		var reasoning, order string
		var usage *ai.Usage
		for c, err := range p.Stream(t.Context(), req) {
			if err != nil {
				t.Fatal(err)
			}
			if c.Reasoning != nil {
				reasoning += c.Reasoning.Text
				if c.Reasoning.Index != 0 || c.Reasoning.Signature != "" {
					t.Errorf("%s: reasoning chunk %+v", field, *c.Reasoning)
				}
				order += "r"
			}
			if c.Text != "" {
				order += "t"
			}
			if c.Usage != nil {
				usage = c.Usage
			}
		}
		if reasoning != "Think first." || !regexp.MustCompile(`^r+t+$`).MatchString(order) {
			t.Errorf("%s: reasoning %q, order %q", field, reasoning, order)
		}
		if usage == nil || usage.ReasoningTokens == nil || *usage.ReasoningTokens != 12 || *usage.OutputTokens != 20 {
			t.Errorf("%s: usage %+v", field, usage)
		}
		got := srv.Requests()[0]
		if got.ReasoningEffort != "high" {
			t.Errorf("%s: reasoning_effort %q", field, got.ReasoningEffort)
		}
		if raw := string(got.Raw); strings.Contains(raw, "secret") || strings.Contains(raw, "reasoning_content") {
			t.Errorf("%s: reasoning was sent back: %s", field, raw)
		}
	}
	srv, p := setup(t, openaitest.Turn{Text: "ok"})
	if _, err := ai.Collect(p.Stream(t.Context(), ai.Request{Model: "m", Messages: []ai.Message{{Role: ai.RoleUser, Content: "hi"}}})); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0]; got.ReasoningEffort != "" || strings.Contains(string(got.Raw), "reasoning_effort") {
		t.Errorf("a request without reasoning sent %s", got.Raw)
	}
}
