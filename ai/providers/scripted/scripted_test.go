package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/scripted"
)

func i64(v int64) *int64 { return &v }

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// conversation returns a request holding n assistant turns.
func conversation(n int) ai.Request {
	req := ai.Request{Model: "script", Messages: []ai.Message{{Role: ai.RoleUser, Content: "go"}}}
	for i := range n {
		req.Messages = append(req.Messages,
			ai.Message{Role: ai.RoleAssistant, ToolCalls: []ai.ToolCall{{ID: fmt.Sprint(i), Name: "t", Arguments: "{}"}}},
			ai.Message{Role: ai.RoleTool, ToolCallID: fmt.Sprint(i), Content: "ok"})
	}
	return req
}

func TestTextIsStreamedWordByWord(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Turn{Text: "the quick  brown fox", Usage: ai.Usage{InputTokens: i64(4), OutputTokens: i64(4)}})
	var deltas []string
	var last ai.Chunk
	for c, err := range p.Stream(t.Context(), conversation(0)) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Text != "" {
			deltas = append(deltas, c.Text)
		}
		last = c
	}
	if len(deltas) != 5 || strings.Join(deltas, "") != "the quick  brown fox" {
		t.Fatalf("deltas = %q", deltas)
	}
	if last.FinishReason != "stop" || last.Usage == nil || *last.Usage.InputTokens != 4 {
		t.Fatalf("last chunk = %+v, want finish stop with usage", last)
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Turn{
		Text: "Looking.",
		ToolCalls: []ai.ToolCall{
			{ID: "call_1", Name: "search", Arguments: `{"q":"go iterators"}`},
			{Name: "noid"}, // empty id and arguments
		},
	})
	pieces := 0
	reply, err := ai.Collect(func(yield func(ai.Chunk, error) bool) {
		for c, err := range p.Stream(t.Context(), conversation(0)) {
			if c.ToolCall != nil {
				pieces++
			}
			if !yield(c, err) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ai.Reply{
		Text:         "Looking.",
		ToolCalls:    []ai.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"go iterators"}`}, {Name: "noid", Arguments: "{}"}},
		FinishReason: "tool_calls",
	}
	if show(reply) != show(want) {
		t.Fatalf("reply = %s\nwant    %s", show(reply), show(want))
	}
	if pieces != 4 {
		t.Fatalf("tool call pieces = %d, want 2 per call", pieces)
	}
}

func TestTurnChosenByAssistantMessages(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Turn{Text: "zero"}, scripted.Turn{Text: "one"}, scripted.Turn{Text: "two"})
	// Out of order and repeated: the request alone picks the turn, like a journal replay would.
	for _, n := range []int{2, 0, 1, 1, 0} {
		reply, err := ai.Collect(p.Stream(t.Context(), conversation(n)))
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"zero", "one", "two"}[n]; reply.Text != want {
			t.Fatalf("turn for %d assistant messages = %q, want %q", n, reply.Text, want)
		}
	}
	_, err := ai.Collect(p.Stream(t.Context(), conversation(3)))
	if err == nil || !strings.Contains(err.Error(), "no turn 4") {
		t.Fatalf("past the script: err = %v", err)
	}
}

func TestConcurrentConversations(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Turn{Text: "first"}, scripted.Turn{Text: "second"})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			n := i % 2
			reply, err := ai.Collect(p.Stream(context.Background(), conversation(n)))
			if err == nil && reply.Text != []string{"first", "second"}[n] {
				err = fmt.Errorf("conversation %d got %q", i, reply.Text)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestFunc(t *testing.T) {
	t.Parallel()
	p := scripted.Func(func(req ai.Request) scripted.Turn {
		return scripted.Turn{Text: "echo: " + req.Messages[len(req.Messages)-1].Content}
	})
	reply, err := ai.Collect(p.Stream(t.Context(), ai.Request{Messages: []ai.Message{{Role: ai.RoleUser, Content: "ping"}}}))
	if err != nil || reply.Text != "echo: ping" {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
	if p.Name() != "scripted" {
		t.Fatalf("Name = %q", p.Name())
	}
}

func TestTurnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("model exploded")
	p := scripted.New(scripted.Turn{Text: "partial text", Err: boom})
	reply, err := ai.Collect(p.Stream(t.Context(), conversation(0)))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the scripted error", err)
	}
	if reply.Text != "partial text" || reply.FinishReason != "" {
		t.Fatalf("partial reply = %+v", reply)
	}
}

func TestNoScript(t *testing.T) {
	t.Parallel()
	for _, p := range []*scripted.Provider{scripted.New(), nil} {
		if _, err := ai.Collect(p.Stream(t.Context(), conversation(0))); err == nil {
			t.Fatal("an empty script streamed without error")
		}
	}
}

func TestDelayHonoursCancel(t *testing.T) {
	t.Parallel()
	// An hour between chunks: only cancellation can end this stream within the test's deadline.
	p := scripted.New(scripted.Turn{Text: "never arrives", Delay: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := ai.Collect(p.Stream(ctx, conversation(0)))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream ignored cancellation")
	}
}

func TestStopEarly(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Turn{Text: "a b c d e f"})
	n := 0
	for range p.Stream(t.Context(), conversation(0)) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("chunks seen = %d", n)
	}
}

// TestReasoning checks that a turn's reasoning streams first, message by message, with
// each message's signature or redacted data whole.
func TestReasoning(t *testing.T) {
	t.Parallel()
	p := scripted.New(scripted.Turn{Reasoning: []ai.Reasoning{{Text: "first thought", Signature: "sig"}, {Redacted: "opaque"}}, Text: "ok"})
	got := map[int]*ai.Reasoning{}
	var order []string
	for c, err := range p.Stream(t.Context(), conversation(0)) {
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Reasoning; r != nil {
			if got[r.Index] == nil {
				got[r.Index] = &ai.Reasoning{}
			}
			got[r.Index].Text += r.Text
			got[r.Index].Signature += r.Signature
			got[r.Index].Redacted += r.Redacted
			order = append(order, "r")
		}
		if c.Text != "" {
			order = append(order, "t")
		}
	}
	if len(got) != 2 || show(*got[0]) != `{"text":"first thought","signature":"sig"}` || show(*got[1]) != `{"redacted":"opaque"}` {
		t.Fatalf("reasoning = %s %s", show(got[0]), show(got[1]))
	}
	if strings.Join(order, "") != "rrrrt" {
		t.Fatalf("order = %v, want the reasoning before the text", order)
	}
}
