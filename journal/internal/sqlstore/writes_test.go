package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

// newQueued opens a SQLite store with the write queue and a table t(k TEXT PRIMARY KEY).
func newQueued(t *testing.T) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q.db")
	sqldb, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	sqldb.SetMaxOpenConns(2)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(db, "q_", Dialect{Prepare: true, GroupWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.ExecContext(t.Context(), `CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return s
}

func insert(k string) func(ctx context.Context, tx *txq) error {
	return func(ctx context.Context, tx *txq) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t (k) VALUES (?)`, k)
		return err
	}
}

func stored(t *testing.T, s *Store, k string) bool {
	t.Helper()
	var n int
	if err := s.db.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM t WHERE k = ?`, k).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// queueBehind holds the queue's lead with a write that waits for release, and returns
// once it is running: writes made before release then run together, in one batch.
func queueBehind(t *testing.T, s *Store) (release func() error) {
	t.Helper()
	running, proceed, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.tx(t.Context(), func(ctx context.Context, tx *txq) error {
			close(running)
			<-proceed
			return insert("lead")(ctx, tx)
		})
	}()
	<-running
	return func() error { close(proceed); return <-done }
}

type pending struct {
	ctx context.Context
	fn  func(context.Context, *txq) error
}

// enqueue starts the writes in order, each waiting in the queue before the next starts,
// and returns a function that waits for their results.
func enqueue(s *Store, ws ...pending) (results func() []error) {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	s.wq.mu.Lock()
	already := len(s.wq.waiting)
	s.wq.mu.Unlock()
	for i, w := range ws {
		if w.ctx.Err() != nil {
			// Behind a held lead, a write whose context has ended leaves the queue at once.
			errs[i] = s.tx(w.ctx, w.fn)
			continue
		}
		wg.Go(func() { errs[i] = s.tx(w.ctx, w.fn) })
		already++
		waitQueued(s, already)
	}
	return func() []error { wg.Wait(); return errs }
}

// waitQueued returns once n writes wait in the queue.
func waitQueued(s *Store, n int) {
	for {
		s.wq.mu.Lock()
		waiting := len(s.wq.waiting)
		s.wq.mu.Unlock()
		if waiting == n {
			return
		}
		runtime.Gosched()
	}
}

// batch runs ws as one batch behind a held lead and returns their results in order.
func batch(t *testing.T, s *Store, ws ...pending) []error {
	t.Helper()
	release := queueBehind(t, s)
	results := enqueue(s, ws...)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	return results()
}

func TestWriteQueueFailureUndoesOnlyThatWrite(t *testing.T) {
	for _, multi := range []bool{false, true} {
		t.Run(fmt.Sprintf("MultiStatement=%v", multi), func(t *testing.T) {
			s := newQueued(t)
			s.dia.MultiStatement = multi
			failureUndoesOnlyThatWrite(t, s)
		})
	}
}

// failureUndoesOnlyThatWrite runs, behind a held lead, a batch whose writes fail in
// each way a write can, between writes that succeed.
func failureUndoesOnlyThatWrite(t *testing.T, s *Store) {
	ctx := t.Context()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	boom := errors.New("boom")

	errs := batch(t, s,
		pending{ctx, insert("a")},
		pending{ctx, func(ctx context.Context, tx *txq) error {
			if err := insert("b")(ctx, tx); err != nil {
				return err
			}
			return boom // b is undone with it
		}},
		pending{ctx, insert("a")},       // a primary-key violation: only this write fails
		pending{cancelled, insert("d")}, // its context ended while it queued: not run
		pending{ctx, insert("e")},
	)
	if errs[0] != nil || errs[4] != nil {
		t.Errorf("the good writes failed: %v, %v", errs[0], errs[4])
	}
	if !errors.Is(errs[1], boom) {
		t.Errorf("the failing write got %v, want its own error", errs[1])
	}
	if errs[2] == nil {
		t.Error("the duplicate key was accepted")
	}
	if !errors.Is(errs[3], context.Canceled) {
		t.Errorf("the cancelled write got %v, want context.Canceled", errs[3])
	}
	for k, want := range map[string]bool{"lead": true, "a": true, "b": false, "d": false, "e": true} {
		if got := stored(t, s, k); got != want {
			t.Errorf("row %q stored: %v, want %v", k, got, want)
		}
	}
}

// A caller whose context ends while its write queues returns at once, without waiting
// for the batch ahead of it, and its write never runs; the queue goes on without it.
func TestWriteQueueCancelledWhileQueued(t *testing.T) {
	s := newQueued(t)
	ctx := t.Context()
	release := queueBehind(t, s)
	short, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { gone <- s.tx(short, insert("gone")) }()
	waitQueued(s, 1)
	results := enqueue(s, pending{ctx, insert("a")}) // queued behind the cancelled write
	cancel()
	select {
	case err := <-gone:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled write waited for the batch ahead of it")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if errs := results(); errs[0] != nil {
		t.Fatalf("the write behind the cancelled one: %v", errs[0])
	}
	if stored(t, s, "gone") || !stored(t, s, "a") {
		t.Fatal("want only the write that was not cancelled stored")
	}
}

// A write that panics fails alone, and the queue goes on.
func TestWriteQueuePanicFailsOnlyThatWrite(t *testing.T) {
	s := newQueued(t)
	ctx := t.Context()
	errs := batch(t, s,
		pending{ctx, insert("a")},
		pending{ctx, func(ctx context.Context, tx *txq) error {
			if err := insert("b")(ctx, tx); err != nil {
				return err
			}
			panic("bug")
		}},
		pending{ctx, insert("c")},
	)
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("results %v, want only the panicking write to fail", errs)
	}
	for k, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if got := stored(t, s, k); got != want {
			t.Errorf("row %q stored: %v, want %v", k, got, want)
		}
	}
	if err := s.tx(ctx, func(ctx context.Context, tx *txq) error { panic("alone") }); err == nil {
		t.Fatal("a lone panicking write reported success")
	}
	if err := s.tx(ctx, insert("after")); err != nil || !stored(t, s, "after") {
		t.Fatalf("write after the panics: %v", err)
	}
}

// A statement error can roll back SQLite's whole transaction (SQLITE_FULL, SQLITE_IOERR);
// every write of the batch must then report failure, including those that ran before.
func TestWriteQueueWholeTransactionLost(t *testing.T) {
	s := newQueued(t)
	ctx := t.Context()
	errs := batch(t, s,
		pending{ctx, insert("a")},
		pending{ctx, func(ctx context.Context, tx *txq) error {
			_, err := tx.tx.ExecContext(ctx, `ROLLBACK`) // what SQLite does on SQLITE_FULL
			if err != nil {
				return err
			}
			return errors.New("disk full")
		}},
		pending{ctx, insert("c")},
	)
	for i, err := range errs {
		if err == nil {
			t.Errorf("write %d reported success in a transaction that was rolled back", i)
		}
	}
	for _, k := range []string{"a", "c"} {
		if stored(t, s, k) {
			t.Errorf("row %q stored", k)
		}
	}
	// The queue goes on.
	if err := s.tx(ctx, insert("after")); err != nil || !stored(t, s, "after") {
		t.Fatalf("write after the lost batch: %v", err)
	}
}

// Many writers, some failing: what each write reports is what is stored.
func TestWriteQueueReportsWhatIsStored(t *testing.T) {
	s := newQueued(t)
	const writers, each = 8, 40
	errs := make([][]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		errs[w] = make([]error, each)
		wg.Go(func() {
			for i := range each {
				k := fmt.Sprintf("%d-%d", w, i)
				if i%5 == 4 {
					errs[w][i] = s.tx(t.Context(), func(ctx context.Context, tx *txq) error {
						_ = insert(k)(ctx, tx)
						return errors.New("refused")
					})
					continue
				}
				_, errs[w][i] = s.exec(t.Context(), `INSERT INTO t (k) VALUES (?)`, k)
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for i := range each {
			k := fmt.Sprintf("%d-%d", w, i)
			if got, want := stored(t, s, k), errs[w][i] == nil; got != want {
				t.Errorf("row %s: stored %v, reported %v", k, got, errs[w][i])
			}
			if (i%5 == 4) == (errs[w][i] == nil) {
				t.Errorf("row %s: reported %v", k, errs[w][i])
			}
		}
	}
}

// A statement a transaction ran unprepared is prepared by the time its write returns,
// on the pool and outside the transaction, even when the pool has a single connection
// (which the transaction held): the next transaction runs it prepared, and no
// preparation outlives the call, so closing the database right after finds no work.
func TestWriteQueuePreparesMissedStatementsBeforeReturning(t *testing.T) {
	s := newQueued(t)
	s.db.DB.SetMaxOpenConns(1)
	const q = `INSERT INTO t (k) VALUES (?)`
	if err := s.wq.do(t.Context(), insert("a")); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.stmts.Load(q); !ok {
		t.Fatal("the statement the write ran unprepared is not prepared after it returned")
	}
	err := s.wq.do(t.Context(), func(ctx context.Context, tx *txq) error {
		if tx.stmt(ctx, q) == nil {
			return errors.New("the second transaction did not get the prepared statement")
		}
		return insert("b")(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !stored(t, s, "b") {
		t.Fatal("the prepared insert stored nothing")
	}
}

// A write of one statement runs alone without a transaction around it, and in a batch
// under its savepoint like any other write: either way it reports its own result.
func TestWriteQueueExec(t *testing.T) {
	s := newQueued(t)
	ctx := t.Context()
	res, err := s.exec(ctx, `INSERT INTO t (k) VALUES (?)`, "alone")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 || !stored(t, s, "alone") {
		t.Fatalf("lone exec: %d rows affected, stored %v", n, stored(t, s, "alone"))
	}
	if _, err := s.exec(ctx, `INSERT INTO t (k) VALUES (?)`, "alone"); err == nil {
		t.Fatal("lone exec of a duplicate key: no error")
	}
	release := queueBehind(t, s)
	type out struct {
		n   int64
		err error
	}
	outs := make([]out, 3)
	var wg sync.WaitGroup
	for i, k := range []string{"b1", "alone", "b2"} {
		wg.Go(func() {
			res, err := s.exec(ctx, `INSERT INTO t (k) VALUES (?)`, k)
			if err == nil {
				outs[i].n, _ = res.RowsAffected()
			}
			outs[i].err = err
		})
		waitQueued(s, i+1)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if outs[0].err != nil || outs[0].n != 1 || outs[1].err == nil || outs[2].err != nil || outs[2].n != 1 {
		t.Fatalf("batched execs: %+v", outs)
	}
	for _, k := range []string{"lead", "b1", "b2"} {
		if !stored(t, s, k) {
			t.Errorf("%s not stored", k)
		}
	}
}

// TestWriteQueueLanes runs a queue of two lanes: two writes run at once, each leading a
// lane; writes made meanwhile wait, and the first lane to finish runs them as one batch
// while the other lane's write still runs; once every write returned, both lanes are
// free.
func TestWriteQueueLanes(t *testing.T) {
	s := newQueued(t)
	s.wq.lanes = 2
	ctx := t.Context()
	type held struct {
		started, release chan struct{}
		done             chan error
	}
	hold := func() *held {
		h := &held{make(chan struct{}), make(chan struct{}), make(chan error, 1)}
		w := &write{ctx: ctx, done: make(chan bool, 1),
			fn: func(context.Context, *txq) error { return errors.New("a held write ran in a batch") },
			alone: func(context.Context) error {
				close(h.started)
				<-h.release
				return nil
			}}
		go func() { h.done <- s.wq.enqueue(w) }()
		return h
	}
	first, second := hold(), hold()
	for _, h := range []*held{first, second} {
		select {
		case <-h.started:
		case <-time.After(10 * time.Second):
			t.Fatal("two writes did not run at once on two lanes")
		}
	}
	results := enqueue(s, pending{ctx, insert("a")}, pending{ctx, insert("b")})
	close(first.release)
	if err := <-first.done; err != nil {
		t.Fatal(err)
	}
	for i, err := range results() {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if !stored(t, s, "a") || !stored(t, s, "b") {
		t.Fatal("the writes queued behind the lanes were not stored")
	}
	select {
	case err := <-second.done:
		t.Fatalf("the second lane's write returned (%v) before it was released", err)
	default:
	}
	close(second.release)
	if err := <-second.done; err != nil {
		t.Fatal(err)
	}
	s.wq.mu.Lock()
	leaders, waiting := s.wq.leaders, len(s.wq.waiting)
	s.wq.mu.Unlock()
	if leaders != 0 || waiting != 0 {
		t.Fatalf("after every write returned: %d lanes in use, %d writes waiting", leaders, waiting)
	}
}

// A write the database undid (Dialect.Undone: on Postgres, a deadlock's victim) runs
// again instead of failing its caller, in a group or alone, and its neighbours in the
// group are stored once; one the database keeps undoing fails after undoneTries runs.
func TestWriteQueueRunsAnUndoneWriteAgain(t *testing.T) {
	s := newQueued(t)
	victim := errors.New("deadlock detected")
	s.dia.Undone = func(err error) bool { return errors.Is(err, victim) }
	// undoneFirst inserts k once it has been undone n times: each failed run inserts
	// first, so the undo must take the row back for the next run to store it.
	undoneFirst := func(k string, n int, runs *int) func(ctx context.Context, tx *txq) error {
		return func(ctx context.Context, tx *txq) error {
			*runs++
			if err := insert(k)(ctx, tx); err != nil {
				return err
			}
			if *runs <= n {
				return victim
			}
			return nil
		}
	}
	ctx := t.Context()
	var grouped int
	errs := batch(t, s, pending{ctx, insert("before")}, pending{ctx, undoneFirst("victim", 2, &grouped)}, pending{ctx, insert("after")})
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d of the group: %v", i, err)
		}
	}
	if grouped != 3 {
		t.Errorf("the undone write ran %d times, want 3 (twice undone, then stored)", grouped)
	}
	for _, k := range []string{"before", "victim", "after"} {
		if !stored(t, s, k) {
			t.Errorf("%s not stored", k)
		}
	}
	var alone int
	if err := s.tx(ctx, undoneFirst("alone", 1, &alone)); err != nil || alone != 2 || !stored(t, s, "alone") {
		t.Errorf("a write alone: %v after %d runs, stored %v; want it stored on its second run", err, alone, stored(t, s, "alone"))
	}
	var always int
	if err := s.tx(ctx, undoneFirst("never", 1000, &always)); !errors.Is(err, victim) || always != undoneTries || stored(t, s, "never") {
		t.Errorf("a write always undone: %v after %d runs; want the error after %d runs, nothing stored", err, always, undoneTries)
	}
}
