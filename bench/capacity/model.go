package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/bbc28f59/engine/ai"
)

// Pace is a conversation's script, sent as the user's message: how many tokens the
// model's answer has and at what pace they come. The [Model] reads it from the
// conversation and keeps to it, so the load client and the server agree on every token's
// scheduled time without sharing a clock reading.
type Pace struct {
	// Tokens is the number of tokens of the final answer.
	Tokens int `json:"tokens"`
	// Rate is the model's pace in tokens per second.
	Rate float64 `json:"rate"`
	// Jitter spreads each gap between tokens uniformly over (1 ± Jitter) × 1/Rate, so the
	// mean pace stays Rate. 0 is a steady pace; at most 1.
	Jitter float64 `json:"jitter,omitempty"`
	// FirstToken is the model's wait before its first token (time to first token), in
	// milliseconds. An idle stream is one whose FirstToken is longer than the test.
	FirstToken float64 `json:"firstTokenMs,omitempty"`
	// Tool makes the model first answer a short preamble ([Pace.Preamble] tokens) and call
	// the tool [ToolName]; the final answer follows the tool's result. On a durable flow
	// the tool needs an approval, so the run parks until the client approves it.
	Tool bool `json:"tool,omitempty"`
	// Seed draws the jitter; the same seed gives the same gaps.
	Seed uint64 `json:"seed,omitempty"`
}

// Preamble is the number of tokens the model says before a tool call: a tenth of the
// answer, at least one.
func (p Pace) Preamble() int { return max(1, p.Tokens/10) }

// TotalTokens is the number of tokens a conversation of p streams, over all its turns.
func (p Pace) TotalTokens() int {
	if p.Tool {
		return p.Preamble() + p.Tokens
	}
	return p.Tokens
}

func (p Pace) validate() error {
	if p.Tokens <= 0 || p.Rate <= 0 || p.Jitter < 0 || p.Jitter > 1 || p.FirstToken < 0 {
		return fmt.Errorf("capacity: bad pace %+v: tokens and rate must be positive, jitter within [0, 1], first token not negative", p)
	}
	return nil
}

// schedule yields the scheduled times of n tokens of one turn that starts at start: the
// first after FirstToken, each next one a jittered gap later. turn keeps a preamble's
// gaps apart from the answer's.
func (p Pace) schedule(start time.Time, n int, turn uint64) iter.Seq[time.Time] {
	return func(yield func(time.Time) bool) {
		rng := rand.New(rand.NewPCG(p.Seed, turn))
		gap := float64(time.Second) / p.Rate
		at := start.Add(time.Duration(p.FirstToken * float64(time.Millisecond)))
		for range n {
			if !yield(at) {
				return
			}
			at = at.Add(time.Duration(gap * (1 + p.Jitter*(2*rng.Float64()-1))))
		}
	}
}

// ToolName is the tool the [Model] calls when a conversation's [Pace] asks for one.
const ToolName = "capacity_lookup"

// A token is the word "t" and its scheduled time in Unix microseconds, base 36,
// followed by a space: about the size of a real token's text in a delta. A client reads
// each token's schedule from the text it received, so a delta that carries several
// tokens (a coalesced row read back by a follower) is measured token by token.
func appendToken(dst []byte, at time.Time) []byte {
	dst = append(dst, 't')
	dst = strconv.AppendInt(dst, at.UnixMicro(), 36)
	return append(dst, ' ')
}

// tokenTimes calls fn with the scheduled time of every token in text and returns how
// many there were; a word that is not a token is an error.
func tokenTimes(text string, fn func(at int64)) (int, error) {
	n := 0
	for w := range strings.FieldsSeq(text) {
		us, err := strconv.ParseInt(strings.TrimPrefix(w, "t"), 36, 64)
		if err != nil || w[0] != 't' {
			return n, fmt.Errorf("capacity: %q is not a scheduled token (the stream's model is not the capacity model; use -schedule pace)", w)
		}
		fn(us)
		n++
	}
	return n, nil
}

// Model is the model of the capacity benchmark: an [ai.Provider] that reads the
// conversation's [Pace] from its first user message and streams tokens at that pace.
// Every token is emitted at its scheduled time, counted from when the turn's request
// reached the model; a server that falls behind emits the late tokens at once, as a real
// provider's tokens would wait in the socket, so its lateness reaches the client.
//
// An app of your own can run its agent on it (ai.Model("capacity", capacity.NewModel(),
// "paced")) and be measured with token delays read from the tokens themselves.
type Model struct{}

// NewModel returns the paced model.
func NewModel() *Model { return &Model{} }

var _ ai.Provider = (*Model)(nil)

// Name reports "capacity".
func (*Model) Name() string { return "capacity" }

// Stream plays one turn of the conversation's pace: with a tool asked for and no tool
// result yet, the preamble and the tool call; otherwise the answer.
func (*Model) Stream(ctx context.Context, req ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		start := time.Now()
		p, err := paceOf(req.Messages)
		if err != nil {
			yield(ai.Chunk{}, err)
			return
		}
		answered := false
		for _, m := range req.Messages {
			answered = answered || m.Role == ai.RoleTool
		}
		callTool := p.Tool && !answered
		n, turn := p.Tokens, uint64(1)
		if callTool {
			n, turn = p.Preamble(), 0
		}
		var text []byte
		for at := range p.schedule(start, n, turn) {
			if err := sleepUntil(ctx, at); err != nil {
				yield(ai.Chunk{}, err)
				return
			}
			text = appendToken(text[:0], at)
			if !yield(ai.Chunk{Text: string(text)}, nil) {
				return
			}
		}
		if callTool {
			if !yield(ai.Chunk{ToolCall: &ai.ToolCallDelta{ID: "call_1", Name: ToolName, ArgsDelta: `{"query":"capacity"}`}}, nil) {
				return
			}
			yield(ai.Chunk{FinishReason: "tool_calls"}, nil)
			return
		}
		yield(ai.Chunk{FinishReason: "stop"}, nil)
	}
}

// paceOf reads the pace from the first user message.
func paceOf(msgs []ai.Message) (Pace, error) {
	for _, m := range msgs {
		if m.Role != ai.RoleUser {
			continue
		}
		var p Pace
		if err := json.Unmarshal([]byte(m.Content), &p); err != nil {
			return Pace{}, fmt.Errorf("capacity model: the first user message is not a pace (%w): %.80q", err, m.Content)
		}
		return p, p.validate()
	}
	return Pace{}, errors.New("capacity model: the conversation has no user message")
}

// sleepUntil waits until at unless ctx ends first; a time already past returns at once.
func sleepUntil(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
