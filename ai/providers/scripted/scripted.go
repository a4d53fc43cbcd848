// Package scripted is an [ai.Provider] that plays a script instead of calling a model. Applications drive their
// own agent tests with it, and the offline quickstart runs on it.
//
// The turn played is chosen from the request alone: by default the number of assistant messages already in the
// conversation picks the turn, so concurrent conversations, retries and journal replays all see the same script.
// [Func] hands the choice to user code instead.
package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/bbc28f59/engine/ai"
)

// Turn is one scripted model turn.
type Turn struct {
	// Reasoning is streamed first, as reasoning deltas word by word, each message with its signature (when set):
	// what a model asked for reasoning ([ai.WithReasoning]) sends.
	Reasoning []ai.Reasoning
	// Text is streamed as several deltas, word by word.
	Text string
	// ToolCalls are streamed after the text. Arguments is JSON text (empty means "{}"); an empty ID is sent as
	// empty, which exercises the agent loop's agent:step:index fallback.
	ToolCalls []ai.ToolCall
	// Usage is reported once at the end of the turn; a zero Usage reports nothing.
	Usage ai.Usage
	// FinishReason overrides the reported reason; by default "tool_calls" when the turn calls tools, else "stop".
	FinishReason string
	// Err fails the turn: it is yielded after the text and tool calls (so a partial turn can be tested).
	Err error
	// Delay paces the turn: it is waited before every chunk, honouring ctx cancellation.
	Delay time.Duration
}

// Provider plays a script. It is safe for concurrent use and keeps no state between calls.
type Provider struct {
	name  string
	turns []Turn
	fn    func(ai.Request) Turn
}

var _ ai.Provider = (*Provider)(nil)

// New returns a provider that plays turns[n] for a request holding n assistant messages. A request past the end
// of the script fails with an error naming the turn.
func New(turns ...Turn) *Provider {
	return &Provider{name: "scripted", turns: turns}
}

// Func returns a provider that plays the turn fn picks for each request. fn may be called concurrently.
func Func(fn func(req ai.Request) Turn) *Provider {
	return &Provider{name: "scripted", fn: fn}
}

// Name reports "scripted".
func (p *Provider) Name() string { return p.name }

// Stream plays the turn chosen for req.
func (p *Provider) Stream(ctx context.Context, req ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		turn, err := p.pick(&req)
		if err != nil {
			yield(ai.Chunk{}, err)
			return
		}
		for c := range chunks(turn) {
			if err := wait(ctx, turn.Delay); err != nil {
				yield(ai.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if turn.Err != nil {
			yield(ai.Chunk{}, turn.Err)
		}
	}
}

// pick is the turn to play for req, by pointer: the stream waits under its frame, which
// holding a whole Turn would make as large again.
func (p *Provider) pick(req *ai.Request) (*Turn, error) {
	if p == nil || (p.fn == nil && p.turns == nil) {
		return nil, errors.New("scripted: provider has no script")
	}
	if p.fn != nil {
		t := p.fn(*req)
		return &t, nil
	}
	n := AssistantTurns(req.Messages)
	if n >= len(p.turns) {
		return nil, fmt.Errorf("scripted: no turn %d: the script has %d turns", n+1, len(p.turns))
	}
	return &p.turns[n], nil
}

// AssistantTurns counts the assistant messages in msgs: the index of the turn a script plays next.
func AssistantTurns(msgs []ai.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == ai.RoleAssistant {
			n++
		}
	}
	return n
}

// wait sleeps d unless ctx ends first, checking ctx even when d is zero so a cancelled run stops at once.
func wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("scripted: %w", err)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("scripted: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}

// chunks lays a turn out as the stream a real provider would send: reasoning, words, then each tool call as a head
// (id and name) and its arguments in two pieces, then usage and finish reason. It yields them one at a time, so a
// long turn costs no slice of chunks.
//
// Everything but the text is laid out by helpers kept out of line, so the frame a stream
// waits under (the delay comes before every chunk) stays small.
func chunks(t *Turn) iter.Seq[ai.Chunk] {
	return func(yield func(ai.Chunk) bool) {
		if len(t.Reasoning) > 0 && !reasoningChunks(t, yield) {
			return
		}
		if t.Text != "" {
			for w := range strings.SplitAfterSeq(t.Text, " ") { // after each space: the words join back to Text
				if !yield(ai.Chunk{Text: w}) {
					return
				}
			}
		}
		if len(t.ToolCalls) > 0 && !toolCallChunks(t, yield) {
			return
		}
		if t.Err == nil {
			lastChunk(t, yield)
		}
	}
}

// reasoningChunks yields t's reasoning deltas; false means yield asked to stop.
//
//go:noinline
func reasoningChunks(t *Turn, yield func(ai.Chunk) bool) bool {
	for i, r := range t.Reasoning {
		for w := range strings.SplitAfterSeq(r.Text, " ") {
			if w != "" && !yield(ai.Chunk{Reasoning: &ai.ReasoningDelta{Index: i, Text: w}}) {
				return false
			}
		}
		if (r.Signature != "" || r.Redacted != "" || r.Text == "") &&
			!yield(ai.Chunk{Reasoning: &ai.ReasoningDelta{Index: i, Signature: r.Signature, Redacted: r.Redacted}}) {
			return false
		}
	}
	return true
}

// toolCallChunks yields each of t's tool calls as a head and its arguments in two
// pieces; false means yield asked to stop.
//
//go:noinline
func toolCallChunks(t *Turn, yield func(ai.Chunk) bool) bool {
	for i, call := range t.ToolCalls {
		args := call.Arguments
		if args == "" {
			args = "{}"
		}
		half := len(args) / 2
		if !yield(ai.Chunk{ToolCall: &ai.ToolCallDelta{Index: i, ID: call.ID, Name: call.Name, ArgsDelta: args[:half]}}) ||
			!yield(ai.Chunk{ToolCall: &ai.ToolCallDelta{Index: i, ArgsDelta: args[half:]}}) {
			return false
		}
	}
	return true
}

// lastChunk yields the turn's usage and finish reason.
//
//go:noinline
func lastChunk(t *Turn, yield func(ai.Chunk) bool) {
	last := ai.Chunk{FinishReason: t.FinishReason}
	if last.FinishReason == "" {
		last.FinishReason = "stop"
		if len(t.ToolCalls) > 0 {
			last.FinishReason = "tool_calls"
		}
	}
	if !t.Usage.IsZero() {
		u := t.Usage
		last.Usage = &u
	}
	yield(last)
}
