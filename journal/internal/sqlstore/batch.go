package sqlstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// batchIDs bounds the ids of one IN list (and the arms of one CASE) in a batched append.
const batchIDs = 500

// errBatchRace undoes a batched append whose rows met rows stored meanwhile by another
// writer: which append they belong to is not known, so each is then stored on its own.
var errBatchRace = errors.New("sqlstore: a batched append met a concurrent write")

// AppendBatch implements journal.Driver: every append in one transaction, with a fixed
// number of statements whatever the number of streams: one read of the streams' last
// seqs and reservations, one read (holding them for the transaction) of the runs whose
// fences are checked, multi-row INSERTs of every stored row, one UPDATE of the
// reservations, and, on Postgres, one statement of notifications sent at commit. An
// append that fails its own checks is left out of those writes and gets its error.
func (s *Store) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	if len(batch) == 1 {
		// One append: its own statements, which the store keeps prepared, not the
		// batch's, whose lists change with the batch.
		return []error{s.appendAlone(ctx, batch[0])}
	}
	errs := make([]error, len(batch))
	// An append of a stream an earlier append of the batch names is stored after the
	// batch, on its own, so that it sees the earlier one.
	first := make(map[string]bool, len(batch))
	var later []int
	var items []int
	for i, a := range batch {
		if first[a.StreamID] {
			later = append(later, i)
			continue
		}
		first[a.StreamID] = true
		items = append(items, i)
	}
	var wake []string
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		for _, i := range items {
			errs[i] = nil
		}
		var err error
		wake, err = s.appendBatchTx(ctx, tx, batch, items, errs)
		return err
	})
	switch {
	case errors.Is(err, errBatchRace):
		for _, i := range items {
			errs[i] = s.appendAlone(ctx, batch[i])
		}
	case err != nil:
		for _, i := range items {
			errs[i] = err
		}
	default:
		s.woken(ctx, wake...)
	}
	for _, i := range later {
		errs[i] = s.appendAlone(ctx, batch[i])
	}
	return errs
}

// appendAlone stores one append of a batch in a transaction of its own: its stream's
// creation, its rows and its end.
func (s *Store) appendAlone(ctx context.Context, a journal.FencedAppend) error {
	if creationAlone(a) {
		return s.CreateStream(ctx, *a.Open)
	}
	return s.txWaking(ctx, func(ctx context.Context, tx *txq) (wake []string, err error) {
		if a.Open != nil {
			if wake, err = s.openStream(ctx, tx, *a.Open, wake); err != nil {
				return nil, err
			}
		}
		app := a.Append
		if !a.Finish.IsZero() {
			app.Reserve = keepReservation
		}
		if _, err := s.appendTx(ctx, tx, a.Fence, app, false); err != nil {
			return nil, err
		}
		if !a.Finish.IsZero() {
			if err := s.finishIn(ctx, tx, a.StreamID, a.Finish); err != nil {
				return nil, err
			}
		}
		if len(a.Rows) > 0 || !a.Finish.IsZero() {
			wake = append(wake, a.StreamID)
		}
		return wake, nil
	})
}

// creationAlone reports whether a creates its stream and stores nothing else.
func creationAlone(a journal.FencedAppend) bool {
	return a.Open != nil && len(a.Rows) == 0 && a.Finish.IsZero() && a.Reserve == a.Open.Reserved
}

