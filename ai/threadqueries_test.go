package ai_test

import (
	"context"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
)

// readCounter counts the event reads that reach the driver and bring rows back: a read
// that finds nothing new (a follower woken before the next commit, more often on a loaded
// machine) carries no event, so it is not an event read from the database.
type readCounter struct {
	journal.Driver
	reads atomic.Int64
	// streamReads counts every ReadStream, with rows or without.
	streamReads atomic.Int64
}

func (d *readCounter) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	d.streamReads.Add(1)
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

// followLiveRun starts a long reply on an app over SQLite and follows its run with follow
// on the instance that runs it, to RUN_FINISHED. It returns the events followed and the
// driver reads during the follow: those that brought rows, and all of them.
func followLiveRun(t *testing.T, follow func(ctx context.Context, c *clientx.Client, runID string) iter.Seq2[agent.Frame, error]) (events int, withRows, all int64) {
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
	beforeRows, beforeAll := drv.reads.Load(), drv.streamReads.Load()
	for f, err := range follow(ctx, e.client(t, apAlice), runID) {
		if err != nil {
			t.Fatal(err)
		}
		events++
		if _, ok := f.Event.(agui.RunFinished); ok {
			break
		}
	}
	if events < 10 {
		t.Fatalf("only %d events followed", events)
	}
	return events, drv.reads.Load() - beforeRows, drv.streamReads.Load() - beforeAll
}

// TestThreadFollowReadsFromMemory: a thread follower on the instance that runs the run
// gets the run's rows from the journal's in-process tail, not from the database (at most
// the catch-up read when it joins); it reports the driver reads per followed event.
func TestThreadFollowReadsFromMemory(t *testing.T) {
	t.Parallel()
	events, reads, _ := followLiveRun(t, func(ctx context.Context, c *clientx.Client, runID string) iter.Seq2[agent.Frame, error] {
		return agent.FollowThread(ctx, c, runID, agent.FollowOptions{})
	})
	t.Logf("thread follower on the running instance: %d driver reads with rows for %d events (%.3f per event)", reads, events, float64(reads)/float64(events))
	if reads > 2 {
		t.Fatalf("%d driver reads while following: the rows of the running instance's run must come from its tail", reads)
	}
}

// TestFollowOfALiveRunAsksTheDatabaseNothing: a run follower on the instance whose log
// writer holds the run's stream is answered from the tail, up-to-date reads included (the
// read after it subscribes, a wake-up with nothing new), so following a live run costs
// the database no read at all.
func TestFollowOfALiveRunAsksTheDatabaseNothing(t *testing.T) {
	t.Parallel()
	events, _, reads := followLiveRun(t, func(ctx context.Context, c *clientx.Client, runID string) iter.Seq2[agent.Frame, error] {
		return agent.Follow(ctx, c, runID, agent.FollowOptions{})
	})
	t.Logf("run follower on the running instance: %d driver reads for %d events", reads, events)
	if reads != 0 {
		t.Fatalf("%d driver reads while following a run this instance writes, want 0", reads)
	}
}
