package journal

import (
	"context"
	"errors"
	"time"
)

// CreateStream stores the record of an agent event stream. CreatedAt defaults to now.
// The follow route reads PrincipalID and Tenant for access checks.
func (j *Journal) CreateStream(ctx context.Context, s Stream) error {
	_, err := j.createStream(ctx, s)
	return err
}

// createStream is [Journal.CreateStream], returning the record as stored.
func (j *Journal) createStream(ctx context.Context, s Stream) (Stream, error) {
	s, err := j.newStream(s)
	if err != nil {
		return s, err
	}
	return s, j.d.CreateStream(ctx, s)
}

// newStream checks a stream record to be created and completes it.
func (j *Journal) newStream(s Stream) (Stream, error) {
	if s.ID == "" {
		return s, errors.New("journal: stream needs an id")
	}
	if unstorable(s.ThreadID) {
		return s, ErrUnstorableID
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = j.now()
	}
	s.FinishedAt = nil
	return s, nil
}

// GetStream loads a stream record; FinishedAt non-nil means the stream ended.
func (j *Journal) GetStream(ctx context.Context, id string) (Stream, error) {
	if unstorable(id) {
		return Stream{}, ErrNotFound
	}
	return j.d.GetStream(ctx, id)
}

// FinishStream marks the stream ended and wakes its followers.
func (j *Journal) FinishStream(ctx context.Context, id string) error {
	return j.finishStream(ctx, id, nil)
}

// finishStream ends a stream in one write, storing rows with it; run, when set, fences
// the write by its lease as [Journal.AppendEvents] does.
func (j *Journal) finishStream(ctx context.Context, streamID string, run *Run, rows ...EventRow) error {
	f, err := fenceOf(run)
	if err != nil {
		return err
	}
	now := j.now()
	// Its followers are woken at the commit, before the end is in the tail.
	ids := []string{streamID}
	j.tails.begin(ids)
	defer j.tails.end(ids)
	last, err := j.d.FinishStream(ctx, streamID, f, rows, now)
	if err != nil {
		if errors.Is(err, ErrLeaseLost) && run != nil {
			run.lose()
		}
		return err
	}
	// The stream may have been finished by another instance after rows this tail
	// lacks: the tail is trusted to be complete only if it ends at the stored last row.
	j.tails.commit(streamID, rows, last, now)
	return nil
}

// finishGrouped is finishStream with at least one row, made with the log batch's next
// commit, which puts the rows and the end in the follow tail.
func (j *Journal) finishGrouped(streamID string, run *Run, rows []EventRow) error {
	return j.grouped(run, FencedAppend{Append: Append{StreamID: streamID, Rows: rows}, Finish: j.now()})
}

// appendGrouped is appendEvents made with the log batch's next commit, which puts the
// rows in the follow tail.
func (j *Journal) appendGrouped(run *Run, a Append) error {
	return j.grouped(run, FencedAppend{Append: a})
}

// grouped stores fa, fenced by run's lease when run is set, with the log batch's next
// commit, asked for at once.
func (j *Journal) grouped(run *Run, fa FencedAppend) error {
	f, err := fenceOf(run)
	if err != nil {
		return err
	}
	fa.Fence = f
	err = j.batch.now(fa)
	if errors.Is(err, ErrLeaseLost) && run != nil {
		run.lose()
	}
	return err
}

// AppendEvents stores rows that continue the stream gap-free and clears its reservation
// (it is not for a stream a [LogWriter] writes). When the stream belongs to a durable
// run, run must be this instance's execution of it: the append is fenced by its lease.
// Most callers use a [LogWriter] instead.
func (j *Journal) AppendEvents(ctx context.Context, streamID string, run *Run, rows ...EventRow) error {
	err := j.appendEvents(ctx, run, Append{StreamID: streamID, Rows: rows})
	if err == nil {
		j.tails.add(streamID, rows, j.now())
	}
	return err
}

// appendEvents stores a, fenced by run's lease when run is set.
func (j *Journal) appendEvents(ctx context.Context, run *Run, a Append) error {
	f, err := fenceOf(run)
	if err != nil {
		return err
	}
	err = j.d.AppendEvents(ctx, f, a)
	if errors.Is(err, ErrLeaseLost) && run != nil {
		run.lose()
	}
	return err
}

// landed reports whether rows, which an attempt whose outcome was lost may have stored,
// are stored: rows are stored all or none, so the last one tells.
func (j *Journal) landed(ctx context.Context, streamID string, rows []EventRow) bool {
	if len(rows) == 0 {
		return true
	}
	last, err := j.d.LastSeq(ctx, streamID)
	return err == nil && last >= rows[len(rows)-1].Seq
}

// fenceOf is the fence of a write made under run's lease; nil for no run.
func fenceOf(run *Run) (*Fence, error) {
	if run == nil {
		return nil, nil
	}
	if run.ended() {
		return nil, ErrLeaseLost
	}
	f := run.Fence()
	return &f, nil
}

// ReadEvents returns up to limit rows with seq > after (limit <= 0 means 1000).
func (j *Journal) ReadEvents(ctx context.Context, streamID string, after int64, limit int) ([]EventRow, error) {
	if limit <= 0 {
		limit = 1000
	}
	if unstorable(streamID) {
		return nil, nil
	}
	return j.d.ReadEvents(ctx, streamID, after, limit)
}

// ReadStream loads a stream and up to limit of its rows with seq > after (limit <= 0
// means 1000) in one consistent read: a finished stream with fewer than limit rows
// returned has nothing more to read. Rows this instance committed or read recently come
// from its follow tail ([Options.TailBytes]) without a database round trip. The returned
// rows are shared: do not modify them.
func (j *Journal) ReadStream(ctx context.Context, id string, after int64, limit int) (Stream, []EventRow, error) {
	if limit <= 0 {
		limit = 1000
	}
	if unstorable(id) {
		return Stream{}, nil, ErrNotFound
	}
	if st, rows, ok := j.tails.read(id, after, limit, j.now()); ok {
		return st, rows, nil
	}
	if stored := j.tails.stored(id); stored != nil {
		// The stream's rows are being stored by this instance (the log's batch, a
		// step): the driver wakes followers at the commit, before the rows are in the
		// tail. Wait for that (bounded: the write is under way), then read the tail
		// again.
		wait := time.NewTimer(time.Second) // a database slow to commit: read it instead
		select {
		case <-stored:
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
			return Stream{}, nil, ctx.Err()
		}
		wait.Stop()
		if st, rows, ok := j.tails.read(id, after, limit, j.now()); ok {
			return st, rows, nil
		}
	}
	st, rows, err := j.d.ReadStream(ctx, id, after, limit)
	if err == nil {
		j.tails.remember(st, rows, limit, j.now())
	}
	return st, rows, err
}

// LastSeq returns the highest stored seq of the stream, 0 when empty.
func (j *Journal) LastSeq(ctx context.Context, streamID string) (int64, error) {
	if unstorable(streamID) {
		return 0, nil
	}
	return j.d.LastSeq(ctx, streamID)
}

// Subscribe returns a channel woken after new rows of the stream are committed (wake-ups
// coalesce: one signal may stand for many rows, so read until empty) and a cancel
// function. Drivers without [CapCrossProcessWakeups] only see appends made in-process.
func (j *Journal) Subscribe(streamID string) (<-chan struct{}, func()) {
	return j.d.Subscribe(streamID)
}
