package openai

import (
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bbc28f59/engine/ai"
)

// Reasoning on the chat-completions API, which this provider speaks so that every
// OpenAI-compatible server works:
//
//   - [ai.ReasoningOptions.Effort] is sent as reasoning_effort; BudgetTokens is not read.
//   - OpenAI's own servers do not return reasoning text on this API (only the Responses
//     API streams reasoning summaries and encrypted reasoning, and this provider does
//     not speak it): what streams as reasoning is the reasoning text that compatible
//     servers add to the delta, as reasoning_content (DeepSeek, vLLM, llama.cpp) or as
//     reasoning (OpenRouter, Ollama, newer vLLM).
//   - Reasoning is never sent back: the API has no field for it, and DeepSeek refuses a
//     request whose messages carry reasoning_content.
//   - usage.completion_tokens_details.reasoning_tokens is reported as
//     [ai.Usage.ReasoningTokens] (part of the completion tokens).

// setReasoning asks for reasoning as the request's model options say.
func setReasoning(p *sdk.ChatCompletionNewParams, r *ai.ReasoningOptions) {
	if r != nil && r.Effort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(r.Effort)
	}
}

// reasoningDelta reads the reasoning text a compatible server put in a delta, or "".
func reasoningDelta(d sdk.ChatCompletionChunkChoiceDelta) string {
	for _, name := range []string{"reasoning_content", "reasoning"} {
		f, ok := d.JSON.ExtraFields[name] // the SDK marks members it does not model as not Valid
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// reasoningTokens reads completion_tokens_details.reasoning_tokens when the server sent it.
func reasoningTokens(u sdk.CompletionUsage) *int64 {
	if !u.JSON.CompletionTokensDetails.Valid() || !u.CompletionTokensDetails.JSON.ReasoningTokens.Valid() {
		return nil
	}
	n := u.CompletionTokensDetails.ReasoningTokens
	return &n
}
