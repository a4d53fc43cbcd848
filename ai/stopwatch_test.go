package ai_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/journal"
)

// stopReads counts the reads of the stop state that reach the driver, and passes the
// driver's call-back subscriptions through (what journal.SubscribeStopFunc looks for).
type stopReads struct {
	journal.Driver
	reads atomic.Int64
}

func (d *stopReads) StopRequested(ctx context.Context, streamID string) (time.Time, error) {
	d.reads.Add(1)
	return d.Driver.StopRequested(ctx, streamID)
}

func (d *stopReads) SubscribeFunc(topic string, fn func()) func() {
	return d.Driver.(interface {
		SubscribeFunc(string, func()) func()
	}).SubscribeFunc(topic, fn)
}

// TestNewRunReadsNoStopState: a new run, plain or durable, watches for a stop from
// before its log's stream exists, so it never reads the stop state (a transaction of
// its own on Postgres); a stop asked of it still ends it (TestStopRunningRun and the
// journaltest Stop cases).
func TestNewRunReadsNoStopState(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/desk/chat", "/desk/plain"} {
		t.Run(strings.TrimPrefix(path, "/desk/"), func(t *testing.T) {
			t.Parallel()
			drv := &stopReads{Driver: apSQLiteDriver(t)}
			e := newApEnv(t, apConfig{driver: drv, turns: []openaitest.Turn{{Text: "one two three"}, {Text: "four five"}}})
			for range 2 {
				raw, _ := e.chat(t, path, apAlice, "hi")
				if !strings.Contains(string(raw), "RUN_FINISHED") {
					t.Fatalf("the run did not finish: %s", raw)
				}
			}
			if n := drv.reads.Load(); n != 0 {
				t.Fatalf("two new runs read the stop state %d times, want 0", n)
			}
		})
	}
}
