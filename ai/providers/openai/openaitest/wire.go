package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bbc28f59/engine/ai/providers/internal/wirefake"
)

// The shapes below mirror the chat.completion.chunk object field for field, in OpenAI's order, so the bytes the
// fake sends match what api.openai.com sends.

type chunk struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint *string  `json:"system_fingerprint"`
	Choices           []choice `json:"choices"`
	// Usage is null on every chunk but the last when the request asked for usage, and absent otherwise.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	Logprobs     *string `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	Reasoning        *string         `json:"reasoning,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usage struct {
	PromptTokens            int64          `json:"prompt_tokens"`
	CompletionTokens        int64          `json:"completion_tokens"`
	TotalTokens             int64          `json:"total_tokens"`
	CompletionTokensDetails *tokensDetails `json:"completion_tokens_details,omitempty"`
	Cost                    *float64       `json:"cost,omitempty"`
}

type tokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// created is a fixed timestamp so transcripts are reproducible.
const created = 1700000000

// frames lays out the whole response of one turn as SSE frames, ending with data: [DONE]. n numbers the turn, so
// ids differ between turns but not between runs.
func frames(t Turn, model string, n int, includeUsage bool) [][]byte {
	id := fmt.Sprintf("chatcmpl-fake-%d", n+1)
	var null json.RawMessage
	if includeUsage {
		null = json.RawMessage("null")
	}
	mk := func(d delta, finish *string) chunk {
		return chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []choice{{Index: 0, Delta: d, FinishReason: finish}}, Usage: null}
	}
	empty := ""
	out := [][]byte{data(mk(delta{Role: "assistant", Content: &empty}, nil))}
	if t.Reasoning != "" {
		for _, w := range strings.SplitAfter(t.Reasoning, " ") {
			d := delta{ReasoningContent: &w}
			if t.ReasoningField == "reasoning" {
				d = delta{Reasoning: &w}
			}
			out = append(out, data(mk(d, nil)))
		}
	}
	if t.Text != "" {
		for _, w := range strings.SplitAfter(t.Text, " ") {
			out = append(out, data(mk(delta{Content: &w}, nil)))
		}
	}
	if t.ErrorMessage != "" {
		// A mid-stream failure: OpenAI sends an error object in a data frame and stops.
		return append(out, frame(errorJSON(t.ErrorMessage, "server_error")))
	}
	for i, call := range t.ToolCalls {
		head := toolCallDelta{Index: i, ID: call.ID, Type: "function", Function: functionDelta{Name: call.Name}}
		if t.OmitToolCallIDs {
			head.ID = ""
		}
		out = append(out, data(mk(delta{ToolCalls: []toolCallDelta{head}}, nil)))
		for _, piece := range wirefake.SplitArgs(call.Arguments) {
			d := delta{ToolCalls: []toolCallDelta{{Index: i, Function: functionDelta{Arguments: piece}}}}
			out = append(out, data(mk(d, nil)))
		}
	}
	finish := t.FinishReason
	if finish == "" {
		finish = "stop"
		if len(t.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	out = append(out, data(mk(delta{}, &finish)))
	if includeUsage && t.Usage != nil {
		u := t.Usage
		wire := usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			TotalTokens: u.PromptTokens + u.CompletionTokens, Cost: u.Cost}
		if u.ReasoningTokens != 0 {
			wire.CompletionTokensDetails = &tokensDetails{ReasoningTokens: u.ReasoningTokens}
		}
		b, _ := json.Marshal(wire)
		out = append(out, data(chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []choice{}, Usage: b}))
	}
	return append(out, frame([]byte("[DONE]")))
}

func data(c chunk) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // OpenAI sends <, > and & as they are
	_ = enc.Encode(c)        // plain structs of strings and numbers: cannot fail
	return frame(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func frame(b []byte) []byte {
	return append(append([]byte("data: "), b...), '\n', '\n')
}
