package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
)

// writeQueue is group commit for a database with one writer at a time (SQLite). Every
// write of the process queues here; one caller at a time leads: it takes every write
// that is waiting, runs them in one transaction, each under a savepoint of its own so
// that one write's failure undoes only that write, commits once, and hands the lead to
// the first write that queued meanwhile. Concurrent writers then share one BEGIN, one
// COMMIT and one write of each changed page to the WAL, and none of them waits in
// SQLite's busy handler, which sleeps in whole milliseconds.
//
// A write's own transaction semantics are kept: its statements run in order, see the
// writes before it in the batch, and it returns only after the batch commits. A write
// whose context ends while it queues is not run, and its caller returns at once. A write
// that has started runs to its end without its context's cancellation: SQLite rolls back
// the whole transaction when a statement in it is interrupted, which would undo the
// batch's other writes.
type writeQueue struct {
	s *Store

	mu      sync.Mutex
	waiting []*write
	leading bool
}

type write struct {
	ctx context.Context
	fn  func(ctx context.Context, tx *txq) error
	err error
	// done receives false when the write ran and err is its result, or true when it is
	// to lead the next batch.
	done chan bool
	// handed is set, under the queue's lock, when the write is given the lead: it may
	// then no longer leave the queue.
	handed bool
	// alone, when set, is the same write as fn made without a transaction around it: one
	// statement, which SQLite commits on its own. A batch of this write alone runs it, and
	// saves the BEGIN and the COMMIT; in a batch of several, fn runs under its savepoint.
	alone func(ctx context.Context) error
}

// maxBatch bounds the writes of one transaction, and so how long the last of them waits.
const maxBatch = 128

// do runs fn as one write and returns its result once it is committed or undone. A
// caller whose context ends while its write still queues leaves the queue at once.
func (q *writeQueue) do(ctx context.Context, fn func(ctx context.Context, tx *txq) error) error {
	return q.enqueue(&write{ctx: ctx, fn: fn, done: make(chan bool, 1)})
}

// exec runs one statement as one write. Alone in its batch it runs without BEGIN and
// COMMIT: the queue's order still makes it the only write of the moment.
func (q *writeQueue) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	w := &write{ctx: ctx, done: make(chan bool, 1),
		fn: func(ctx context.Context, tx *txq) (err error) {
			res, err = tx.ExecContext(ctx, query, args...)
			return err
		},
		alone: func(ctx context.Context) (err error) {
			if st := q.s.prepared(ctx, query); st != nil {
				res, err = st.ExecContext(ctx, args...)
			} else {
				res, err = q.s.db.DB.ExecContext(ctx, q.s.rebind(query), args...)
			}
			return err
		}}
	err := q.enqueue(w)
	return res, err
}

func (q *writeQueue) enqueue(w *write) error {
	ctx := w.ctx
	q.mu.Lock()
	q.waiting = append(q.waiting, w)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	if !lead {
		select {
		case lead = <-w.done:
		case <-ctx.Done():
			if q.abandon(w) {
				return ctx.Err()
			}
			lead = <-w.done
		}
		if !lead {
			return w.err
		}
	}
	// The lead goes to the first write waiting, so w is waiting[0]: the batch is w and
	// the writes queued behind it.
	q.mu.Lock()
	n := min(len(q.waiting), maxBatch)
	batch := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	q.mu.Unlock()
	t := q.run(batch)
	for _, b := range batch[1:] {
		b.done <- false
	}
	if t != nil {
		// The leader prepares what the batch ran unprepared before it returns, so no
		// work on the database outlives the calls that caused it.
		t.prepareMissed(context.Background())
	}
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.waiting = nil
		q.leading = false
		q.mu.Unlock()
		return w.err
	}
	next := q.waiting[0]
	next.handed = true
	q.mu.Unlock()
	next.done <- true
	return w.err
}

// abandon takes w out of the queue, unless a batch has taken it or it was handed the
// lead; it reports whether it did.
func (q *writeQueue) abandon(w *write) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, w)
	if w.handed || i < 0 {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	return true
}

// run executes batch in one transaction and sets every write's err. It returns the
// ended transaction, nil when none began.
func (q *writeQueue) run(batch []*write) *txq {
	ctx := context.Background()
	fail := func(err error) {
		for _, w := range batch {
			if w.err == nil {
				w.err = err
			}
		}
	}
	if len(batch) == 1 && batch[0].alone != nil {
		w := batch[0]
		if w.err = w.ctx.Err(); w.err == nil {
			w.err = w.call(nil)
		}
		return nil
	}
	tx, err := q.s.db.DB.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return nil
	}
	t := &txq{s: q.s, tx: tx}
	if len(batch) == 1 {
		// No savepoint needed: the transaction is the write's own.
		w := batch[0]
		if w.err = w.ctx.Err(); w.err == nil {
			w.err = w.call(t)
		}
		if w.err != nil {
			_ = tx.Rollback()
			return t
		}
		w.err = tx.Commit()
		return t
	}
	for _, w := range batch {
		if w.err = w.ctx.Err(); w.err != nil {
			continue
		}
		if _, err := t.ExecContext(ctx, `SAVEPOINT engine_write`); err != nil {
			_ = tx.Rollback()
			fail(err)
			return t
		}
		w.err = w.call(t)
		if w.err != nil {
			// A failed statement may have rolled the whole transaction back (SQLITE_FULL,
			// SQLITE_IOERR...); the savepoint is then gone and so is every write before.
			if _, err := t.ExecContext(ctx, `ROLLBACK TO engine_write`); err != nil {
				_ = tx.Rollback()
				fail(fmt.Errorf("journal: the write transaction was lost with another write's failure (%v): %w", w.err, err))
				return t
			}
		}
		if _, err := t.ExecContext(ctx, `RELEASE engine_write`); err != nil {
			_ = tx.Rollback()
			fail(err)
			return t
		}
	}
	if err := tx.Commit(); err != nil {
		fail(err)
	}
	return t
}

// call runs the write's fn in t, or alone when t is nil; a panic becomes its error, so
// the lead and the transaction are never left behind with every later write waiting on
// them.
func (w *write) call(t *txq) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("journal: write panicked: %v", p)
		}
	}()
	if t == nil {
		return w.alone(context.WithoutCancel(w.ctx))
	}
	return w.fn(context.WithoutCancel(w.ctx), t)
}
