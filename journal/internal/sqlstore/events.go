package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// appendChunk bounds the rows of one INSERT statement.
const appendChunk = 200

// notify wakes in-process subscribers and runs the dialect's after-commit hook: for a
// write made outside a transaction of the store's.
func (s *Store) notify(ctx context.Context, streamID string) {
	s.hub.Notify(streamID)
	if s.dia.AfterCommit != nil {
		s.dia.AfterCommit(context.WithoutCancel(ctx), streamID)
	}
}

// wakeIn queues, inside tx, the notifications that wake other processes' subscribers of
// ids when tx commits (one statement on Postgres, which sends them at the commit, so the
// write costs no transaction of its own for them). [Store.woken] must follow the commit.
func (s *Store) wakeIn(ctx context.Context, tx *txq, ids ...string) error {
	if s.dia.NotifyBatch == nil || len(ids) == 0 {
		return nil
	}
	return s.dia.NotifyBatch(ctx, tx, ids)
}

// woken wakes the in-process subscribers of ids after a commit whose transaction queued
// the other processes' notifications (wakeIn); where the dialect cannot queue them, it
// runs notify.
func (s *Store) woken(ctx context.Context, ids ...string) {
	for _, id := range ids {
		if s.dia.NotifyBatch != nil {
			s.hub.Notify(id)
		} else {
			s.notify(ctx, id)
		}
	}
}

// CreateStream implements journal.Driver: one statement, or one transaction with the
// thread's run when the stream names a thread.
func (s *Store) CreateStream(ctx context.Context, st journal.Stream) error {
	if st.ThreadID == "" {
		return s.createStream(ctx, s, st)
	}
	return s.txWaking(ctx, func(ctx context.Context, tx *txq) ([]string, error) {
		return s.openStream(ctx, tx, st, nil)
	})
}

// txWaking runs fn in a transaction ([Store.tx]) and wakes the subscribers of the ids fn
// returns at its commit ([Store.wakeIn], [Store.woken]).
func (s *Store) txWaking(ctx context.Context, fn func(ctx context.Context, tx *txq) ([]string, error)) error {
	var wake []string
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		var err error
		if wake, err = fn(ctx, tx); err != nil {
			return err
		}
		return s.wakeIn(ctx, tx, wake...)
	})
	if err != nil {
		return err
	}
	s.woken(ctx, wake...)
	return nil
}

// openStream creates a stream inside tx and, when it names a thread, records it as the
// thread's next run; it returns wake with the thread's topic added when the run was
// recorded, for the commit to wake.
func (s *Store) openStream(ctx context.Context, tx *txq, st journal.Stream, wake []string) ([]string, error) {
	if err := s.createStream(ctx, tx, st); err != nil {
		return wake, err
	}
	if st.ThreadID == "" {
		return wake, nil
	}
	_, added, err := s.addThreadRun(ctx, tx, st.ThreadID, st.ID, st.CreatedAt)
	if added {
		wake = append(wake, journal.ThreadTopic(st.ThreadID))
	}
	return wake, err
}

// createStream inserts a stream record through ex, the store or a transaction.
func (s *Store) createStream(ctx context.Context, ex execer, st journal.Stream) error {
	res, err := ex.ExecContext(ctx, `INSERT INTO `+s.streams+` (id, run_id, flow, principal_id, tenant, created_at, reserved) VALUES (?,?,?,?,?,?,?)
		ON CONFLICT (id) DO NOTHING`, st.ID, st.RunID, st.Flow, st.PrincipalID, st.Tenant, ns(st.CreatedAt), st.Reserved)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return journal.ErrConflict
	}
	return nil
}

const streamCols = `id, run_id, flow, principal_id, tenant, created_at, finished_at, reserved`

// scanStream scans streamCols, then any further columns into extra.
func scanStream(sc scanner, extra ...any) (journal.Stream, error) {
	var st journal.Stream
	var ca int64
	var fa sql.NullInt64
	if err := sc.Scan(append([]any{&st.ID, &st.RunID, &st.Flow, &st.PrincipalID, &st.Tenant, &ca, &fa, &st.Reserved}, extra...)...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return st, journal.ErrNotFound
		}
		return st, err
	}
	st.CreatedAt = tm(ca)
	if fa.Valid {
		t := tm(fa.Int64)
		st.FinishedAt = &t
	}
	return st, nil
}

