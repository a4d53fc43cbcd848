package journal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
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

// committing reports memory as storage whose writes are commits, and counts the batches
// that create or end streams and the creations and ends in them.
type committing struct {
	journal.Driver
	batches, items atomic.Int64
}

func (d *committing) Capabilities() journal.Capability {
	return d.Driver.Capabilities() | journal.CapDurable
}

func (d *committing) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	n := 0
	for _, a := range batch {
		if a.Open != nil || !a.Finish.IsZero() {
			n++
		}
	}
	if n > 0 {
		d.batches.Add(1)
		d.items.Add(int64(n))
	}
	return d.Driver.AppendBatch(ctx, batch)
}

// On a journal whose writes are commits, conversations that start and end one after
// another while many streams are live share commits: each start or end waits for the
// gap after the batch's last commit instead of committing on its own at once.
func TestStartsAndEndsShareCommitsWhileManyStreamsAreLive(t *testing.T) {
	ctx := context.Background()
	d := &committing{Driver: memory.New()}
	j, err := journal.New(d, journal.Options{LogPolicy: &journal.LogPolicy{Ends: []string{"RUN_FINISHED"}}})
	if err != nil {
		t.Fatal(err)
	}
	quiet := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour}
	var wg sync.WaitGroup
	for i := range 500 { // 500 live streams: a gap of 10 ms
		wg.Go(func() {
			if _, err := j.CreateLog(ctx, journal.Stream{ID: fmt.Sprintf("live-%d", i)}, nil, quiet); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	d.batches.Store(0)
	d.items.Store(0)
	const conversations = 100
	errs := make(chan error, conversations)
	for i := range conversations {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 2 * time.Millisecond) // one starts every 2 ms
			w, err := j.CreateLog(ctx, journal.Stream{ID: fmt.Sprintf("c-%d", i)}, nil, quiet)
			if err == nil {
				_, err = w.WriteEnd(ctx, "RUN_FINISHED", json.RawMessage(`{"type":"RUN_FINISHED"}`))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	batches, items := d.batches.Load(), d.items.Load()
	t.Logf("%d starts and ends in %d commits", items, batches)
	if items != 2*conversations || batches*2 > items {
		t.Fatalf("%d starts and ends in %d commits: want all %d, at least two a commit", items, batches, 2*conversations)
	}
}
