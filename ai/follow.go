package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/journal"
)

// serveFollow serves GET /agent/runs/:runId/events: the run's stored events as
// server-sent events, each with id: <seq>, resuming after Last-Event-ID (or the
// lastEventId query parameter, for clients that cannot set headers) with no gap and no
// duplicate, across the hand-over from stored to live rows. It stays open through an
// approval interrupt and ends when the run's stream is finished and every row was sent.
//
// Access: the caller must pass the gates of the flow that started the run, be in its
// tenant, and be the starting principal or an operator. A caller without credentials gets
// 401 Unauthorized; any other caller who may not follow gets 404 NotFound, the same as
// for a run that does not exist, so another tenant's run ids reveal nothing
// ([durable.MayRead]).
// followBatch is how many rows a follower reads at a time.
const followBatch = 500

func serveFollow(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	app, ctx, p := fx.App(), r.Context(), fx.Principal()
	after, afterErr := lastEventID(r)
	j := durable.JournalOf(app)
	// Subscribed before the first read (an in-process registration), the follower is
	// woken by every commit after that read, so it needs no second read to catch rows
	// committed meanwhile: a follower of a run that waits (an approval's resume) asks the
	// database once before its next rows.
	var wake <-chan struct{}
	if j != nil {
		var unsubscribe func()
		wake, unsubscribe = j.Subscribe(r.PathValue("runId"))
		defer unsubscribe()
	}
	// One statement reads the stream record for the access check and the first batch of
	// rows: a resume costs one database round trip before its first frame. A refused
	// caller's rows are dropped unseen.
	st, rows, err := readFollowable(ctx, app, p, r.PathValue("runId"), after)
	if err == nil {
		err = afterErr
	}
	if err != nil {
		engine.WriteError(fx, w, r, err)
		return
	}
	cfg := configOf(app)
	// With stored rows in hand, the headers go out with the first frame: one write.
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{Heartbeat: cfg.Heartbeat, HoldHeaders: len(rows) > 0})
	defer sse.Close()
	relayLog(ctx, sse, j, cfg.FollowPoll, st, rows, after, wake, func(seq int64) int64 { return seq })
}

// relayLog writes the rows of the stream st from rows on (read after seq after), then
// every row stored later, as SSE frames with the ids id(seq), until the stream is
// finished and every row was sent (true) or the client, the database or retention ends
// the relay (false). wake, when not nil, is a subscription to the stream made before
// rows were read; otherwise relayLog subscribes once it needs to wait.
func relayLog(ctx context.Context, sse *httpx.SSEWriter, j *journal.Journal, pollEvery time.Duration, st journal.Stream, rows []journal.EventRow, after int64, wake <-chan struct{}, id func(seq int64) int64) bool {
	var (
		unsubscribe = func() {}
		poll        *time.Timer
		err         error
	)
	defer func() { unsubscribe() }()
	for {
		for _, row := range rows {
			if err := sse.WriteEvent(id(row.Seq), row.Event); err != nil {
				return false
			}
			after = row.Seq
		}
		if len(rows) < followBatch {
			switch {
			case st.FinishedAt != nil:
				// The read that saw the mark saw every row committed before it.
				return true
			case wake == nil:
				// Subscribe after the first read, so the first frame does not wait for a
				// listener; the read that follows catches rows appended meanwhile.
				wake, unsubscribe = j.Subscribe(st.ID)
			default:
				if poll == nil {
					poll = time.NewTimer(pollEvery)
					defer poll.Stop()
				} else {
					poll.Reset(pollEvery)
				}
				select {
				case <-ctx.Done():
					return false
				case <-wake:
				case <-poll.C:
				}
			}
		}
		if st, rows, err = j.ReadStream(ctx, st.ID, after, followBatch); err != nil {
			return false // the client is gone, or the database, or retention removed the run; the client resumes by id
		}
	}
}

// readFollowable reads a stream and its first rows after after, and applies the follow
// route's access rules to it.
func readFollowable(ctx context.Context, app *engine.App, p *engine.Principal, id string, after int64) (journal.Stream, []journal.EventRow, error) {
	j := durable.JournalOf(app)
	if j == nil {
		return journal.Stream{}, nil, engine.NotFound("no run %s", id)
	}
	st, rows, err := j.ReadStream(ctx, id, after, followBatch)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		// The database, not the run: a 404 would tell a follower to stop, a 500 to retry.
		return journal.Stream{}, nil, fmt.Errorf("ai: reading run %s: %w", id, err)
	}
	if err := mayFollow(ctx, app, p, st, err == nil, engine.NotFound("no run %s", id)); err != nil {
		return journal.Stream{}, nil, err
	}
	return st, rows, nil
}

// mayFollow applies the follow route's access rules to the stream st (found is false
// when there is no such stream): those of reading its durable run ([durable.MayRead]).
// Every refusal but Unauthorized (sign in first) is notFound.
func mayFollow(ctx context.Context, app *engine.App, p *engine.Principal, st journal.Stream, found bool, notFound error) error {
	var owner *durable.Owner
	if found {
		owner = &durable.Owner{Flow: st.Flow, Tenant: st.Tenant, PrincipalID: st.PrincipalID}
	}
	input := func() json.RawMessage {
		if st.RunID == "" {
			return nil
		}
		if rec, err := durable.JournalOf(app).GetRun(ctx, st.RunID); err == nil {
			return rec.Input
		}
		return nil
	}
	err := durable.MayRead(ctx, app, p, st.ID, owner, input)
	if e := engine.AsError(err); e != nil && e.Code == engine.CodeNotFound {
		return notFound
	}
	return err
}

// lastEventID reads where to resume: the Last-Event-ID header, else the lastEventId
// query parameter; 0 (from the start) when neither is given.
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("lastEventId")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, engine.Invalid(engine.ValidationIssue{Path: "Last-Event-ID", Message: "expected a non-negative integer seq, got " + strconv.Quote(v)})
	}
	return n, nil
}
