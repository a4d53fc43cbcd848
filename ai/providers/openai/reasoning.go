package openai

import (
	"encoding/json"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bbc28f59/engine/ai"
)

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
