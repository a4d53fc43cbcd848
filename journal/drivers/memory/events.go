package memory

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// CreateStream implements journal.Driver.
func (d *Driver) CreateStream(_ context.Context, s journal.Stream) error {
	d.mu.Lock()
	if _, ok := d.streams[s.ID]; ok {
		d.mu.Unlock()
		return journal.ErrConflict
	}
	wake := d.openStream(s)
	d.mu.Unlock()
	if wake != "" {
		d.hub.Notify(wake)
	}
	return nil
}

// GetStream implements journal.Driver.
func (d *Driver) GetStream(_ context.Context, id string) (journal.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stream(id)
}

// stream copies a stream record; d.mu must be held.
func (d *Driver) stream(id string) (journal.Stream, error) {
	s, ok := d.streams[id]
	if !ok {
		return journal.Stream{}, journal.ErrNotFound
	}
	c := s.Stream
	if s.FinishedAt != nil {
		t := *s.FinishedAt
		c.FinishedAt = &t
	}
	return c, nil
}

// FinishStream implements journal.Driver.
func (d *Driver) FinishStream(_ context.Context, id string, f *journal.Fence, rows []journal.EventRow, now time.Time) (int64, error) {
	d.mu.Lock()
	var keep int64
	if st, ok := d.streams[id]; ok {
		keep = st.Reserved
	}
	s, err := d.appendLocked(f, journal.Append{StreamID: id, Rows: rows, Reserve: keep}, f != nil || len(rows) > 0)
	if err == nil && s.FinishedAt == nil {
		s.FinishedAt = &now
	}
	d.mu.Unlock()
	if err != nil {
		return 0, err
	}
	d.hub.Notify(id)
	return s.lastSeq(), nil
}

// AppendEvents implements journal.Driver.
func (d *Driver) AppendEvents(_ context.Context, f *journal.Fence, a journal.Append) error {
	d.mu.Lock()
	_, err := d.appendLocked(f, a, true)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if len(a.Rows) > 0 {
		d.hub.Notify(a.StreamID)
	}
	return nil
}

// AppendBatch implements journal.Driver: memory commits nothing, so each append is
// stored on its own.
func (d *Driver) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	return journal.AppendEach(ctx, d, batch)
}

// appendLocked stores a's rows, all or none, and its reservation, and returns the
// stream. fenced applies the lease check of a durable run's stream. d.mu must be held.
func (d *Driver) appendLocked(f *journal.Fence, a journal.Append, fenced bool) (*streamEntry, error) {
	s, ok := d.streams[a.StreamID]
	if !ok {
		return nil, journal.ErrNotFound
	}
	if fenced && s.RunID != "" {
		if f == nil || f.RunID != s.RunID {
			return nil, journal.ErrLeaseLost
		}
		if _, err := d.fenced(*f); err != nil {
			return nil, err
		}
	}
	if err := s.check(a.Rows); err != nil {
		return nil, err
	}
	s.store(a)
	return s, nil
}

// check validates rows that are to continue the stream (see [journal.Append]).
func (s *streamEntry) check(rows []journal.EventRow) error {
	if len(rows) == 0 {
		return nil
	}
	last := s.lastSeq()
	if rows[0].Seq == s.Reserved+1 && s.Reserved > last {
		last = s.Reserved
	}
	for i, r := range rows {
		want := last + int64(i) + 1
		if r.Seq < want {
			return journal.ErrSeqExists
		}
		if r.Seq > want {
			return journal.ErrSeqGap
		}
	}
	return nil
}

// store appends checked rows and sets the reservation. The rows' events are copied into
// one allocation.
func (s *streamEntry) store(a journal.Append) {
	s.Reserved = a.Reserve
	if len(a.Rows) == 0 {
		return
	}
	n := 0
	for _, r := range a.Rows {
		n += len(r.Event)
	}
	buf := make([]byte, 0, n)
	s.rows = slices.Grow(s.rows, len(a.Rows))
	for _, r := range a.Rows {
		var ev json.RawMessage
		if r.Event != nil {
			start := len(buf)
			buf = append(buf, r.Event...)
			ev = buf[start:len(buf):len(buf)]
		}
		s.rows = append(s.rows, journal.EventRow{Seq: r.Seq, Event: ev})
	}
}

// ReadEvents implements journal.Driver.
func (d *Driver) ReadEvents(_ context.Context, streamID string, after int64, limit int) ([]journal.EventRow, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readEvents(streamID, after, limit), nil
}

// ReadStream implements journal.Driver.
func (d *Driver) ReadStream(_ context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.stream(id)
	if err != nil {
		return s, nil, err
	}
	return s, d.readEvents(id, after, limit), nil
}

// readEvents copies up to limit rows after seq after; d.mu must be held.
func (d *Driver) readEvents(streamID string, after int64, limit int) []journal.EventRow {
	s, ok := d.streams[streamID]
	if !ok {
		return nil
	}
	evs := s.rows
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq > after })
	var out []journal.EventRow
	for ; i < len(evs) && len(out) < limit; i++ {
		out = append(out, journal.EventRow{Seq: evs[i].Seq, Event: clone(evs[i].Event)})
	}
	return out
}

// LastSeq implements journal.Driver.
func (d *Driver) LastSeq(_ context.Context, streamID string) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.streams[streamID]
	if !ok {
		return 0, nil
	}
	return s.lastSeq(), nil
}

// lastSeq is the seq of the stream's last row, 0 when it has none.
func (s *streamEntry) lastSeq() int64 {
	if len(s.rows) == 0 {
		return 0
	}
	return s.rows[len(s.rows)-1].Seq
}

// Subscribe implements journal.Driver.
func (d *Driver) Subscribe(streamID string) (<-chan struct{}, func()) {
	return d.hub.Subscribe(streamID)
}

// SubscribeFunc runs fn on a new goroutine after each wake-up of the topic, as Subscribe
// signals its channel, until the returned function is called.
func (d *Driver) SubscribeFunc(topic string, fn func()) func() {
	return d.hub.SubscribeFunc(topic, fn)
}

// DeleteFinishedStreams implements journal.Driver.
func (d *Driver) DeleteFinishedStreams(_ context.Context, before time.Time, limit int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for id, s := range d.streams {
		if n >= limit {
			break
		}
		if s.FinishedAt != nil && s.FinishedAt.Before(before) {
			delete(d.streams, id)
			delete(d.stops, id)
			n++
		}
	}
	return n, nil
}

// StaleStreams implements journal.Driver.
func (d *Driver) StaleStreams(_ context.Context, before time.Time, limit int) ([]journal.Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []journal.Stream
	for _, s := range d.streams {
		if s.FinishedAt == nil && s.CreatedAt.Before(before) {
			out = append(out, s.Stream)
		}
	}
	slices.SortFunc(out, func(a, b journal.Stream) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// CloseStream implements journal.Driver.
func (d *Driver) CloseStream(_ context.Context, id string, event json.RawMessage, now time.Time) error {
	d.mu.Lock()
	s, ok := d.streams[id]
	if !ok {
		d.mu.Unlock()
		return journal.ErrNotFound
	}
	s.rows = []journal.EventRow{{Seq: max(s.lastSeq(), s.Reserved) + 1, Event: clone(event)}}
	s.Reserved = 0
	if s.FinishedAt == nil {
		s.FinishedAt = &now
	}
	d.mu.Unlock()
	d.hub.Notify(id)
	return nil
}
