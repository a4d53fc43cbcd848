package ai

import (
	"errors"
	"net/http"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/journal"
)

// ThreadFollowPath is the thread follow route's trigger.
const ThreadFollowPath = "/agent/threads/:threadId/events"

// threadIDBits is how many low bits of a thread stream's event id hold the seq within
// its run; the bits above hold the run's position in the thread. Ids stay below 2^53, so
// JavaScript clients read them exactly.
const threadIDBits = 32

// ThreadEventID is the SSE id of the event seq of the thread's run at position pos on
// the thread follow route; Last-Event-ID takes it back.
func ThreadEventID(pos, seq int64) int64 { return pos<<threadIDBits | seq }

// serveThread serves GET /agent/threads/:threadId/events: every run of the thread in
// order, stored and later ones, started on any instance, as one AG-UI stream (each run
// from its RUN_STARTED to its end), resuming after Last-Event-ID ([ThreadEventID]). It
// waits for runs that have not started yet, so a page may follow a thread before its
// first run, and stays open until the client leaves.
//
// Access: following each run's ([serveFollow]). A run the caller may not follow ends the
// stream where it begins.
func serveThread(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	app, ctx, p := fx.App(), r.Context(), fx.Principal()
	last, err := lastEventID(r)
	if err != nil {
		engine.WriteError(fx, w, r, err)
		return
	}
	j := durable.JournalOf(app)
	if j == nil {
		engine.WriteError(fx, w, r, engine.NotFound("no thread %s", r.PathValue("threadId")))
		return
	}
	threadID := r.PathValue("threadId")
	pos, after := last>>threadIDBits, last&(1<<threadIDBits-1)
	if pos == 0 {
		pos = 1
	}
	cfg := configOf(app)
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{Heartbeat: cfg.Heartbeat})
	defer sse.Close()
	wake, unsubscribe := j.Subscribe(journal.ThreadTopic(threadID))
	defer unsubscribe()
	poll := time.NewTimer(cfg.FollowPoll)
	defer poll.Stop()
	for {
		runs, err := j.ThreadRuns(ctx, threadID, pos-1, 1)
		if err != nil {
			return
		}
		if len(runs) == 0 {
			// Not started yet: wait for the thread's next run.
			poll.Reset(cfg.FollowPoll)
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-poll.C:
			}
			continue
		}
		at := runs[0].Pos
		st, rows, err := readFollowable(ctx, app, p, runs[0].StreamID, after)
		if err != nil {
			if _, gone := j.GetStream(ctx, runs[0].StreamID); errors.Is(gone, journal.ErrNotFound) {
				// Retention removed this run's log: the thread goes on with its next run.
				pos, after = at+1, 0
				continue
			}
			return
		}
		if !relayLog(ctx, sse, j, cfg.FollowPoll, st, rows, after, func(seq int64) int64 { return ThreadEventID(at, seq) }) {
			return
		}
		pos, after = at+1, 0
	}
}
