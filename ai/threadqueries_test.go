package ai_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
)

// readCounter counts the event reads that reach the driver and bring rows back: a read
// that finds nothing new (a follower woken before the next commit, more often on a loaded
// machine) carries no event, so it is not an event read from the database.
type readCounter struct {
	journal.Driver
	reads atomic.Int64
}

func (d *readCounter) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	st, rows, err := d.Driver.ReadStream(ctx, id, after, limit)
	if len(rows) > 0 {
		d.reads.Add(1)
	}
	return st, rows, err
}

func (d *readCounter) ReadEvents(ctx context.Context, id string, after int64, limit int) ([]journal.EventRow, error) {
	rows, err := d.Driver.ReadEvents(ctx, id, after, limit)
	if len(rows) > 0 {
		d.reads.Add(1)
	}
	return rows, err
}

// TestThreadFollowReadsFromMemory: a thread follower on the instance that runs the run
// gets the run's rows from the journal's in-process tail, not from the database (at most
// the catch-up read when it joins); it reports the driver reads per followed event.
func TestThreadFollowReadsFromMemory(t *testing.T) {
	t.Parallel()
	drv := &readCounter{Driver: apSQLiteDriver(t)} // the memory journal keeps no tail: its reads are in memory
	e := newApEnv(t, apConfig{driver: drv, turns: []openaitest.Turn{{Text: strings.Repeat("word ", 300), Delay: 2 * time.Millisecond}}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res := e.openChat(t, ctx, "talk")
	var runID string
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.Event.(agui.RunStarted); ok {
			runID = s.RunID
			break
		}
	}
	before := drv.reads.Load()
	events := 0
	for f, err := range agent.FollowThread(ctx, e.client(t, apAlice), runID, agent.FollowOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		events++
		if _, ok := f.Event.(agui.RunFinished); ok {
			break
		}
	}
	reads := drv.reads.Load() - before
	t.Logf("thread follower on the running instance: %d driver reads with rows for %d events (%.3f per event)", reads, events, float64(reads)/float64(events))
	if events < 10 {
		t.Fatalf("only %d events followed", events)
	}
	if reads > 2 {
		t.Fatalf("%d driver reads while following: the rows of the running instance's run must come from its tail", reads)
	}
}
