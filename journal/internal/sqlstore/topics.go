package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// topicRow is a topic's version and value as a park's write reads them.
type topicRow struct {
	Version int64
	value   sql.NullString
}

// lockTopic makes sure topic has a row and reads it under a share lock, so a
// concurrent SetSignal or Publish (which updates the row) commits either before this
// read, which then sees its version, or after this transaction, when its update of the
// parks sees the park this transaction stores: a wait never misses a value.
func (s *Store) lockTopic(ctx context.Context, tx *txq, topic string) (topicRow, error) {
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.topics+` (topic, version, value, updated_at) VALUES (?, 0, NULL, 0)
		ON CONFLICT (topic) DO NOTHING`, topic); err != nil {
		return topicRow{}, err
	}
	var r topicRow
	err := tx.QueryRowContext(ctx, `SELECT version, value FROM `+s.topics+` WHERE topic = ?`+s.dia.LockShare, topic).Scan(&r.Version, &r.value)
	return r, err
}

// approveWaiters approves the pending parks on topic below version and returns the runs
// that became runnable.
//
// The runs of those parks are read under a share lock before their parks are decided. A
// run that is suspending writes its parked status (an update of its row) and then reads
// its parks: with the lock, that update commits either before the read here, which then
// sees the run parked and returns it as runnable, or after this transaction, when the
// suspending run's read of its parks sees the decision and resumes itself. Without it
// both reads could come before the other's commit and the run would stay parked with
// every park decided. Runs are locked before parks, in id order, as Decide does.
func (s *Store) approveWaiters(ctx context.Context, tx *txq, topic string, version int64, payload json.RawMessage, now time.Time) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, status FROM `+s.runs+` WHERE id IN (SELECT run_id FROM `+s.parks+`
		WHERE topic = ? AND decision_kind = '' AND after_version < ?) ORDER BY id`+s.dia.LockShare, topic, version)
	if err != nil {
		return nil, err
	}
	parked := map[string]bool{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			_ = rows.Close()
			return nil, err
		}
		parked[id] = status == string(journal.StatusParked)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(parked) == 0 {
		return nil, nil
	}
	rows, err = tx.QueryContext(ctx, `UPDATE `+s.parks+` SET decision_kind = ?, decision_payload = ?, decided_at = ?, decision_trace = ?
		WHERE topic = ? AND decision_kind = '' AND after_version < ? RETURNING run_id`,
		string(journal.DecisionApprove), js(payload), ns(now), journal.TraceContextOf(ctx), topic, version)
	if err != nil {
		return nil, err
	}
	var decided []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, err
		}
		if parked[id] {
			decided = append(decided, id)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if len(decided) == 0 {
		return nil, nil
	}
	// One query for a thousand decided runs: those with a park still pending stay parked.
	pending := map[string]bool{}
	for batch := range slices.Chunk(decided, 1000) {
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT run_id FROM `+s.parks+` WHERE decision_kind = '' AND run_id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close()
				return nil, err
			}
			pending[id] = true
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	var runnable []string
	for _, id := range decided {
		if !pending[id] {
			runnable = append(runnable, id)
		}
	}
	return runnable, nil
}

// SetSignal implements journal.Driver.
func (s *Store) SetSignal(ctx context.Context, topic string, value json.RawMessage, once bool, now time.Time) (journal.TopicValue, []string, error) {
	out := journal.TopicValue{Topic: topic, Value: value, UpdatedAt: now}
	var runnable []string
	cond := ""
	if once {
		cond = ` WHERE ` + s.topics + `.version = 0`
	}
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO `+s.topics+` (topic, version, value, updated_at) VALUES (?, 1, ?, ?)
			ON CONFLICT (topic) DO UPDATE SET version = `+s.topics+`.version + 1, value = excluded.value,
			updated_at = excluded.updated_at`+cond+` RETURNING version`, topic, js(value), ns(now)).Scan(&out.Version)
		if errors.Is(err, sql.ErrNoRows) {
			return journal.ErrConflict
		}
		if err != nil {
			return err
		}
		if runnable, err = s.approveWaiters(ctx, tx, topic, out.Version, value, now); err != nil {
			return err
		}
		return s.wakeIn(ctx, tx, topic)
	})
	if err != nil {
		return journal.TopicValue{}, nil, err
	}
	s.woken(ctx, topic)
	return out, runnable, nil
}

// GetSignal implements journal.Driver.
func (s *Store) GetSignal(ctx context.Context, topic string) (journal.TopicValue, error) {
	out := journal.TopicValue{Topic: topic}
	var v sql.NullString
	var at int64
	err := s.queryRow(ctx, `SELECT version, value, updated_at FROM `+s.topics+` WHERE topic = ? AND version > 0`, topic).Scan(&out.Version, &v, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return out, journal.ErrNotFound
	}
	out.Value, out.UpdatedAt = raw(v), tm(at)
	return out, err
}

// Publish implements journal.Driver. The topic row's update holds its lock until the
// commit, so concurrent publishes to one channel take consecutive seqs in commit order.
func (s *Store) Publish(ctx context.Context, topic string, payload json.RawMessage, now time.Time) (int64, []string, error) {
	var seq int64
	var runnable []string
	if payload == nil {
		payload = json.RawMessage("null")
	}
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO `+s.topics+` (topic, version, value, updated_at) VALUES (?, 1, NULL, ?)
			ON CONFLICT (topic) DO UPDATE SET version = `+s.topics+`.version + 1, updated_at = excluded.updated_at
			RETURNING version`, topic, ns(now)).Scan(&seq)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.messages+` (topic, seq, payload, created_at) VALUES (?,?,?,?)`,
			topic, seq, string(payload), ns(now)); err != nil {
			return err
		}
		if runnable, err = s.approveWaiters(ctx, tx, topic, seq, nil, now); err != nil {
			return err
		}
		return s.wakeIn(ctx, tx, topic)
	})
	if err != nil {
		return 0, nil, err
	}
	s.woken(ctx, topic)
	return seq, runnable, nil
}

// ReadMessages implements journal.Driver.
func (s *Store) ReadMessages(ctx context.Context, topic string, after int64, limit int) ([]journal.Message, error) {
	rows, err := s.query(ctx, `SELECT seq, payload, created_at FROM `+s.messages+` WHERE topic = ? AND seq > ? ORDER BY seq LIMIT ?`,
		topic, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.Message
	for rows.Next() {
		var m journal.Message
		var p string
		var at int64
		if err := rows.Scan(&m.Seq, &p, &at); err != nil {
			return nil, err
		}
		m.Payload, m.CreatedAt = json.RawMessage(p), tm(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// DeleteMessages implements journal.Driver.
func (s *Store) DeleteMessages(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.exec(ctx, `DELETE FROM `+s.messages+` WHERE (topic, seq) IN
		(SELECT topic, seq FROM `+s.messages+` WHERE created_at < ? ORDER BY created_at LIMIT ?)`, ns(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
