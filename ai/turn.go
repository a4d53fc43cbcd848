package ai

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"strings"
	"sync"

	"github.com/bbc28f59/engine/ai/agui"
)

// stream asks the provider for req's stream. It is kept out of streamTurn, under whose
// frame the goroutine waits on the model, so the copies of req the call makes are not
// in that frame (see modelTurn). streamTurn bounds the reply itself ([MaxReplyBytes])
// rather than through [ModelDef.stream]'s wrapper: a token wakes a goroutine whose
// frames and state have left the processor's caches while it waited, and a layer less
// between the provider and the turn is less of that to fetch again, on every token.
//
//go:noinline
func (s *loopState) stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return s.r.agent.model.provider.Stream(ctx, *req)
}

// streamTurn calls the provider and turns its chunks into events as they arrive, and
// stores the assembled turn in into (untouched on an error): a turn returned by value
// would take room in the frames the goroutine waits on the model under.
func (s *loopState) streamTurn(ctx context.Context, stepName string, req *Request, into *turn) error {
	b := &turnBuilder{s: s, open: -1}
	defer b.textBuf.release()
	bound := s.r.agent.model.replyBound()
	for chunk, err := range s.stream(ctx, req) {
		if err != nil {
			if ctx.Err() != nil {
				b.cut(ctx)
				return ctx.Err()
			}
			if tooLarge := (*ReplyTooLargeError)(nil); errors.As(err, &tooLarge) {
				return &stopError{code: CodeReplyTooLarge, msg: err.Error()} // a provider that asks another model
			}
			return &stopError{code: CodeProviderError, msg: err.Error()}
		}
		if tooLarge := bound.add(chunk); tooLarge != nil {
			// The rest of the reply is never read: leaving the loop closes the stream.
			return &stopError{code: CodeReplyTooLarge, msg: tooLarge.Error()}
		}
		if chunk.Reasoning != nil {
			b.reason(*chunk.Reasoning)
		}
		if chunk.Text != "" {
			b.text(chunk.Text)
		}
		if chunk.ToolCall != nil {
			if err := b.toolCall(*chunk.ToolCall); err != nil {
				return err
			}
		}
		if chunk.Usage != nil {
			b.t.Usage = b.t.Usage.merge(*chunk.Usage)
		}
		if chunk.FinishReason != "" {
			b.t.Finish = chunk.FinishReason
		}
	}
	if err := ctx.Err(); err != nil {
		b.cut(ctx)
		return err
	}
	*into = b.finish()
	return nil
}

// cut ends the turn a stop cut off: the open message, reasoning or tool call gets its
// end event, so the log stays a valid AG-UI sequence, and the text so far is the run's.
// A turn cut off otherwise (the client left) is left as it was.
func (b *turnBuilder) cut(ctx context.Context) {
	if !stopped(ctx) {
		return
	}
	b.endReasoning()
	b.endText()
	b.endCall()
	if b.textBuf.n > 0 {
		b.s.text = b.textBuf.String()
	}
}

// turnBuilder assembles one streamed turn and emits its events in an order every AG-UI
// client accepts: a text segment is one message (text that resumes after a tool call is
// a new message with its own id); a tool call starts once its name is known, with the
// argument pieces that arrived before replayed after the start.
type turnBuilder struct {
	s        *loopState
	t        turn
	textBuf  textBlocks
	msgID    string // the current or last text message
	textOpen bool
	calls    []*streamedCall
	byIndex  map[int]*streamedCall
	open     int // provider index of the call being streamed, or -1
	// thinking is the turn's reasoning, when it has any.
	thinking *reasoningBuilder
}

type streamedCall struct {
	call    ToolCall
	args    strings.Builder
	started bool
	early   []string // argument pieces that arrived before the name
}

func (b *turnBuilder) text(delta string) {
	b.endReasoning()
	b.endCall()
	if !b.textOpen {
		b.msgID = b.s.ids.next()
		b.t.TextIDs++
		b.s.em.emit(agui.TextMessageStart{MessageID: b.msgID, Role: agui.RoleAssistant})
		b.textOpen = true
	}
	b.textBuf.write(delta)
	b.s.em.delta(agui.TypeTextMessageContent, b.msgID, delta)
}

func (b *turnBuilder) endText() {
	if b.textOpen {
		b.s.em.emit(agui.TextMessageEnd{MessageID: b.msgID})
		b.textOpen = false
	}
}

