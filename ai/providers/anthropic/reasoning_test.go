package anthropic_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
)

// TestThinkingBudget checks how ReasoningOptions become thinking.budget_tokens, and that
// max_tokens is raised above the budget, as the API requires.
func TestThinkingBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		r                 ai.ReasoningOptions
		maxTokens         int
		budget, wantLimit int64
		err               string
	}{
		{r: ai.ReasoningOptions{BudgetTokens: 2048}, budget: 2048, wantLimit: 2048 + anthropic.DefaultMaxTokens},
		{r: ai.ReasoningOptions{BudgetTokens: 2048}, maxTokens: 8000, budget: 2048, wantLimit: 8000},
		{r: ai.ReasoningOptions{Effort: "low"}, budget: 1024, wantLimit: 1024 + anthropic.DefaultMaxTokens},
		{r: ai.ReasoningOptions{}, budget: 4096, wantLimit: 4096 + anthropic.DefaultMaxTokens},
		{r: ai.ReasoningOptions{Effort: "high", BudgetTokens: 3000}, budget: 3000, wantLimit: 3000 + anthropic.DefaultMaxTokens},
		{r: ai.ReasoningOptions{Effort: "high"}, budget: 16384, wantLimit: 16384 + anthropic.DefaultMaxTokens},
		{r: ai.ReasoningOptions{BudgetTokens: 500}, err: "below Anthropic's minimum of 1024"},
		{r: ai.ReasoningOptions{Effort: "extreme"}, err: `reasoning effort "extreme"`},
	}
	for _, tc := range cases {
		srv, p := setup(t, anthropictest.Turn{Text: "ok"})
		req := userRequest("hi")
		req.MaxTokens = tc.maxTokens
		req.Reasoning = &tc.r
		_, err := ai.Collect(p.Stream(t.Context(), req))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || srv.RequestCount() != 0 {
				t.Errorf("%+v: err %v, %d requests; want %q before sending", tc.r, err, srv.RequestCount(), tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.r, err)
		}
		got := srv.Requests()[0]
		if got.Thinking == nil || got.Thinking.Type != "enabled" || got.Thinking.BudgetTokens != tc.budget || got.MaxTokens != tc.wantLimit {
			t.Errorf("%+v: thinking %+v, max_tokens %d; want budget %d, max_tokens %d", tc.r, got.Thinking, got.MaxTokens, tc.budget, tc.wantLimit)
		}
	}
	srv, p := setup(t, anthropictest.Turn{Text: "ok"})
	if _, err := ai.Collect(p.Stream(t.Context(), userRequest("hi"))); err != nil || srv.Requests()[0].Thinking != nil {
		t.Errorf("a request without reasoning sent thinking %+v (%v)", srv.Requests()[0].Thinking, err)
	}
}

// TestThinkingStreamsAndReturns checks the chunks of a thinking turn (text pieces, the
// signature, a redacted block whole, each numbered among the reasoning) and that an
// assistant message's reasoning goes back first, as thinking and redacted_thinking
// blocks; reasoning without a signature is not sent, and a turn that called tools with
// its thinking left out is refused as the API refuses it.
func TestThinkingStreamsAndReturns(t *testing.T) {
	t.Parallel()
	const thought = "Paris is in France."
	srv, p := setup(t, anthropictest.Turn{Thinking: thought, RedactedThinking: "opaque", Text: "Hi"},
		anthropictest.Turn{Text: "Done"})
	req := userRequest("hi")
	req.Reasoning = &ai.ReasoningOptions{BudgetTokens: 1024}
	var text string
	var redacted, sig string
	for c, err := range p.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Reasoning; r != nil {
			switch r.Index {
			case 0:
				text += r.Text
				if r.Signature != "" {
					sig = r.Signature
				}
			case 1:
				redacted = r.Redacted
			}
		}
	}
	if text != thought || sig != anthropictest.Signature(thought) || redacted != "opaque" {
		t.Fatalf("reasoning %q, signature %q, redacted %q", text, sig, redacted)
	}

	calls := []ai.ToolCall{{ID: "toolu_1", Name: "f", Arguments: "{}"}}
	history := func(rs []ai.Reasoning) ai.Request {
		r := req
		r.Messages = []ai.Message{{Role: ai.RoleUser, Content: "hi"},
			{Role: ai.RoleAssistant, ToolCalls: calls, Reasoning: rs},
			{Role: ai.RoleTool, ToolCallID: "toolu_1", Content: "ok"}}
		return r
	}
	back := []ai.Reasoning{{Text: "unsigned, from another provider"}, {Text: thought, Signature: sig}, {Redacted: "opaque"}}
	if _, err := ai.Collect(p.Stream(t.Context(), history(back))); err != nil {
		t.Fatalf("with the thinking sent back: %v", err)
	}
	blocks := srv.Requests()[1].Messages[1].Content
	if len(blocks) != 3 || blocks[0].Type != "thinking" || blocks[0].Thinking != thought || blocks[0].Signature != sig ||
		blocks[1].Type != "redacted_thinking" || blocks[1].Data != "opaque" || blocks[2].Type != "tool_use" {
		t.Fatalf("assistant blocks = %+v", blocks)
	}
	_, err := ai.Collect(p.Stream(t.Context(), history(nil)))
	var perr *ai.ProviderError
	if !errors.As(err, &perr) || perr.Status != http.StatusBadRequest || !strings.Contains(perr.Message, "Expected `thinking`") {
		t.Fatalf("without the thinking: %v, want the API's 400", err)
	}
}
