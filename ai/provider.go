package ai

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Provider streams one model turn. It is the narrow seam between the agent loop and a model vendor, so the loop never
// imports a vendor SDK. Implementations must stop promptly and return ctx.Err() (wrapped) when ctx is done,
// cancelling the in-flight HTTP request; stopping the iteration early must also release the request.
//
// Outsiders may implement Provider: the sub-packages of ai/providers are ordinary implementations.
type Provider interface {
	// Name identifies the provider in logs and errors ("openai", "anthropic", "scripted").
	Name() string
	// Stream sends req and yields the turn as it arrives. An error ends the sequence: after a non-nil error no
	// further chunk is yielded.
	Stream(ctx context.Context, req Request) iter.Seq2[Chunk, error]
}

// Request is one model turn as the agent loop sees it: provider-neutral, so the same conversation can be replayed
// against any [Provider].
type Request struct {
	// Model is the provider's model id (for example "gpt-4o-mini"); see [ModelDef.ModelID].
	Model string
	// System is the system prompt; empty means none.
	System string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools are offered to the model; empty means the model answers in text only.
	Tools []ToolSpec
	// MaxTokens caps the output tokens of the turn; zero leaves the provider's default.
	MaxTokens int
	// Reasoning asks the model to reason and stream its reasoning ([WithReasoning]); nil
	// asks for none.
	Reasoning *ReasoningOptions
	// Output, when set, asks for a reply that is one JSON value matching a schema
	// (structured output), in the vendor's own mode. Only providers that implement
	// [NativeOutput] are given it; the others get the schema in the system prompt.
	Output *OutputFormat
}

// Role says who wrote a [Message].
type Role string

// The roles a [Message] may carry. Providers reject any other value with an error.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation. An assistant message carries the tool calls the model made; a tool
// message carries one tool result, tied to its call by ToolCallID.
type Message struct {
	Role       Role
	Content    string
	ToolCalls  []ToolCall // assistant only
	ToolCallID string     // tool only
	// Reasoning is what the model reasoned in the turn, before its text and tool calls
	// (assistant only), for providers that want it back ([Reasoning]).
	Reasoning []Reasoning
}

// ToolCall is a complete tool call made by the model.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text, as the model produced it
}

// ToolSpec offers one tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool input (an object schema); nil means the tool takes no input.
	Parameters json.RawMessage
}

// Chunk is one piece of a streamed turn. Several fields may be set at once; a chunk with every field empty carries
// nothing and may be ignored.
type Chunk struct {
	// Text is a text delta (may be empty).
	Text string
	// ToolCall is a piece of a tool call.
	ToolCall *ToolCallDelta
	// Reasoning is a piece of the model's reasoning.
	Reasoning *ReasoningDelta
	// Usage holds counts and spend when the provider reports them, usually once at the end of the turn.
	Usage *Usage
	// FinishReason is the provider's reason for ending the turn ("stop", "tool_calls", "end_turn", ...).
	FinishReason string
}

// ToolCallDelta is a piece of a tool call. Pieces of the same call share Index, which counts tool calls within the
// turn from zero. ID and Name are set when the provider sends them; ID may stay empty, in which case the agent loop
// names the call agent:step:index.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	ArgsDelta string
}

// Usage is what the provider reported about a turn. A nil field was not reported: counts are never invented.
type Usage struct {
	InputTokens  *int64
	OutputTokens *int64
	// ReasoningTokens is the part of OutputTokens the model spent reasoning, where the provider reports it.
	ReasoningTokens *int64
	// Cost is the spend the provider itself reported (some OpenAI-compatible servers send usage.cost).
	Cost *float64
}

// IsZero reports whether nothing at all was reported.
func (u Usage) IsZero() bool {
	return u.InputTokens == nil && u.OutputTokens == nil && u.ReasoningTokens == nil && u.Cost == nil
}

// merge overlays the fields reported in next onto u, so a provider that reports input and output counts in
// separate events still yields one usage.
func (u Usage) merge(next Usage) Usage {
	if next.InputTokens != nil {
		u.InputTokens = next.InputTokens
	}
	if next.OutputTokens != nil {
		u.OutputTokens = next.OutputTokens
	}
	if next.ReasoningTokens != nil {
		u.ReasoningTokens = next.ReasoningTokens
	}
	if next.Cost != nil {
		u.Cost = next.Cost
	}
	return u
}

// Reply is a whole turn drained from a stream by [Collect].
type Reply struct {
	Text         string
	ToolCalls    []ToolCall // ordered by the provider's tool call index
	Usage        Usage      // zero fields when not reported
	FinishReason string     // the last one reported
}

// Collect drains seq into a [Reply]: text deltas joined, tool calls assembled by index with their argument pieces
// concatenated, usage fields merged, and the last finish reason. It is what non-streaming callers (Ask, replays)
// need. On error it returns what had arrived so far together with the error.
func Collect(seq iter.Seq2[Chunk, error]) (Reply, error) {
	var (
		reply Reply
		text  strings.Builder
		calls = map[int]*callBuilder{}
	)
	for c, err := range seq {
		if err != nil {
			reply.Text = text.String()
			reply.ToolCalls = assemble(calls)
			return reply, err
		}
		text.WriteString(c.Text)
		if d := c.ToolCall; d != nil {
			b := calls[d.Index]
			if b == nil {
				b = &callBuilder{index: d.Index}
				calls[d.Index] = b
			}
			b.add(*d)
		}
		if c.Usage != nil {
			reply.Usage = reply.Usage.merge(*c.Usage)
		}
		if c.FinishReason != "" {
			reply.FinishReason = c.FinishReason
		}
	}
	reply.Text = text.String()
	reply.ToolCalls = assemble(calls)
	return reply, nil
}

// callBuilder accumulates the pieces of one tool call.
type callBuilder struct {
	index    int
	id, name string
	args     strings.Builder
}

func (b *callBuilder) add(d ToolCallDelta) {
	if b.id == "" {
		b.id = d.ID
	}
	if b.name == "" {
		b.name = d.Name
	}
	b.args.WriteString(d.ArgsDelta)
}

func assemble(calls map[int]*callBuilder) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	bs := make([]*callBuilder, 0, len(calls))
	for _, b := range calls {
		bs = append(bs, b)
	}
	slices.SortFunc(bs, func(a, b *callBuilder) int { return cmp.Compare(a.index, b.index) })
	out := make([]ToolCall, len(bs))
	for i, b := range bs {
		out[i] = ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()}
	}
	return out
}

// ProviderError is a failure reported by a model provider: an HTTP error status or an error event in the middle of
// a stream. It keeps the provider's own message so the agent loop can show it (RUN_ERROR.message).
type ProviderError struct {
	Provider string // the [Provider.Name]
	Status   int    // HTTP status; 0 for an error sent inside a stream
	Type     string // the provider's error type, when it sent one
	Message  string // the provider's message
	Err      error  // the SDK error, for errors.As
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "HTTP %d: ", e.Status)
	} else {
		b.WriteString("stream error: ")
	}
	if e.Type != "" {
		b.WriteString(e.Type)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

func (e *ProviderError) Unwrap() error { return e.Err }
