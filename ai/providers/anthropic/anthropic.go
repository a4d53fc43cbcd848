// Package anthropic is the [ai.Provider] for the Anthropic Messages API, built on the official SDK
// github.com/anthropics/anthropic-sdk-go.
//
// The provider reads no environment variables or credential files: base URL and key come from [Options] only.
//
// Extended thinking ([ai.WithReasoning]): [ai.ReasoningOptions.BudgetTokens] is thinking.budget_tokens (at least
// [MinThinkingBudget]); when it is zero the budget comes from Effort: "minimal" and "low" 1024, "medium" (or none)
// 4096, "high" 16384. max_tokens must exceed the budget, so a request whose limit does not is sent with the budget
// plus [DefaultMaxTokens]. Thinking blocks stream as reasoning with their signature ([ai.Reasoning.Signature]); a
// redacted_thinking block is reasoning with no text whose data is [ai.Reasoning.Redacted]. An assistant message's
// reasoning is sent back first, as its thinking and redacted_thinking blocks, unchanged, as Anthropic requires with
// the tool results of a turn that thought; reasoning without a signature (from another provider) is not sent.
// Thinking tokens are part of usage.output_tokens, which Anthropic does not break down, so
// [ai.Usage.ReasoningTokens] stays unreported.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/internal/sseline"
)

// DefaultBaseURL is Anthropic's own API, used when [Options.BaseURL] is empty.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is sent when [ai.Request.MaxTokens] is zero, because the Messages API requires a limit.
const DefaultMaxTokens = 1024

// Options configures a [Provider].
type Options struct {
	// BaseURL is the API root; empty means [DefaultBaseURL].
	BaseURL string
	// APIKey is sent as x-api-key; empty sends none (for gateways that authenticate otherwise).
	APIKey string
	// HTTPClient carries the requests; nil means a client without timeout (streams are long, and ctx bounds them).
	HTTPClient *http.Client
	// MaxRetries is how many times a request that failed before streaming (connection error, 408, 409, 429, 5xx)
	// is retried by the SDK with backoff. Zero means no retry: the caller, usually a durable flow, decides.
	MaxRetries int
	// Output is how a structured output ([ai.Request.Output]) is asked for; the default
	// is Anthropic's native mode.
	Output OutputMode
	// MaxEventBytes bounds one line of the server's response: a longer one fails the
	// reply with a provider error as soon as it passes the bound, before it is held
	// whole. Zero means 4 MiB, room for an event carrying ai.DefaultMaxReplyBytes.
	MaxEventBytes int
}

// OutputMode is how the provider asks for a structured output.
type OutputMode int

// The output modes.
const (
	// OutputNative sends the schema as output_config.format ({type: "json_schema",
	// schema}), Anthropic's structured outputs: the reply's text is the JSON value.
	OutputNative OutputMode = iota
	// OutputTool offers the schema as a tool of the format's name and makes the model
	// call it (tool_choice that tool, or "any" beside other tools): for models and
	// gateways without output_config. The call's input is yielded as the turn's text,
	// never as a tool call.
	OutputTool
	// OutputPrompt leaves the schema to ai's fallback, the system prompt.
	OutputPrompt
)

// Provider streams Messages API turns. It is safe for concurrent use.
type Provider struct {
	messages sdk.MessageService
	output   OutputMode
}

var (
	_ ai.Provider     = (*Provider)(nil)
	_ ai.NativeOutput = (*Provider)(nil)
)

// New returns a provider for the server opts names.
func New(opts Options) (*Provider, error) {
	if opts.MaxRetries < 0 {
		return nil, fmt.Errorf("anthropic: MaxRetries %d is negative", opts.MaxRetries)
	}
	if opts.MaxEventBytes < 0 {
		return nil, fmt.Errorf("anthropic: MaxEventBytes %d is negative", opts.MaxEventBytes)
	}
	if opts.Output < OutputNative || opts.Output > OutputPrompt {
		return nil, fmt.Errorf("anthropic: unknown Output mode %d", opts.Output)
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
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithHTTPClient(client),
		option.WithMaxRetries(opts.MaxRetries),
		// The middleware bounds the lines of every response. It also lets a request
		// without a key be sent: without one the SDK refuses to send unless the caller
		// authenticates some other way, which it recognises by a caller-supplied
		// middleware, and a gateway or a local server needs none.
		option.WithMiddleware(sseline.Middleware(opts.MaxEventBytes)),
	}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	c := sdk.NewClient(ro...)
	return &Provider{messages: c.Messages, output: opts.Output}, nil
}

// Name reports "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// NativeOutput reports whether structured output is asked for by the provider itself
// ([OutputNative] or [OutputTool]) rather than by ai's prompt fallback.
func (p *Provider) NativeOutput() bool { return p.output != OutputPrompt }