// finishIn marks a stream finished at now inside tx, unless it already is.
func (s *Store) finishIn(ctx context.Context, tx *txq, id string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE `+s.streams+` SET finished_at = COALESCE(finished_at, ?) WHERE id = ?`, ns(now), id)
	return err
}

// batchStream is what a batched append reads of one stream.
type batchStream struct {
	runID          string
	last, reserved int64
}

// appendBatchTx stores the appends batch[items] inside tx, setting errs[i] for each that
// fails its checks, and returns the topics to wake at the commit: the streams it stored
// rows of or ended, and the threads of the streams it created.
func (s *Store) appendBatchTx(ctx context.Context, tx *txq, batch []journal.FencedAppend, items []int, errs []error) ([]string, error) {
	// The streams the batch creates, each with its thread's run: a statement or two each,
	// all in the batch's commit.
	var wake []string
	live := items[:0:0]
	for _, i := range items {
		a := batch[i]
		if a.Open != nil {
			var err error
			if wake, err = s.openStream(ctx, tx, *a.Open, wake); errors.Is(err, journal.ErrConflict) {
				errs[i] = err
				continue
			} else if err != nil {
				return nil, err
			}
			if creationAlone(a) {
				continue // nothing more to store
			}
		}
		live = append(live, i)
	}
	items = live
	ids := make([]string, len(items))
	for k, i := range items {
		ids[k] = batch[i].StreamID
	}
	streams := make(map[string]batchStream, len(ids))
	err := inChunks(ids, func(chunk []string) error {
		rows, err := tx.tx.QueryContext(ctx, s.rebind(`SELECT id, run_id, reserved, COALESCE((SELECT MAX(seq) FROM `+s.events+` e WHERE e.stream_id = st.id), 0)
			FROM `+s.streams+` st WHERE id IN `+inList(len(chunk))), anys(chunk)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var b batchStream
			if err := rows.Scan(&id, &b.runID, &b.reserved, &b.last); err != nil {
				return err
			}
			streams[id] = b
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// The runs whose fences are checked, held (FOR SHARE) until the commit, in id order
	// so that two batches never wait for each other in a cycle.
	type lease struct {
		owner string
		epoch int64
	}
	var runIDs []string
	seen := map[string]bool{}
	for _, i := range items {
		if b, ok := streams[batch[i].StreamID]; ok && b.runID != "" && batch[i].Fence != nil && !seen[b.runID] {
			seen[b.runID] = true
			runIDs = append(runIDs, b.runID)
		}
	}
	leases := make(map[string]lease, len(runIDs))
	err = inChunks(runIDs, func(chunk []string) error {
		rows, err := tx.tx.QueryContext(ctx, s.rebind(`SELECT id, lease_owner, epoch FROM `+s.runs+` WHERE id IN `+inList(len(chunk))+
			` ORDER BY id`+s.dia.LockShare), anys(chunk)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var l lease
			if err := rows.Scan(&id, &l.owner, &l.epoch); err != nil {
				return err
			}
			leases[id] = l
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}

	var inserts []storedAppend
	var reserve []any // id, reservation pairs
	var finish []int
	for _, i := range items {
		a := batch[i]
		b, ok := streams[a.StreamID]
		if !ok {
			errs[i] = journal.ErrNotFound
			continue
		}
		if b.runID != "" {
			l, held := leases[b.runID]
			if f := a.Fence; f == nil || f.RunID != b.runID || !held || l.owner == "" || l.owner != f.Owner || l.epoch != f.Epoch {
				errs[i] = journal.ErrLeaseLost
				continue
			}
		}
		if errs[i] = checkSeqs(a.Rows, b.last, b.reserved); errs[i] != nil {
			continue
		}
		if a.Reserve != b.reserved && a.Reserve != keepReservation && a.Finish.IsZero() {
			reserve = append(reserve, a.StreamID, a.Reserve)
		}
		if len(a.Rows) > 0 {
			inserts = append(inserts, storedAppend{a.StreamID, a.Rows})
		}
		if !a.Finish.IsZero() {
			finish = append(finish, i)
		}
		if len(a.Rows) > 0 || !a.Finish.IsZero() {
			wake = append(wake, a.StreamID)
		}
	}
	if err := s.insertEvents(ctx, tx, inserts); err != nil {
		if errors.Is(err, journal.ErrSeqExists) {
			return nil, errBatchRace
		}
		return nil, err
	}
	// The new reservations join the streams as a list of values: a CASE with an arm per
	// stream would be tested arm by arm on every row it updates, which at a thousand live
	// streams cost SQLite more than inserting their rows.
	for start, n := 0, len(reserve)/2; start < n; start += batchIDs {
		end := min(start+batchIDs, n)
		var q strings.Builder
		q.WriteString(`UPDATE ` + s.streams + ` AS st SET reserved = v.column2 FROM (VALUES `)
		for k := range end - start {
			if k > 0 {
				q.WriteByte(',')
			}
			q.WriteString(`(?, CAST(? AS BIGINT))`)
		}
		q.WriteString(`) AS v WHERE st.id = v.column1`)
		if _, err := tx.execText(ctx, q.String(), reserve[2*start:2*end]...); err != nil {
			return nil, err
		}
	}
	for _, i := range finish {
		if err := s.finishIn(ctx, tx, batch[i].StreamID, batch[i].Finish); err != nil {
			return nil, err
		}
	}
	if err := s.wakeIn(ctx, tx, wake...); err != nil {
		return nil, err
	}
	return wake, nil
}

// checkSeqs checks that rows continue a stream whose last stored seq is last and whose
// reservation is reserved, as [journal.Append] says.
func checkSeqs(rows []journal.EventRow, last, reserved int64) error {
	base := last
	if len(rows) > 0 && rows[0].Seq == reserved+1 && reserved > last {
		base = reserved // a writer continuing after one that died: past its reservation
	}
	for i, r := range rows {
		want := base + int64(i) + 1
		if r.Seq < want {
			return journal.ErrSeqExists
		}
		if r.Seq > want {
			return journal.ErrSeqGap
		}
	}
	return nil
}

// inChunks calls fn with ids in chunks of at most batchIDs.
func inChunks(ids []string, fn func(chunk []string) error) error {
	for start := 0; start < len(ids); start += batchIDs {
		if err := fn(ids[start:min(start+batchIDs, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// inList is "(?,?,...)" with n placeholders.
func inList(n int) string { return "(" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")" }

// anys converts strings to statement arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
