// Package openai is the [ai.Provider] for the OpenAI chat-completions API and every server that speaks it (vLLM,
// Ollama, llama.cpp, LiteLLM, OpenRouter, ...), built on the official SDK github.com/openai/openai-go/v3.
//
// The provider reads no environment variables: base URL and key come from [Options] only, so a key meant for
// api.openai.com is never sent to a local server by accident.
//
// Reasoning ([ai.WithReasoning]) on the chat-completions API, which this provider speaks so that every
// OpenAI-compatible server works: [ai.ReasoningOptions.Effort] is sent as reasoning_effort (BudgetTokens is not
// read). OpenAI's own servers return no reasoning text on this API (only the Responses API streams reasoning
// summaries and encrypted reasoning, and this provider does not speak it); what streams as reasoning is the text
// compatible servers add to the delta, as reasoning_content (DeepSeek, vLLM, llama.cpp) or reasoning
// (OpenRouter, Ollama, newer vLLM). Reasoning is never sent back: the API has no member for it, and DeepSeek
// refuses messages that carry it. usage.completion_tokens_details.reasoning_tokens is reported as
// [ai.Usage.ReasoningTokens].
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/internal/sseline"
)

// DefaultBaseURL is OpenAI's own API, used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Options configures a [Provider].
type Options struct {
	// BaseURL is the API root, for example "http://localhost:11434/v1"; empty means [DefaultBaseURL].
	BaseURL string
	// APIKey is sent as a bearer token; empty sends none, which local servers accept.
	APIKey string
	// HTTPClient carries the requests; nil means a client without timeout (streams are long, and ctx bounds them).
	HTTPClient *http.Client
	// MaxRetries is how many times a request that failed before streaming (connection error, 408, 409, 429, 5xx)
	// is retried by the SDK with backoff. Zero means no retry: the caller, usually a durable flow, decides.
	MaxRetries int
	// NoJSONSchema says the server lacks the JSON-schema response format (response_format
	// {type: "json_schema"}), as some compatible servers do: structured output then uses
	// ai's fallback, the schema in the system prompt (see [ai.NativeOutput]).
	NoJSONSchema bool
	// MaxEventBytes bounds one line of the server's response: a longer one fails the
	// reply with a provider error as soon as it passes the bound, before it is held
	// whole. Zero means 4 MiB, room for an event carrying ai.DefaultMaxReplyBytes.
	MaxEventBytes int
}

// Provider streams chat completions. It is safe for concurrent use.
type Provider struct {
	chat         sdk.ChatCompletionService
	noJSONSchema bool
}

var (
	_ ai.Provider     = (*Provider)(nil)
	_ ai.NativeOutput = (*Provider)(nil)
)

// New returns a provider for the server opts names.
func New(opts Options) (*Provider, error) {
	if opts.MaxRetries < 0 {
		return nil, fmt.Errorf("openai: MaxRetries %d is negative", opts.MaxRetries)
	}
	if opts.MaxEventBytes < 0 {
		return nil, fmt.Errorf("openai: MaxEventBytes %d is negative", opts.MaxEventBytes)
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	ro := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(client),
		option.WithMaxRetries(opts.MaxRetries),
		option.WithMiddleware(sseline.Middleware(opts.MaxEventBytes)),
	}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	// The service is built directly rather than through sdk.NewClient, which would merge OPENAI_* variables.
	return &Provider{chat: sdk.NewChatCompletionService(ro...), noJSONSchema: opts.NoJSONSchema}, nil
}

// Name reports "openai".
func (p *Provider) Name() string { return "openai" }

// NativeOutput reports whether structured output is sent as the JSON-schema response
// format (response_format {type: "json_schema", json_schema: {name, schema, strict}}):
// true unless [Options.NoJSONSchema].
func (p *Provider) NativeOutput() bool { return !p.noJSONSchema }

// Stream sends req as a streaming chat completion and yields its chunks. Cancelling ctx, or stopping the
// iteration, aborts the HTTP request.
func (p *Provider) Stream(ctx context.Context, req ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		params, err := buildParams(req)
		if err != nil {
			yield(ai.Chunk{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream := p.chat.NewStreaming(ctx, params)
		defer stream.Close()
		for stream.Next() {
			for _, c := range convert(stream.Current()) {
				if !yield(c, nil) {
					return
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(ai.Chunk{}, wrapErr(ctx, err))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(ai.Chunk{}, fmt.Errorf("openai: %w", err))
		}
	}
}

// convert turns one SDK chunk into provider-neutral chunks: one for reasoning, one for text, usage and finish
// reason, and one per tool-call delta (an [ai.Chunk] holds a single delta).
func convert(c sdk.ChatCompletionChunk) []ai.Chunk {
	var (
		out       []ai.Chunk
		head      ai.Chunk
		reasoning string
	)
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // n > 1 is never requested
		}
		head.Text = ch.Delta.Content
		head.FinishReason = ch.FinishReason
		reasoning = reasoningDelta(ch.Delta)
		for _, tc := range ch.Delta.ToolCalls {
			out = append(out, ai.Chunk{ToolCall: &ai.ToolCallDelta{
				Index: int(tc.Index), ID: tc.ID, Name: tc.Function.Name, ArgsDelta: tc.Function.Arguments,
			}})
		}
	}
	if c.JSON.Usage.Valid() {
		head.Usage = usageOf(c.Usage)
	}
	var lead []ai.Chunk
	if reasoning != "" { // the reasoning comes before the text it led to
		lead = append(lead, ai.Chunk{Reasoning: &ai.ReasoningDelta{Text: reasoning}})
	}
	if head.Text != "" || head.FinishReason != "" || head.Usage != nil {
		lead = append(lead, head)
	}
	return append(lead, out...)
}

// usageOf keeps only the counts the server actually sent, and reads the non-standard usage.cost some
// OpenAI-compatible servers add.
func usageOf(u sdk.CompletionUsage) *ai.Usage {
	var out ai.Usage
	if u.JSON.PromptTokens.Valid() {
		n := u.PromptTokens
		out.InputTokens = &n
	}
	if u.JSON.CompletionTokens.Valid() {
		n := u.CompletionTokens
		out.OutputTokens = &n
	}
	out.ReasoningTokens = reasoningTokens(u)
	var extra struct {
		Cost *float64 `json:"cost"`
	}
	if raw := u.RawJSON(); raw != "" && json.Unmarshal([]byte(raw), &extra) == nil {
		out.Cost = extra.Cost
	}
	if out.IsZero() {
		return nil
	}
	return &out
}

// wrapErr turns SDK errors into a context error when ctx ended (the SDK reports a cancelled read in many shapes)
// and into [ai.ProviderError] carrying the server's message otherwise.
func wrapErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("openai: request aborted: %w", ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return &ai.ProviderError{Provider: "openai", Status: apiErr.StatusCode, Type: apiErr.Type, Message: msg, Err: err}
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		msg := streamErr.Message
		if json.Unmarshal(streamErr.Event.Data, &body) == nil && body.Error.Message != "" {
			msg = body.Error.Message
		}
		return &ai.ProviderError{Provider: "openai", Type: body.Error.Type, Message: msg, Err: err}
	}
	return fmt.Errorf("openai: %w", err)
}
