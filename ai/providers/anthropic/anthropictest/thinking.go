package anthropictest

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// Extended thinking as api.anthropic.com streams and checks it: a thinking block
// (content_block_start with empty thinking and signature, thinking_delta pieces, one
// signature_delta, content_block_stop) and redacted_thinking blocks carrying their data
// whole. The fake signs each thinking block with [Signature] and, as Anthropic does,
// refuses a request with thinking enabled whose last assistant message calls tools
// without its thinking blocks first, or whose thinking text does not match its signature.

// Signature is the signature the fake gives the thinking text t: the API's check that
// the thinking sent back is the thinking it streamed.
func Signature(t string) string {
	sum := sha256.Sum256([]byte(t))
	return "sig-" + base64.StdEncoding.EncodeToString(sum[:12])
}

// Thinking is the request's thinking parameter.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedBlock struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

type thinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

type signatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

// thinkingEvents streams the turn's thinking and redacted thinking as blocks from index
// on, and returns the next block index.
func thinkingEvents(t Turn, index int, add func(string, any)) int {
	if t.Thinking != "" {
		add("content_block_start", blockStart{Type: "content_block_start", Index: index, ContentBlock: thinkingBlock{Type: "thinking"}})
		for _, w := range strings.SplitAfter(t.Thinking, " ") {
			add("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
				Delta: thinkingDelta{Type: "thinking_delta", Thinking: w}})
		}
		add("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
			Delta: signatureDelta{Type: "signature_delta", Signature: Signature(t.Thinking)}})
		add("content_block_stop", blockStop{Type: "content_block_stop", Index: index})
		index++
	}
	if t.RedactedThinking != "" {
		add("content_block_start", blockStart{Type: "content_block_start", Index: index,
			ContentBlock: redactedBlock{Type: "redacted_thinking", Data: t.RedactedThinking}})
		add("content_block_stop", blockStop{Type: "content_block_stop", Index: index})
		index++
	}
	return index
}

// checkThinking answers as Anthropic does a request that breaks the rules of extended
// thinking; 0 when it keeps them.
func checkThinking(req Request) (int, string) {
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if b.Type == "thinking" && b.Signature != Signature(b.Thinking) {
				return http.StatusBadRequest, fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
			}
		}
	}
	if req.Thinking == nil || req.Thinking.Type != "enabled" {
		return 0, ""
	}
	last := -1
	for i, m := range req.Messages {
		if m.Role == "assistant" {
			last = i
		}
	}
	if last < 0 || len(req.Messages[last].Content) == 0 {
		return 0, ""
	}
	calls := false
	for _, b := range req.Messages[last].Content {
		calls = calls || b.Type == "tool_use"
	}
	if first := req.Messages[last].Content[0].Type; calls && first != "thinking" && first != "redacted_thinking" {
		return http.StatusBadRequest, fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. "+
			"When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "+
			"`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this "+
			"requirement, disable `thinking`.", last, first)
	}
	return 0, ""
}