// Stream sends req as a streaming Messages request and yields its chunks. Cancelling ctx, or stopping the
// iteration, aborts the HTTP request.
func (p *Provider) Stream(ctx context.Context, req ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		params, err := buildParams(req, p.output)
		if err != nil {
			yield(ai.Chunk{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream := p.messages.NewStreaming(ctx, params)
		defer stream.Close()
		var t turn
		if req.Output != nil && p.output == OutputTool {
			t.outputTool = req.Output.Name
		}
		for stream.Next() {
			for _, c := range t.convert(stream.Current()) {
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
			yield(ai.Chunk{}, fmt.Errorf("anthropic: %w", err))
			return
		}
		if c, ok := t.flushUsage(); ok {
			yield(c, nil)
		}
	}
}

// turn tracks what one stream has said so far: which content blocks are tool calls and which reasoning
// (Anthropic numbers all blocks, text included; [ai.ToolCallDelta.Index] counts tool calls only, and
// [ai.ReasoningDelta.Index] reasoning only) and the usage, which arrives in two parts.
type turn struct {
	toolIndex   map[int64]int
	reasonIndex map[int64]int // thinking and redacted_thinking blocks
	usage       ai.Usage
	reported    bool
	outputTool  string         // the forced tool of [OutputTool], whose input is the answer
	outputIdx   map[int64]bool // blocks that are calls of it
}

func (t *turn) convert(ev sdk.MessageStreamEventUnion) []ai.Chunk {
	switch ev.Type {
	case "message_start":
		m := ev.AsMessageStart().Message
		if m.JSON.Usage.Valid() {
			if m.Usage.JSON.InputTokens.Valid() {
				n := m.Usage.InputTokens
				t.usage.InputTokens = &n
			}
			if m.Usage.JSON.OutputTokens.Valid() {
				n := m.Usage.OutputTokens
				t.usage.OutputTokens = &n
			}
		}
	case "content_block_start":
		e := ev.AsContentBlockStart()
		switch e.ContentBlock.Type {
		case "tool_use":
			if b := e.ContentBlock.AsToolUse(); t.outputTool != "" && b.Name == t.outputTool {
				if t.outputIdx == nil {
					t.outputIdx = map[int64]bool{}
				}
				t.outputIdx[e.Index] = true
				return nil
			}
			if t.toolIndex == nil {
				t.toolIndex = map[int64]int{}
			}
			i := len(t.toolIndex)
			t.toolIndex[e.Index] = i
			b := e.ContentBlock.AsToolUse()
			return []ai.Chunk{{ToolCall: &ai.ToolCallDelta{Index: i, ID: b.ID, Name: b.Name}}}
		case "text":
			if s := e.ContentBlock.AsText().Text; s != "" {
				return []ai.Chunk{{Text: s}}
			}
		case "thinking", "redacted_thinking":
			return t.reasoningStart(e)
		}
	case "content_block_delta":
		e := ev.AsContentBlockDelta()
		switch e.Delta.Type {
		case "text_delta":
			if s := e.Delta.AsTextDelta().Text; s != "" {
				return []ai.Chunk{{Text: s}}
			}
		case "input_json_delta":
			if t.outputIdx[e.Index] {
				if s := e.Delta.AsInputJSONDelta().PartialJSON; s != "" {
					return []ai.Chunk{{Text: s}}
				}
				return nil
			}
			i, ok := t.toolIndex[e.Index]
			if s := e.Delta.AsInputJSONDelta().PartialJSON; ok && s != "" {
				return []ai.Chunk{{ToolCall: &ai.ToolCallDelta{Index: i, ArgsDelta: s}}}
			}
		case "thinking_delta", "signature_delta":
			return t.reasoningDelta(e)
		}
	case "message_delta":
		e := ev.AsMessageDelta()
		if e.JSON.Usage.Valid() {
			// message_delta counts are cumulative for the whole message, so they replace the opening ones.
			if e.Usage.JSON.InputTokens.Valid() {
				n := e.Usage.InputTokens
				t.usage.InputTokens = &n
			}
			if e.Usage.JSON.OutputTokens.Valid() {
				n := e.Usage.OutputTokens
				t.usage.OutputTokens = &n
			}
		}
		c := ai.Chunk{FinishReason: string(e.Delta.StopReason)}
		if u, ok := t.flushUsage(); ok {
			c.Usage = u.Usage
		}
		if c.FinishReason != "" || c.Usage != nil {
			return []ai.Chunk{c}
		}
	}
	return nil
}

// flushUsage returns the usage chunk once, if anything was reported.
func (t *turn) flushUsage() (ai.Chunk, bool) {
	if t.reported || t.usage.IsZero() {
		return ai.Chunk{}, false
	}
	t.reported = true
	u := t.usage
	return ai.Chunk{Usage: &u}, true
}

// wrapErr turns SDK errors into a context error when ctx ended and into [ai.ProviderError] carrying Anthropic's
// message otherwise.
func wrapErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("anthropic: request aborted: %w", ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
		perr := &ai.ProviderError{Provider: "anthropic", Type: body.Error.Type, Message: body.Error.Message, Err: err}
		if apiErr.StatusCode >= 400 {
			perr.Status = apiErr.StatusCode // an error event inside a 200 stream keeps Status 0
		}
		if perr.Message == "" {
			perr.Message = http.StatusText(apiErr.StatusCode)
		}
		return perr
	}
	return fmt.Errorf("anthropic: %w", err)
}
