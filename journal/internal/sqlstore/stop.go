package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// migrateStops creates the table of stop requests: one row per stream whose stop was
// requested.
func (s *Store) migrateStops(ctx context.Context) error {
	_, err := s.db.DB.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.stops+` (stream_id TEXT PRIMARY KEY,
		requested_at BIGINT NOT NULL)`)
	return err
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
