package ai_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/journal"
)

// An oversized model reply, streamed by either wire fake as the real providers read it:
// as text, or as a tool call's arguments. The run ends with RUN_ERROR ReplyTooLarge once
// the reply passes the model's MaxReplyBytes; the client saw no more text than the bound;
// the stored log, the durable run's record and the model requests stay within it.
func TestAnOversizedReplyEndsTheRun(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	big := strings.Repeat("words ", 40<<10) // 240 KiB
	for _, kind := range providerKinds {
		for name, tn := range map[string]turn{
			"text":      {Text: big},
			"reasoning": {Reasoning: big},
			"tool call": {Text: "Let me look.", Calls: []call{{ID: "c1", Name: "weather", Args: `{"city":"` + strings.Repeat("x", 240<<10) + `"}`}}},
		} {
			t.Run(kind+"/"+name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, turns: []turn{tn}, modelOpts: []ai.ModelOption{ai.MaxReplyBytes(limit)}})
				tr := w.stream(t, "/chat", chatBody(t, ChatIn{Message: "talk"}))
				re := tr.runError(t)
				eq(t, "code", re.Code, ai.CodeReplyTooLarge)
				if !strings.Contains(re.Message, "16384 bytes") {
					t.Errorf("message %q does not name the bound", re.Message)
				}
				if types := tr.types(); types[len(types)-1] != string(agui.TypeRunError) {
					t.Errorf("the stream does not end with RUN_ERROR: %v", types[max(0, len(types)-5):])
				}
				var got int
				for _, ev := range tr.events() {
					switch e := ev.(type) {
					case agui.TextMessageContent:
						got += len(e.Delta)
					case agui.ReasoningMessageContent:
						got += len(e.Delta)
					case agui.ToolCallArgs:
						got += len(e.Delta)
					case agui.RunFinished:
						t.Fatalf("RUN_FINISHED after an oversized reply: %+v", e)
					}
				}
				if got > limit || got < limit/2 {
					t.Errorf("the client saw %d bytes of reply, want what arrived within the %d-byte bound", got, limit)
				}
				if n := w.count("weather"); n != 0 {
					t.Errorf("the cut tool call ran %d times", n)
				}
				ctx := context.Background()
				runID := tr.started(t).RunID
				rows, err := w.journal.ReadEvents(ctx, runID, 0, 10000)
				if err != nil {
					t.Fatal(err)
				}
				stored := 0
				for _, r := range rows {
					stored += len(r.Event)
				}
				if stored > 4*limit {
					t.Errorf("the log stores %d bytes in %d rows for a %d-byte bound", stored, len(rows), limit)
				}
				st, err := w.journal.GetStream(ctx, runID)
				if err != nil {
					t.Fatal(err)
				}
				rec, err := w.journal.GetRun(ctx, st.RunID)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Status != journal.StatusFailed || len(rec.Output) > limit {
					t.Errorf("the durable run: %s with %d bytes of output", rec.Status, len(rec.Output))
				}
			})
		}
	}
}

// Without MaxReplyBytes the bound is DefaultMaxReplyBytes; ai.Ask and ai.StreamText meet
// it as *ai.ReplyTooLargeError, the text stream ending without [DONE] (each piece of
// text is a frame of its own: the frames hold a few times the text).
func TestTheDefaultReplyBound(t *testing.T) {
	t.Parallel()
	// Words of 4 KiB: the fakes send a word a chunk, and the bound is on bytes, not chunks
	// (a reply of short words is 180,000 chunks, minutes under -race on a busy machine).
	big := strings.Repeat(strings.Repeat("x", 4095)+" ", ai.DefaultMaxReplyBytes/4096+4)
	w := newWorld(t, setup{turns: []turn{{Text: big}, {Text: big}}})
	if status, body := w.post(t, "/chat/prompt", `{"message":"summarise"}`); status < 400 {
		t.Errorf("ai.Ask of an oversized reply: %d %.200s", status, body)
	}
	w.mu.Lock()
	errs := append([]error(nil), w.askErrs...)
	w.mu.Unlock()
	var tooLarge *ai.ReplyTooLargeError
	if len(errs) != 1 || !errors.As(errs[0], &tooLarge) || tooLarge.Limit != ai.DefaultMaxReplyBytes || tooLarge.Model != "default" {
		t.Fatalf("ai.Ask errors %v, want one *ai.ReplyTooLargeError of the default bound", errs)
	}
	_, raw := w.post(t, "/chat/text", `{"message":"a poem"}`)
	if strings.Contains(raw, "[DONE]") || len(raw) > 4*ai.DefaultMaxReplyBytes {
		t.Errorf("the text stream of an oversized reply: %d bytes, [DONE] %v", len(raw), strings.Contains(raw, "[DONE]"))
	}
}

// A negative bound is a declaration mistake.
func TestMaxReplyBytesMustNotBeNegative(t *testing.T) {
	t.Parallel()
	p, _ := startModel(t, "openai", nil)
	err := ai.Model("m", p, "id", ai.MaxReplyBytes(-1)).Validate()
	if err == nil || !strings.Contains(err.Error(), "MaxReplyBytes must not be negative") {
		t.Fatalf("Validate: %v", err)
	}
}

// tooLargeProvider says a few words and then fails as a provider that asks another
// model (ai.Ask) fails when that model's reply passes its bound.
type tooLargeProvider struct{}

func (tooLargeProvider) Name() string { return "asks-another" }

func (tooLargeProvider) Stream(context.Context, ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		if yield(ai.Chunk{Text: "Let me ask. "}, nil) {
			yield(ai.Chunk{}, fmt.Errorf("asking the expert: %w", &ai.ReplyTooLargeError{Model: "expert", Limit: 4096}))
		}
	}
}

// TestAProvidersOwnOversizedReplyEndsTheRunAsOne checks that a provider whose own call
// to another model passed that model's bound ends the run with code ReplyTooLarge, not
// as a provider failure, though the turn's own bound was not reached.
func TestAProvidersOwnOversizedReplyEndsTheRunAsOne(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{provider: tooLargeProvider{}})
	tr := w.stream(t, "/chat", chatBody(t, ChatIn{Message: "talk"}))
	re := tr.runError(t)
	eq(t, "code", re.Code, ai.CodeReplyTooLarge)
	if !strings.Contains(re.Message, "expert") || !strings.Contains(re.Message, "4096 bytes") {
		t.Errorf("message %q does not name the expert's bound", re.Message)
	}
}
