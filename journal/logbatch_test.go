package journal_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// shortBatch breaks AppendBatch's contract: it stores nothing and gives no result.
type shortBatch struct {
	journal.Driver
	calls atomic.Int64
}

func (d *shortBatch) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	d.calls.Add(1)
	return nil
}

// A batch whose driver gives fewer results than appends fails none of them for good:
// each writer's rows are stored on their own instead.
func TestABrokenBatchFallsBackToAppendsOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	d := &shortBatch{Driver: memory.New()}
	j, err := journal.New(d, journal.Options{LogPolicy: &journal.LogPolicy{
		Deltas: []journal.DeltaType{{Type: "TEXT_MESSAGE_CONTENT", Key: "messageId", Text: "delta"}}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := j.CreateLog(ctx, journal.Stream{ID: "s1"}, nil, journal.LogOptions{FlushInterval: time.Millisecond, CommitInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, json.RawMessage(`{"type":"RUN_STARTED"}`)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.calls.Load() == 0 || w.Stats().Rows == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the row was not stored: %d batches, %+v", d.calls.Load(), w.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := j.ReadEvents(ctx, "s1", 0, 10)
	if err != nil || len(rows) != 1 || rows[0].Seq != 1 {
		t.Fatalf("stored rows %v, err %v", rows, err)
	}
}