// GetStream implements journal.Driver.
func (s *Store) GetStream(ctx context.Context, id string) (journal.Stream, error) {
	return scanStream(s.queryRow(ctx, `SELECT `+streamCols+` FROM `+s.streams+` WHERE id = ?`, id))
}

// FinishStream implements journal.Driver. Without rows or fence it is one statement
// that sets finished_at unless set and returns the last seq; otherwise the rows are
// appended and the stream finished in one transaction.
func (s *Store) FinishStream(ctx context.Context, id string, f *journal.Fence, rows []journal.EventRow, now time.Time) (int64, error) {
	var last int64
	var err error
	inTx := f != nil || len(rows) > 0
	if !inTx {
		q := `UPDATE ` + s.streams + ` SET finished_at = COALESCE(finished_at, ?) WHERE id = ?
			RETURNING (SELECT COALESCE(MAX(seq), 0) FROM ` + s.events + ` WHERE stream_id = ?)`
		read := func(r *sql.Row) error {
			err := r.Scan(&last)
			if errors.Is(err, sql.ErrNoRows) {
				return journal.ErrNotFound
			}
			return err
		}
		if s.wq != nil {
			err = s.wq.do(ctx, func(ctx context.Context, tx *txq) error {
				return read(tx.QueryRowContext(ctx, q, ns(now), id, id))
			})
		} else {
			err = read(s.queryRow(ctx, q, ns(now), id, id))
		}
	} else {
		err = s.tx(ctx, func(ctx context.Context, tx *txq) error {
			var err error
			if last, err = s.appendTx(ctx, tx, f, journal.Append{StreamID: id, Rows: rows, Reserve: keepReservation}, false); err != nil {
				return err
			}
			if _, err = tx.ExecContext(ctx, `UPDATE `+s.streams+` SET finished_at = COALESCE(finished_at, ?) WHERE id = ?`, ns(now), id); err != nil {
				return err
			}
			return s.wakeIn(ctx, tx, id)
		})
	}
	if err != nil {
		return 0, err
	}
	if inTx {
		s.woken(ctx, id)
	} else {
		s.notify(ctx, id)
	}
	return last, nil
}

// keepReservation as an Append's Reserve leaves the stream's reservation as it is.
const keepReservation = -1

// AppendEvents implements journal.Driver.
func (s *Store) AppendEvents(ctx context.Context, f *journal.Fence, a journal.Append) error {
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		if _, err := s.appendTx(ctx, tx, f, a, false); err != nil || len(a.Rows) == 0 {
			return err
		}
		return s.wakeIn(ctx, tx, a.StreamID)
	})
	if err != nil {
		return err
	}
	if len(a.Rows) > 0 {
		s.woken(ctx, a.StreamID)
	}
	return nil
}

// appendTx stores a's rows and reservation inside tx and returns the stream's last seq
// afterwards, fenced by f when the stream belongs to a durable run. fenced says the
// caller already checked f in tx (a step's write); the stream must still be f's run's.
func (s *Store) appendTx(ctx context.Context, tx *txq, f *journal.Fence, a journal.Append, fenced bool) (int64, error) {
	streamID, rows := a.StreamID, a.Rows
	var runID string
	var last, reserved int64
	err := tx.QueryRowContext(ctx, `SELECT run_id, reserved, COALESCE((SELECT MAX(seq) FROM `+s.events+` WHERE stream_id = ?), 0)
		FROM `+s.streams+` WHERE id = ?`, streamID, streamID).Scan(&runID, &reserved, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, journal.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if runID != "" {
		// The last seq was read before the run row is held. That is safe: a new owner
		// bumps the epoch before appending, so the check below fails.
		if f == nil || f.RunID != runID {
			return 0, journal.ErrLeaseLost
		}
		if !fenced {
			if err := s.checkFence(ctx, tx, *f); err != nil {
				return 0, err
			}
		}
	}
	if err := checkSeqs(rows, last, reserved); err != nil {
		return 0, err
	}
	if a.Reserve != reserved && a.Reserve != keepReservation {
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.streams+` SET reserved = ? WHERE id = ?`, a.Reserve, streamID); err != nil {
			return 0, err
		}
	}
	if len(rows) == 0 {
		return last, nil
	}
	if err := s.insertEvents(ctx, tx, []storedAppend{{streamID, rows}}); err != nil {
		return 0, err
	}
	return rows[len(rows)-1].Seq, nil
}

