package ai

import (
	"context"
	"fmt"
	"iter"
)

// DefaultMaxReplyBytes is how many bytes one reply of a model may hold unless
// [MaxReplyBytes] says otherwise: 1 MiB, several times the longest reply today's models
// produce in one turn (their output limits are tens of thousands of tokens).
const DefaultMaxReplyBytes = 1 << 20

// MaxReplyBytes bounds one reply of the model: the bytes of its text, its reasoning and
// its tool calls (ids, names and arguments) together, as they stream in. A reply that
// passes the bound ends there: the model call is closed and the rest never read, so a
// run's memory, its stored log and its recorded output stay within the bound. An agent
// run then ends with RUN_ERROR code ReplyTooLarge ([CodeReplyTooLarge]) after the
// events of what arrived before; [Ask], [AskAs] and [StreamText] return a
// [*ReplyTooLargeError]. Without this option the bound is [DefaultMaxReplyBytes]; it
// cannot be turned off.
func MaxReplyBytes(n int64) ModelOption {
	return func(m *ModelDef) { m.maxReply = n }
}

// ReplyTooLargeError is the error of a model call whose reply passed the model's
// [MaxReplyBytes].
type ReplyTooLargeError struct {
	Model string // the model's name
	Limit int64  // the bound it passed, in bytes
}

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("ai: the reply of model %s passed %d bytes, the most it may hold (ai.MaxReplyBytes)", e.Model, e.Limit)
}

// replyLimit is the model's bound on the bytes of one reply.
func (m *ModelDef) replyLimit() int64 {
	if m.maxReply > 0 {
		return m.maxReply
	}
	return DefaultMaxReplyBytes
}

// stream asks the provider for a reply and passes its chunks on until the reply passes
// [MaxReplyBytes]: then it yields a [*ReplyTooLargeError] instead of the chunk that
// passed the bound, and stops reading, which closes the provider's stream.
func (m *ModelDef) stream(ctx context.Context, req Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		bound := m.replyBound()
		for c, err := range m.provider.Stream(ctx, req) {
			if err == nil {
				if tooLarge := bound.add(c); tooLarge != nil {
					yield(Chunk{}, tooLarge)
					return
				}
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// replyBound counts the bytes of one reply against its model's [MaxReplyBytes]: the
// one count behind [ModelDef.stream] and an agent's turn.
type replyBound struct {
	model    string
	limit, n int64
}

func (m *ModelDef) replyBound() replyBound {
	return replyBound{model: m.name, limit: m.replyLimit()}
}

// add counts c and returns the error that ends the reply once it has passed the bound.
func (b *replyBound) add(c Chunk) *ReplyTooLargeError {
	if b.n += c.size(); b.n > b.limit {
		return &ReplyTooLargeError{Model: b.model, Limit: b.limit}
	}
	return nil
}

// size is the bytes of reply the chunk carries, counted against [MaxReplyBytes].
func (c Chunk) size() int64 {
	n := len(c.Text)
	if d := c.ToolCall; d != nil {
		n += len(d.ID) + len(d.Name) + len(d.ArgsDelta)
	}
	if d := c.Reasoning; d != nil {
		n += len(d.Text) + len(d.Signature) + len(d.Redacted)
	}
	return int64(n)
}
