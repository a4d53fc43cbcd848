package ai

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/bbc28f59/engine/ai/agui"

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
// With from=now (and no Last-Event-ID) the follower joins where the thread is: a run
// in progress is joined mid-run ([joinThread]), and a finished thread is followed from
// its next run.
//
// Access: the thread's owner (the principal who started its first run) or an operator;
// anyone else gets NotFound. Each run is also checked as following it is
// ([serveFollow]): a run the caller may not follow ends the stream where it begins.
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
	if _, err := mayReadThread(ctx, app, p, threadID, threadScan); err != nil {
		engine.WriteError(fx, w, r, err)
		return
	}
	pos, after := last>>threadIDBits, last&(1<<threadIDBits-1)
	if pos == 0 {
		pos = 1
	}
	cfg := configOf(app)
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{Heartbeat: cfg.Heartbeat})
	defer sse.Close()
	if last == 0 && r.URL.Query().Get("from") == "now" {
		if pos, after, err = joinThread(ctx, app, p, sse, threadID); err != nil {
			return
		}
	}
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
		if !relayLog(ctx, sse, j, cfg.FollowPoll, st, rows, after, nil, func(seq int64) int64 { return ThreadEventID(at, seq) }) {
			return
		}
		pos, after = at+1, 0
	}
}

// joinThread starts a from=now follower where the thread is, and returns the position
// and seq the follow goes on after. When the thread's latest run is in progress the
// follower joins it mid-run with a valid AG-UI sequence: the run's RUN_STARTED, then
// STATE_SNAPSHOT (where the run has state) and MESSAGES_SNAPSHOT with the thread's
// conversation built from what the log holds so far, then the rows of the messages,
// tool calls, reasoning and steps still open, as they were logged, and everything
// after. MESSAGES_SNAPSHOT carries the id of the last row it holds, so a resume after
// it goes on with the next row. A latest run that has ended is not sent: the follow
// waits for the next run.
func joinThread(ctx context.Context, app *engine.App, p *engine.Principal, sse *httpx.SSEWriter, threadID string) (pos, after int64, err error) {
	j := durable.JournalOf(app)
	runs, err := j.ThreadRuns(ctx, threadID, 0, threadScan)
	if err != nil || len(runs) == 0 {
		return 1, 0, err
	}
	var c convo
	for _, run := range runs[:len(runs)-1] {
		if err := c.addRun(ctx, app, p, run.StreamID); err != nil {
			return 0, 0, err
		}
	}
	latest := runs[len(runs)-1]
	rows, st, err := readLog(ctx, j, latest.StreamID)
	if err != nil || st.FinishedAt != nil {
		// Ended (or removed by retention): follow from the next run.
		return latest.Pos + 1, 0, nil
	}
	if mayFollow(ctx, app, p, st, true, errHidden) != nil {
		// Not the caller's to see: the follow's own check ends the stream there.
		return latest.Pos, 0, nil
	}
	start, cut, closed := joinPoint(rows)
	if start < 0 {
		// Not started yet: follow it from its beginning.
		return latest.Pos, 0, nil
	}
	if closed {
		// Parked at an interrupt: its last segment is a whole AG-UI run.
		return latest.Pos, rows[start].Seq - 1, nil
	}
	c.add(ctx, j, st, rows[:cut])
	id := func(seq int64) int64 { return ThreadEventID(latest.Pos, seq) }
	if err := sse.WriteEvent(id(rows[start].Seq), rows[start].Event); err != nil {
		return 0, 0, err
	}
	// Only the last snapshot carries an id (ids increase): a resume after it goes on with
	// the row after those it holds.
	at := id(rows[cut-1].Seq)
	if cut-1 == start {
		at = 0
	}
	if len(c.state) > 0 && !c.stateLost {
		if err := sse.WriteEventFunc(0, func(dst []byte) []byte {
			out, _ := agui.AppendJSON(dst, agui.StateSnapshot{Snapshot: c.state})
			return out
		}); err != nil {
			return 0, 0, err
		}
	}
	if err := sse.WriteEventFunc(at, func(dst []byte) []byte {
		out, _ := agui.AppendJSON(dst, agui.MessagesSnapshot{Messages: c.msgs})
		return out
	}); err != nil {
		return 0, 0, err
	}
	return latest.Pos, rows[cut-1].Seq, nil
}

// joinPoint finds in a run's rows the index of its last RUN_STARTED (start, -1 when
// there is none), whether that segment has ended (closed), and where a mid-run follower
// starts relaying rows as they were logged (cut): at the first row that opens a text
// message, tool call, reasoning block or step still open at the end, or after the last
// row when none is. Everything between start and cut goes into the snapshots.
func joinPoint(rows []journal.EventRow) (start, cut int, closed bool) {
	start = -1
	open := map[string]int{}
	for i, row := range rows {
		ev, err := agui.Decode(row.Event)
		if err != nil {
			continue
		}
		switch e := ev.(type) {
		case agui.RunStarted:
			start, closed = i, false
			clear(open)
		case agui.RunFinished, agui.RunError:
			closed = true
		case agui.StepStarted:
			open["s:"+e.StepName] = i
		case agui.StepFinished:
			delete(open, "s:"+e.StepName)
		case agui.TextMessageStart:
			open["t:"+e.MessageID] = i
		case agui.TextMessageEnd:
			delete(open, "t:"+e.MessageID)
		case agui.ToolCallStart:
			open["c:"+e.ToolCallID] = i
		case agui.ToolCallEnd:
			delete(open, "c:"+e.ToolCallID)
		case agui.ReasoningStart:
			open["r:"+e.MessageID] = i
		case agui.ReasoningEnd:
			delete(open, "r:"+e.MessageID)
		}
	}
	cut = len(rows)
	for _, i := range open {
		cut = min(cut, i)
	}
	return start, max(cut, start+1), closed
}
