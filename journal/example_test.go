package journal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// A durable handler that asks for approval, is resumed by the decision, and replays its
// first step instead of running it again.
func Example() {
	ctx := context.Background()
	calls := 0
	handler := func(ctx context.Context, run *journal.Run) error {
		quote, err := run.Step(ctx, "quote", func(context.Context) (json.RawMessage, error) {
			calls++
			return json.RawMessage(`{"amount":42}`), nil
		})
		if err != nil {
			return err
		}
		d, err := run.Park(ctx, "call-1", time.Time{}, quote)
		if err != nil {
			return err
		}
		if d == nil {
			return run.Suspend(ctx)
		}
		return run.Complete(ctx, json.RawMessage(fmt.Sprintf(`{"decision":%q}`, d.Kind)))
	}

	done := make(chan struct{})
	j, _ := journal.New(memory.New(), journal.Options{Owner: "example",
		Resumer: func(ctx context.Context, run *journal.Run) {
			_ = handler(ctx, run)
			close(done)
		}})
	defer j.Close(ctx) //nolint:errcheck

	run, _ := j.Begin(ctx, journal.NewRun{Flow: "refund", Input: json.RawMessage(`{}`)})
	_ = handler(ctx, run) // parks and suspends
	rec, _ := j.GetRun(ctx, run.ID)
	fmt.Println("after first execution:", rec.Status)

	_ = j.Decide(ctx, run.ID, "call-1", journal.Decision{Kind: journal.DecisionApprove})
	<-done
	rec, _ = j.GetRun(ctx, run.ID)
	fmt.Println("after approval:", rec.Status, string(rec.Output), "quote ran", calls, "time")
	// Output:
	// after first execution: parked
	// after approval: completed {"decision":"approve"} quote ran 1 time
}

// chatPolicy is the vocabulary of a chat's log: "say" events are pieces of one utterance,
// named by their "id", and "bye" ends the chat.
var chatPolicy = &journal.LogPolicy{
	Deltas: []journal.DeltaType{{Type: "say", Key: "id", Text: "text"}},
	Ends:   []string{"bye"},
	Truncated: func(maxRows int64) json.RawMessage {
		return fmt.Appendf(nil, `{"type":"cut","maxRows":%d}`, maxRows)
	},
	Expired: func(maxAge time.Duration) json.RawMessage {
		return fmt.Appendf(nil, `{"type":"bye","reason":"silent for %s"}`, maxAge)
	},
}

// A log policy gives a log's events their meaning: here pieces of one utterance are
// stored as one row, a row past the cap is dropped and marked once, and the end event
// finishes the log in the write that stores it.
func ExampleLogPolicy() {
	ctx := context.Background()
	j, _ := journal.New(memory.New(), journal.Options{LogPolicy: chatPolicy})
	defer j.Close(ctx) //nolint:errcheck
	w, _ := j.CreateLog(ctx, journal.Stream{ID: "chat-1"}, nil, journal.LogOptions{MaxRows: 3})
	_, _ = w.Write(ctx, json.RawMessage(`{"type":"hello","from":"ann"}`))
	for _, d := range []struct{ id, text string }{{"u1", "Hel"}, {"u1", "lo"}, {"u2", "Fine?"}, {"u3", "Past the cap"}} {
		_, _ = w.WriteDelta(ctx, "say", d.id, d.text)
	}
	_, _ = w.WriteEnd(ctx, "bye", json.RawMessage(`{"type":"bye"}`))

	st, rows, _ := j.ReadStream(ctx, "chat-1", 0, 10)
	for _, r := range rows {
		fmt.Println(r.Seq, string(r.Event))
	}
	fmt.Println("finished:", st.FinishedAt != nil)
	// Output:
	// 1 {"type":"hello","from":"ann"}
	// 2 {"type":"say","id":"u1","text":"Hello"}
	// 3 {"type":"say","id":"u2","text":"Fine?"}
	// 4 {"type":"cut","maxRows":3}
	// 5 {"type":"bye"}
	// finished: true
}

// A log writer hands out seqs for structural events at once and stores deltas coalesced.
func ExampleLogWriter() {
	ctx := context.Background()
	j, _ := journal.New(memory.New(), journal.Options{LogPolicy: chatPolicy})
	defer j.Close(ctx) //nolint:errcheck
	_ = j.CreateStream(ctx, journal.Stream{ID: "chat-1"})
	w, _ := j.NewLogWriter(ctx, "chat-1", nil, journal.LogOptions{})
	for _, ev := range []string{
		`{"type":"hello","from":"ann"}`,
		`{"type":"say","id":"u1","text":"Hel"}`,
		`{"type":"say","id":"u1","text":"lo"}`,
		`{"type":"bye"}`,
	} {
		seq, _ := w.Write(ctx, json.RawMessage(ev))
		fmt.Println("seq", seq)
	}
	rows, _ := j.ReadEvents(ctx, "chat-1", 0, 10)
	fmt.Println(len(rows), "rows; row 2:", string(rows[1].Event))
	// Output:
	// seq 1
	// seq 0
	// seq 0
	// seq 3
	// 3 rows; row 2: {"id":"u1","text":"Hello","type":"say"}
}
