package anthropic

import (
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/bbc28f59/engine/ai"
)

// MinThinkingBudget is the smallest thinking budget Anthropic accepts.
const MinThinkingBudget = 1024

// setThinking turns extended thinking on as the request's model options say.
func setThinking(p *sdk.MessageNewParams, r *ai.ReasoningOptions) error {
	if r == nil {
		return nil
	}
	budget := int64(r.BudgetTokens)
	if budget == 0 {
		switch r.Effort {
		case "minimal", "low":
			budget = MinThinkingBudget
		case "", "medium":
			budget = 4096
		case "high":
			budget = 16384
		default:
			return fmt.Errorf("anthropic: reasoning effort %q: want minimal, low, medium or high, or set BudgetTokens", r.Effort)
		}
	}
	if budget < MinThinkingBudget {
		return fmt.Errorf("anthropic: thinking budget %d is below Anthropic's minimum of %d", budget, MinThinkingBudget)
	}
	if p.MaxTokens <= budget {
		p.MaxTokens = budget + DefaultMaxTokens
	}
	p.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
	return nil
}

// thinkingBlocks returns an assistant message's reasoning as the blocks Anthropic wants
// back before its text and tool calls.
func thinkingBlocks(rs []ai.Reasoning) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, r := range rs {
		switch {
		case r.Redacted != "":
			out = append(out, sdk.NewRedactedThinkingBlock(r.Redacted))
		case r.Signature != "":
			out = append(out, sdk.NewThinkingBlock(r.Signature, r.Text))
		}
	}
	return out
}

// reasoningStart opens a thinking or redacted_thinking block: it numbers the block among
// the turn's reasoning and returns the chunk a redacted block is whole in.
func (t *turn) reasoningStart(e sdk.ContentBlockStartEvent) []ai.Chunk {
	if t.reasonIndex == nil {
		t.reasonIndex = map[int64]int{}
	}
	i := len(t.reasonIndex)
	t.reasonIndex[e.Index] = i
	b := e.ContentBlock
	switch {
	case b.Type == "redacted_thinking" && b.Data != "":
		return []ai.Chunk{{Reasoning: &ai.ReasoningDelta{Index: i, Redacted: b.Data}}}
	case b.Thinking != "" || b.Signature != "":
		return []ai.Chunk{{Reasoning: &ai.ReasoningDelta{Index: i, Text: b.Thinking, Signature: b.Signature}}}
	}
	return nil
}

// reasoningDelta turns a thinking_delta or signature_delta into a reasoning chunk.
func (t *turn) reasoningDelta(e sdk.ContentBlockDeltaEvent) []ai.Chunk {
	i, ok := t.reasonIndex[e.Index]
	if !ok {
		return nil
	}
	d := ai.ReasoningDelta{Index: i}
	switch e.Delta.Type {
	case "thinking_delta":
		d.Text = e.Delta.AsThinkingDelta().Thinking
	case "signature_delta":
		d.Signature = e.Delta.AsSignatureDelta().Signature
	}
	if d.Text == "" && d.Signature == "" {
		return nil
	}
	return []ai.Chunk{{Reasoning: &d}}
}
