package memory

import (
	"context"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// RequestStop implements journal.Driver.
func (d *Driver) RequestStop(_ context.Context, streamID string, now time.Time) (journal.DecideResult, error) {
	d.mu.Lock()
	s, ok := d.streams[streamID]
	if !ok {
		d.mu.Unlock()
		return journal.DecideResult{}, journal.ErrNotFound
	}
	if s.FinishedAt != nil {
		d.mu.Unlock()
		return journal.DecideResult{}, journal.ErrRunFinished
	}
	if _, done := d.stops[streamID]; !done {
		d.stops[streamID] = now
	}
	var res journal.DecideResult
	if e, ok := d.runs[s.RunID]; ok && s.RunID != "" {
		for _, p := range e.parks {
			if p.Decision == nil {
				p.Decision = &journal.Decision{Kind: journal.DecisionCancel, DecidedAt: now}
				if p.Topic != "" {
					d.unwait(p.Topic, e)
				}
			}
		}
		res.Runnable = e.runnable()
	}
	d.mu.Unlock()
	d.hub.Notify(journal.StopTopic(streamID))
	return res, nil
}

// StopRequested implements journal.Driver.
func (d *Driver) StopRequested(_ context.Context, streamID string) (time.Time, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stops[streamID], nil
}

// AddThreadRun implements journal.Driver.
func (d *Driver) AddThreadRun(_ context.Context, threadID, streamID string, now time.Time) (int64, error) {
	d.mu.Lock()
	pos, added := d.addThreadRun(threadID, streamID, now)
	d.mu.Unlock()
	if added {
		d.hub.Notify(journal.ThreadTopic(threadID))
	}
	return pos, nil
}

// addThreadRun records the stream as the thread's next run unless it is one already,
// and returns its position; d.mu must be held.
func (d *Driver) addThreadRun(threadID, streamID string, now time.Time) (pos int64, added bool) {
	runs := d.threads[threadID]
	for _, r := range runs {
		if r.StreamID == streamID {
			return r.Pos, false
		}
	}
	pos = int64(len(runs)) + 1
	d.threads[threadID] = append(runs, journal.ThreadRun{Pos: pos, StreamID: streamID, CreatedAt: now})
	return pos, true
}

// openStream stores a new stream's record, and its thread's run when it names a thread
// ([journal.Stream.ThreadID]); it returns the thread's wake-up topic to notify after
// d.mu is released, or "". d.mu must be held.
func (d *Driver) openStream(s journal.Stream) (wake string) {
	if s.ThreadID != "" {
		if _, added := d.addThreadRun(s.ThreadID, s.ID, s.CreatedAt); added {
			wake = journal.ThreadTopic(s.ThreadID)
		}
		s.ThreadID = ""
	}
	d.streams[s.ID] = &streamEntry{Stream: s}
	return wake
}

// ThreadRuns implements journal.Driver.
func (d *Driver) ThreadRuns(_ context.Context, threadID string, after int64, limit int) ([]journal.ThreadRun, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	runs := d.threads[threadID]
	var out []journal.ThreadRun
	for i := max(after, 0); i < int64(len(runs)) && len(out) < limit; i++ {
		out = append(out, runs[i])
	}
	return out, nil
}
