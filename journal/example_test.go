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

// A log writer coalesces deltas into one row and hands out seqs for structural events.
func ExampleLogWriter() {
	ctx := context.Background()
	j, _ := journal.New(memory.New(), journal.Options{})
	defer j.Close(ctx) //nolint:errcheck
	_ = j.CreateStream(ctx, journal.Stream{ID: "agent-run-1"})
	w, _ := j.NewLogWriter(ctx, "agent-run-1", nil, journal.LogOptions{})
	for _, ev := range []string{
		`{"type":"RUN_STARTED","threadId":"t","runId":"agent-run-1"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"Hel"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"lo"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"agent-run-1"}`,
	} {
		seq, _ := w.Write(ctx, json.RawMessage(ev))
		fmt.Println("seq", seq)
	}
	rows, _ := j.ReadEvents(ctx, "agent-run-1", 0, 10)
	fmt.Println(len(rows), "rows; row 2:", string(rows[1].Event))
	// Output:
	// seq 1
	// seq 0
	// seq 0
	// seq 3
	// 3 rows; row 2: {"delta":"Hello","messageId":"m-1","type":"TEXT_MESSAGE_CONTENT"}
}
