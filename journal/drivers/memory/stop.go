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
