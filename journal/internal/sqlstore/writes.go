package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"
)

// writeQueue is group commit. Every write of the process queues here and runs in one
// of at most lanes transactions at a time. A write that finds a lane free leads it at
// once; the others wait. A leader runs its batch in one transaction, each write under a
// savepoint of its own so that one write's failure undoes only that write, and commits
// once; then it takes every write that queued meanwhile as the next batch and hands the
// lead to the first of them, or frees the lane when none did. Concurrent writers then
// share one BEGIN, one COMMIT and one flush of the log to disk. On SQLite (one lane:
// it writes one transaction at a time) none of them waits in the busy handler, which
// sleeps in whole milliseconds; on Postgres the database's commits stop growing with
// the number of conversations that write at once (a durable conversation's run record,
// steps and end are writes of their own), and one instance holds at most lanes write
// connections at a time.
//
// On Postgres a write may wait for a row another instance's transaction holds, and so
// may the writes queued behind it; two instances' groups that wait for each other are a
// deadlock, which Postgres ends (after its deadlock_timeout) by failing one write. That
// write was undone, so the queue runs it again in a later group ([Dialect.Undone]), a
// few times at most, rather than fail a caller (an approver's decision, a signal) with
// it. The rows two instances touch at once are those of a run changing hands (a
// decision, a takeover), so this is rare.
//
// A write's own transaction semantics are kept: its statements run in order, see the
// writes before it in the batch, and it returns only after the batch commits. A write
// whose context ends while it queues is not run, and its caller returns at once. A write
// that has started runs to its end without its context's cancellation: SQLite rolls back
// the whole transaction when a statement in it is interrupted, which would undo the
// batch's other writes.
type writeQueue struct {
	s     *Store
	max   int // the writes of one transaction at most
	lanes int // the transactions that may run at once

	mu      sync.Mutex
	waiting []*write // writes no batch has taken yet
	leaders int      // lanes in use
}

type write struct {
	ctx context.Context
	fn  func(ctx context.Context, tx *txq) error
	err error
	// done receives false when the write ran and err is its result, or true when it is
	// to lead batch, which begins with it.
	done  chan bool
	batch []*write
	// alone, when set, is the same write as fn made without a transaction around it: one
	// statement, which SQLite commits on its own. A batch of this write alone runs it, and
	// saves the BEGIN and the COMMIT; in a batch of several, fn runs under its savepoint.
	alone func(ctx context.Context) error
}

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

// undoneTries bounds the runs of a write the database keeps undoing (see Dialect.Undone).
const undoneTries = 5

// enqueue runs w in a group and returns its result; a write the database undid (a
// deadlock's victim) runs again, after a short pause that lets the other transaction
// finish, up to undoneTries times.
func (q *writeQueue) enqueue(w *write) error {
	for try := 1; ; try++ {
		err := q.enqueueOnce(w)
		if try == undoneTries || q.s.dia.Undone == nil || !q.s.dia.Undone(err) || w.ctx.Err() != nil {
			return err
		}
		w.err, w.batch, w.done = nil, nil, make(chan bool, 1)
		time.Sleep(time.Duration(try) * time.Millisecond)
	}
}

func (q *writeQueue) enqueueOnce(w *write) error {
	ctx := w.ctx
	q.mu.Lock()
	q.waiting = append(q.waiting, w)
	if q.leaders < q.lanes {
		// A lane is free, so nothing else was waiting: w leads a batch of its own.
		q.leaders++
		w.batch = q.take()
		q.mu.Unlock()
	} else {
		q.mu.Unlock()
		var lead bool
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
	batch := w.batch
	w.batch = nil
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
		q.leaders--
		q.mu.Unlock()
		return w.err
	}
	next := q.take()
	next[0].batch = next
	q.mu.Unlock()
	next[0].done <- true
	return w.err
}

// take removes the next batch from the writes waiting; the caller holds q.mu.
func (q *writeQueue) take() []*write {
	n := min(len(q.waiting), q.max)
	batch := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	return batch
}

// abandon takes w out of the queue, unless a batch has taken it; it reports whether it
// did.
func (q *writeQueue) abandon(w *write) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, w)
	if i < 0 {
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
	// The savepoint marks where the write under way began. Where one call may hold
	// several statements (Postgres, whose every statement is a round trip), a stored
	// write moves it past itself in one call, a failed write is undone to it and leaves
	// it in place for the next, and the commit releases the last; elsewhere each write
	// sets and releases its own.
	multi := q.s.dia.MultiStatement
	marked := false
	for i, w := range batch {
		if w.err = w.ctx.Err(); w.err != nil {
			continue
		}
		if !marked {
			if _, err := t.ExecContext(ctx, `SAVEPOINT engine_write`); err != nil {
				_ = tx.Rollback()
				fail(err)
				return t
			}
			marked = true
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
		next := ""
		switch {
		case !multi:
			next, marked = `RELEASE engine_write`, false
		case w.err == nil && i < len(batch)-1:
			next = `RELEASE engine_write; SAVEPOINT engine_write`
		}
		if next == "" {
			continue
		}
		exec := t.ExecContext // SQLite keeps it prepared
		if multi {
			exec = t.execText // several statements are never prepared
		}
		if _, err := exec(ctx, next); err != nil {
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
