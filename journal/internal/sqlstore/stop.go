package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// migrateStops creates the tables of run control: stop requests (one row per stream whose
// stop was requested) and the runs of each conversation thread, in order.
func (s *Store) migrateStops(ctx context.Context) error {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS ` + s.stops + ` (stream_id TEXT PRIMARY KEY, requested_at BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + s.threads + ` (thread_id TEXT NOT NULL, pos BIGINT NOT NULL, stream_id TEXT NOT NULL,
			created_at BIGINT NOT NULL, PRIMARY KEY (thread_id, pos))`,
		`CREATE UNIQUE INDEX IF NOT EXISTS ` + s.threads + `_stream_idx ON ` + s.threads + ` (thread_id, stream_id)`,
	} {
		if _, err := s.db.DB.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// RequestStop implements journal.Driver in one transaction. Rows are locked in the order
// the other writes take them: the run (as Decide does), then the stream, then the parks.
func (s *Store) RequestStop(ctx context.Context, streamID string, now time.Time) (journal.DecideResult, error) {
	var res journal.DecideResult
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		var runID string
		err := tx.QueryRowContext(ctx, `SELECT run_id FROM `+s.streams+` WHERE id = ?`, streamID).Scan(&runID)
		if errors.Is(err, sql.ErrNoRows) {
			return journal.ErrNotFound
		}
		if err != nil {
			return err
		}
		var status string
		if runID != "" {
			err := tx.QueryRowContext(ctx, `SELECT status FROM `+s.runs+` WHERE id = ?`+s.dia.LockUpdate, runID).Scan(&status)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		var finished sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT finished_at FROM `+s.streams+` WHERE id = ?`+s.dia.LockUpdate, streamID).Scan(&finished); err != nil {
			return err
		}
		if finished.Valid {
			return journal.ErrRunFinished
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.stops+` (stream_id, requested_at) VALUES (?, ?)
			ON CONFLICT (stream_id) DO NOTHING`, streamID, ns(now)); err != nil {
			return err
		}
		if status == "" {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.parks+` SET decision_kind = ?, decided_at = ?
			WHERE run_id = ? AND decision_kind = ''`, string(journal.DecisionCancel), ns(now), runID); err != nil {
			return err
		}
		res.Runnable = status == string(journal.StatusParked)
		return nil
	})
	if err != nil {
		return journal.DecideResult{}, err
	}
	s.notify(ctx, journal.StopTopic(streamID))
	return res, nil
}

// StopRequested implements journal.Driver.
func (s *Store) StopRequested(ctx context.Context, streamID string) (time.Time, error) {
	var at int64
	err := s.queryRow(ctx, `SELECT requested_at FROM `+s.stops+` WHERE stream_id = ?`, streamID).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return tm(at), nil
}

// AddThreadRun implements journal.Driver in one transaction, the thread's wake-up going
// out with the commit.
func (s *Store) AddThreadRun(ctx context.Context, threadID, streamID string, now time.Time) (int64, error) {
	var pos int64
	err := s.txWaking(ctx, func(ctx context.Context, tx *txq) ([]string, error) {
		var added bool
		var err error
		if pos, added, err = s.addThreadRun(ctx, tx, threadID, streamID, now); err != nil || !added {
			return nil, err
		}
		return []string{journal.ThreadTopic(threadID)}, nil
	})
	return pos, err
}

// threadTries bounds addThreadRun's attempts: each lost one means another run of the
// same thread took the position at the same moment, which a conversation's runs, one
// after the other, hardly ever do.
const threadTries = 16

// addThreadRun records the stream as the thread's next run inside tx unless it is one
// already, and returns its position. The insert computes the next position and returns
// it; one that inserts nothing met either the stream's own row (its position is read
// back) or a concurrent run that took the position first (it runs again, and sees that
// run's row).
func (s *Store) addThreadRun(ctx context.Context, tx *txq, threadID, streamID string, now time.Time) (pos int64, added bool, err error) {
	for range threadTries {
		err = tx.QueryRowContext(ctx, `INSERT INTO `+s.threads+` (thread_id, pos, stream_id, created_at)
			SELECT ?, COALESCE(MAX(pos), 0) + 1, ?, ? FROM `+s.threads+` WHERE thread_id = ?
			ON CONFLICT DO NOTHING RETURNING pos`, threadID, streamID, ns(now), threadID).Scan(&pos)
		if err == nil {
			return pos, true, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return 0, false, err
		}
		err = tx.QueryRowContext(ctx, `SELECT pos FROM `+s.threads+` WHERE thread_id = ? AND stream_id = ?`, threadID, streamID).Scan(&pos)
		if !errors.Is(err, sql.ErrNoRows) {
			return pos, false, err
		}
	}
	return 0, false, fmt.Errorf("journal: thread %s: another run took each next position %d times", threadID, threadTries)
}

// ThreadRuns implements journal.Driver.
func (s *Store) ThreadRuns(ctx context.Context, threadID string, after int64, limit int) ([]journal.ThreadRun, error) {
	rows, err := s.query(ctx, `SELECT pos, stream_id, created_at FROM `+s.threads+` WHERE thread_id = ? AND pos > ? ORDER BY pos LIMIT ?`,
		threadID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.ThreadRun
	for rows.Next() {
		var r journal.ThreadRun
		var ca int64
		if err := rows.Scan(&r.Pos, &r.StreamID, &ca); err != nil {
			return nil, err
		}
		r.CreatedAt = tm(ca)
		out = append(out, r)
	}
	return out, rows.Err()
}
