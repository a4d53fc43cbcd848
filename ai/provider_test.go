package ai_test

import (
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
)

// seq yields chunks, then err when it is not nil.
func seq(err error, chunks ...ai.Chunk) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
		if err != nil {
			yield(ai.Chunk{}, err)
		}
	}
}

func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCollect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		chunks []ai.Chunk
		want   ai.Reply
	}{
		{
			name: "empty stream",
			want: ai.Reply{},
		},
		{
			name:   "text deltas joined",
			chunks: []ai.Chunk{{Text: "Hel"}, {Text: "lo, "}, {}, {Text: "world"}, {FinishReason: "stop"}},
			want:   ai.Reply{Text: "Hello, world", FinishReason: "stop"},
		},
		{
			name: "tool calls assembled by index, interleaved and out of order",
			chunks: []ai.Chunk{
				{ToolCall: &ai.ToolCallDelta{Index: 1, ID: "b", Name: "second", ArgsDelta: `{"y"`}},
				{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "a", Name: "first"}},
				{ToolCall: &ai.ToolCallDelta{Index: 0, ArgsDelta: `{"x":`}},
				{ToolCall: &ai.ToolCallDelta{Index: 1, ArgsDelta: `:2}`}},
				{ToolCall: &ai.ToolCallDelta{Index: 0, ArgsDelta: `1}`}},
				{FinishReason: "tool_calls"},
			},
			want: ai.Reply{
				ToolCalls:    []ai.ToolCall{{ID: "a", Name: "first", Arguments: `{"x":1}`}, {ID: "b", Name: "second", Arguments: `{"y":2}`}},
				FinishReason: "tool_calls",
			},
		},
		{
			name:   "missing tool call id stays empty",
			chunks: []ai.Chunk{{ToolCall: &ai.ToolCallDelta{Index: 0, Name: "f", ArgsDelta: "{}"}}},
			want:   ai.Reply{ToolCalls: []ai.ToolCall{{Name: "f", Arguments: "{}"}}},
		},
		{
			name: "usage merged field by field",
			chunks: []ai.Chunk{
				{Usage: &ai.Usage{InputTokens: i64(10), OutputTokens: i64(1)}},
				{Text: "x"},
				{Usage: &ai.Usage{OutputTokens: i64(7), Cost: f64(0.5)}},
			},
			want: ai.Reply{Text: "x", Usage: ai.Usage{InputTokens: i64(10), OutputTokens: i64(7), Cost: f64(0.5)}},
		},
		{
			name:   "last finish reason wins",
			chunks: []ai.Chunk{{FinishReason: "length"}, {FinishReason: "stop"}},
			want:   ai.Reply{FinishReason: "stop"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ai.Collect(seq(nil, tt.chunks...))
			if err != nil {
				t.Fatal(err)
			}
			if show(got) != show(tt.want) {
				t.Fatalf("Collect = %s\nwant      %s", show(got), show(tt.want))
			}
		})
	}
}

func TestCollectKeepsPartialReplyOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	got, err := ai.Collect(seq(boom,
		ai.Chunk{Text: "half "},
		ai.Chunk{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "a", Name: "f", ArgsDelta: `{"q"`}},
	))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if got.Text != "half " || len(got.ToolCalls) != 1 || got.ToolCalls[0].Arguments != `{"q"` {
		t.Fatalf("partial reply = %+v", got)
	}
}

func TestProviderErrorMessage(t *testing.T) {
	t.Parallel()
	cause := errors.New("sdk error")
	tests := []struct {
		err  *ai.ProviderError
		want string
	}{
		{&ai.ProviderError{Provider: "openai", Status: 429, Type: "rate_limit_exceeded", Message: "slow down", Err: cause},
			"openai: HTTP 429: rate_limit_exceeded: slow down"},
		{&ai.ProviderError{Provider: "anthropic", Message: "Overloaded", Err: cause},
			"anthropic: stream error: Overloaded"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, cause) {
			t.Errorf("%q does not unwrap to its cause", tt.err)
		}
		if !strings.Contains(tt.err.Error(), tt.err.Message) {
			t.Errorf("%q lacks the provider's message", tt.err)
		}
	}
}