// storedAppend is rows of one stream to insert.
type storedAppend struct {
	streamID string
	rows     []journal.EventRow
}

// insertEvents inserts the rows of every append inside tx; ErrSeqExists when any of
// them is already stored (the caller then undoes the transaction).
func (s *Store) insertEvents(ctx context.Context, tx *txq, as []storedAppend) error {
	const insert = `INSERT INTO %s (stream_id, seq, event) VALUES %s ON CONFLICT (stream_id, seq) DO NOTHING`
	if s.dia.Prepare {
		// Where statements are parsed locally and run without a round trip (SQLite),
		// one prepared single-row INSERT per row is cheapest.
		one := fmt.Sprintf(insert, s.events, "(?,?,?)")
		st := tx.stmt(ctx, one) // bound to the transaction once, not per row
		for _, a := range as {
			for _, r := range a.rows {
				var res sql.Result
				var err error
				if st != nil {
					res, err = st.ExecContext(ctx, a.streamID, r.Seq, string(r.Event))
				} else {
					res, err = tx.ExecContext(ctx, one, a.streamID, r.Seq, string(r.Event))
				}
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n != 1 {
					return journal.ErrSeqExists
				}
			}
		}
		return nil
	}
	// Elsewhere, multi-row INSERTs of up to appendChunk rows, across streams.
	args := make([]any, 0, 3*appendChunk)
	flush := func() error {
		n := len(args) / 3
		if n == 0 {
			return nil
		}
		res, err := tx.execText(ctx, fmt.Sprintf(insert, s.events, placeholders(n, 3)), args...)
		args = args[:0]
		if err != nil {
			return err
		}
		if got, _ := res.RowsAffected(); got != int64(n) {
			return journal.ErrSeqExists
		}
		return nil
	}
	for _, a := range as {
		for _, r := range a.rows {
			args = append(args, a.streamID, r.Seq, string(r.Event))
			if len(args) == 3*appendChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// ReadEvents implements journal.Driver.
func (s *Store) ReadEvents(ctx context.Context, streamID string, after int64, limit int) ([]journal.EventRow, error) {
	rows, err := s.query(ctx, `SELECT seq, event FROM `+s.events+` WHERE stream_id = ? AND seq > ? ORDER BY seq LIMIT ?`, streamID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.EventRow
	for rows.Next() {
		var r journal.EventRow
		var ev string
		if err := rows.Scan(&r.Seq, &ev); err != nil {
			return nil, err
		}
		r.Event = json.RawMessage(ev)
		out = append(out, r)
	}
	return out, rows.Err()
}

// ReadStream implements journal.Driver: one statement, so the stream record and its rows
// come from one snapshot. The stream record is the statement's row with a NULL seq, the
// events are the rows with NULL stream columns: each value crosses the wire once. A
// missing stream gives no stream row, whatever its rows.
func (s *Store) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	return s.readStream(ctx, `stream_id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, id, after, limit)
}

// ReadStreamEnd implements journal.StreamEndReader: the stream and its last stored row
// in one statement, as ReadStream reads a stream and its rows.
func (s *Store) ReadStreamEnd(ctx context.Context, id string) (journal.Stream, []journal.EventRow, error) {
	return s.readStream(ctx, `stream_id = ? ORDER BY seq DESC LIMIT 1`, id, id)
}

// readStream reads a stream and the rows rowsWhere selects of it, in one statement;
// args are the stream's id, then rowsWhere's.
func (s *Store) readStream(ctx context.Context, rowsWhere string, args ...any) (journal.Stream, []journal.EventRow, error) {
	rows, err := s.query(ctx, `SELECT `+streamCols+`, CAST(NULL AS BIGINT), CAST(NULL AS TEXT) FROM `+s.streams+` WHERE id = ?
		UNION ALL SELECT * FROM (SELECT CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT),
			CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), seq, event FROM `+s.events+` WHERE `+rowsWhere+`) e`,
		args...)
	if err != nil {
		return journal.Stream{}, nil, err
	}
	defer rows.Close()
	var (
		st     journal.Stream
		out    []journal.EventRow
		found  bool
		sorted = true
		// An event row's stream columns are NULL and cost nothing to scan.
		rid, run, flow, pid, tenant sql.NullString
		ca, fa, res, seq            sql.NullInt64
		ev                          sql.RawBytes
		dest                        = []any{&rid, &run, &flow, &pid, &tenant, &ca, &fa, &res, &seq, &ev}
	)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return journal.Stream{}, nil, err
		}
		if !seq.Valid {
			st = journal.Stream{ID: rid.String, RunID: run.String, Flow: flow.String, PrincipalID: pid.String,
				Tenant: tenant.String, CreatedAt: tm(ca.Int64), Reserved: res.Int64}
			if fa.Valid {
				t := tm(fa.Int64)
				st.FinishedAt = &t
			}
			found = true
			continue
		}
		if n := len(out); n > 0 && out[n-1].Seq >= seq.Int64 {
			sorted = false
		}
		out = append(out, journal.EventRow{Seq: seq.Int64, Event: bytes.Clone(ev)})
	}
	if err := rows.Err(); err != nil {
		return journal.Stream{}, nil, err
	}
	if !found {
		return journal.Stream{}, nil, journal.ErrNotFound
	}
	if !sorted {
		// SQL does not promise that a UNION keeps its branch's order.
		slices.SortFunc(out, func(a, b journal.EventRow) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	return st, out, nil
}

// LastSeq implements journal.Driver.
func (s *Store) LastSeq(ctx context.Context, streamID string) (int64, error) {
	var last int64
	err := s.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM `+s.events+` WHERE stream_id = ?`, streamID).Scan(&last)
	return last, err
}

// Subscribe implements journal.Driver (in-process hub; Postgres feeds it from LISTEN).
func (s *Store) Subscribe(streamID string) (<-chan struct{}, func()) {
	return s.hub.Subscribe(streamID)
}

// SubscribeFunc runs fn on a new goroutine after each wake-up of the topic, as Subscribe
// signals its channel, until the returned function is called.
func (s *Store) SubscribeFunc(topic string, fn func()) func() {
	return s.hub.SubscribeFunc(topic, fn)
}

// DeleteFinishedStreams implements journal.Driver.
func (s *Store) DeleteFinishedStreams(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM `+s.streams+` WHERE finished_at IS NOT NULL AND finished_at < ? ORDER BY id LIMIT ?`, ns(before), limit)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		in := "(" + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + ")"
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		if _, err := tx.execText(ctx, `DELETE FROM `+s.events+` WHERE stream_id IN `+in, args...); err != nil {
			return err
		}
		if _, err := tx.execText(ctx, `DELETE FROM `+s.streams+` WHERE id IN `+in, args...); err != nil {
			return err
		}
		// A finished stream's stop request has done its work. Its row in a conversation
		// thread stays (a row per run, as the run's record does): a thread's positions never
		// go back, and a thread follower skips a run whose log is gone.
		if _, err := tx.execText(ctx, `DELETE FROM `+s.stops+` WHERE stream_id IN `+in, args...); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// StaleStreams implements journal.Driver.
func (s *Store) StaleStreams(ctx context.Context, before time.Time, limit int) ([]journal.Stream, error) {
	return s.queryStreams(ctx, `SELECT `+streamCols+` FROM `+s.streams+` WHERE finished_at IS NULL AND created_at < ? ORDER BY created_at LIMIT ?`, ns(before), limit)
}

// queryStreams runs a query of streamCols and scans every row.
func (s *Store) queryStreams(ctx context.Context, q string, args ...any) ([]journal.Stream, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.Stream
	for rows.Next() {
		st, err := scanStream(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// CloseStream implements journal.Driver.
func (s *Store) CloseStream(ctx context.Context, id string, event json.RawMessage, now time.Time) error {
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+s.streams+` WHERE id = ?`+s.dia.LockUpdate, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return journal.ErrNotFound
		}
		if err != nil {
			return err
		}
		var last, reserved int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE((SELECT MAX(seq) FROM `+s.events+` WHERE stream_id = ?), 0), reserved FROM `+s.streams+` WHERE id = ?`,
			id, id).Scan(&last, &reserved); err != nil {
			return err
		}
		// After every seq a live client may have been sent, so none names another event.
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.events+` (stream_id, seq, event) VALUES (?,?,?)`, id, max(last, reserved)+1, string(event)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+s.events+` WHERE stream_id = ? AND seq <= ?`, id, max(last, reserved)); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE `+s.streams+` SET finished_at = COALESCE(finished_at, ?), reserved = 0 WHERE id = ?`, ns(now), id); err != nil {
			return err
		}
		return s.wakeIn(ctx, tx, id)
	})
	if err != nil {
		return err
	}
	s.woken(ctx, id)
	return nil
}