func (b *turnBuilder) toolCall(d ToolCallDelta) error {
	if b.byIndex == nil {
		b.byIndex = map[int]*streamedCall{}
	}
	c, ok := b.byIndex[d.Index]
	if !ok {
		b.endReasoning()
		b.endText()
		b.endCall()
		c = &streamedCall{call: ToolCall{ID: b.callID(d), Name: d.Name}}
		b.byIndex[d.Index] = c
		b.calls = append(b.calls, c)
		b.open = d.Index
	} else if b.open != d.Index {
		return &stopError{code: CodeProviderError, msg: "ai: provider interleaved tool calls"}
	}
	if c.call.Name == "" && d.Name != "" {
		c.call.Name = d.Name
	}
	if !c.started && c.call.Name != "" {
		b.start(c)
	}
	if d.ArgsDelta != "" {
		c.args.WriteString(d.ArgsDelta)
		if c.started {
			b.s.em.delta(agui.TypeToolCallArgs, c.call.ID, d.ArgsDelta)
		} else {
			c.early = append(c.early, d.ArgsDelta)
		}
	}
	return nil
}

// callID is the provider's id unless it is missing or was already used in this run
// (some servers number calls per turn): then agent:step:index, so every call of a run,
// and so every approval, has an id of its own.
func (b *turnBuilder) callID(d ToolCallDelta) string {
	s := b.s
	id := d.ID
	if id == "" || s.seen[id] {
		id = s.r.agent.name + ":" + strconv.Itoa(s.step) + ":" + strconv.Itoa(d.Index)
	}
	s.seen[id] = true
	return id
}

func (b *turnBuilder) start(c *streamedCall) {
	c.started = true
	ev := agui.ToolCallStart{ToolCallID: c.call.ID, ToolCallName: b.s.r.flowOf(c.call.Name), ParentMessageID: b.msgID}
	b.s.em.emit(ev)
	for _, piece := range c.early {
		b.s.em.delta(agui.TypeToolCallArgs, c.call.ID, piece)
	}
	c.early = nil
}

func (b *turnBuilder) endCall() {
	if b.open < 0 {
		return
	}
	c := b.byIndex[b.open]
	if !c.started {
		b.start(c) // the provider never named it; the loop halts on the unknown tool
	}
	b.s.em.emit(agui.ToolCallEnd{ToolCallID: c.call.ID})
	b.open = -1
}

func (b *turnBuilder) finish() turn {
	b.endReasoning()
	b.endText()
	b.endCall()
	b.t.Text = b.textBuf.String()
	for _, c := range b.calls {
		call := c.call
		call.Arguments = c.args.String()
		b.t.ToolCalls = append(b.t.ToolCalls, call)
	}
	return b.t
}

// textBlockSize is the size of the pooled blocks a turn's text is gathered in.
const textBlockSize = 1 << 10

var textBlockPool = sync.Pool{New: func() any { return new([textBlockSize]byte) }}

// textBlocks gathers a turn's streamed text in pooled blocks and makes one string of it
// at the end. A reply streams in pieces of a few bytes: appended to one buffer, which
// grows by about a quarter at a time past 256 bytes, a reply of 3.9 KB had allocated
// 12 KB by its end (BenchmarkTurnText), garbage that a server streaming thousands of
// replies makes its collector work for while tokens wait. Here the one allocation is the
// final string; release gives the blocks back once the turn is done with them.
type textBlocks struct {
	cur  *[textBlockSize]byte   // the block being filled, kept here so a token reaches it at once
	n    int                    // bytes written
	full []*[textBlockSize]byte // the blocks filled before cur
}

func (t *textBlocks) write(s string) {
	for len(s) > 0 {
		off := t.n % textBlockSize
		if t.cur == nil || (off == 0 && t.n > 0) {
			if t.cur != nil {
				t.full = append(t.full, t.cur)
			}
			t.cur = textBlockPool.Get().(*[textBlockSize]byte)
		}
		k := copy(t.cur[off:], s)
		t.n += k
		s = s[k:]
	}
}

// String returns the text written so far.
func (t *textBlocks) String() string {
	var b strings.Builder
	b.Grow(t.n)
	for _, blk := range t.full {
		b.Write(blk[:])
	}
	if t.cur != nil {
		b.Write(t.cur[:t.n-len(t.full)*textBlockSize])
	}
	return b.String()
}

// release gives the blocks back to the pool and empties t.
func (t *textBlocks) release() {
	for i, blk := range t.full {
		textBlockPool.Put(blk)
		t.full[i] = nil
	}
	if t.cur != nil {
		textBlockPool.Put(t.cur)
	}
	t.cur, t.full, t.n = nil, t.full[:0], 0
}
