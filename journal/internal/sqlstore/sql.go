package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The store sends its statements through the *sql.DB under the application's *bun.DB
// with real bind parameters instead of bun's client-side interpolation: the statement
// text stays the same from call to call, so drivers that cache prepared statements
// (pgx) reuse them, and values never pass through string formatting.

// Execer is what fenced writes need from the store or a transaction, and what a
// [Dialect]'s NotifyBatch is given.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type execer = Execer

// rebinds caches ?-to-$n rewrites per statement text.
var rebinds sync.Map

// rebind rewrites ? placeholders to $1, $2... when the dialect needs it. The statements
// contain no ? inside literals.
func (s *Store) rebind(q string) string {
	if !s.dia.Dollar {
		return q
	}
	if v, ok := rebinds.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	out := b.String()
	rebinds.Store(q, out)
	return out
}

// prepared returns the cached prepared statement for q, or nil when the dialect does not
// prepare or preparing failed (the plain path is then used). database/sql prepares it
// again on each connection it runs on.
func (s *Store) prepared(ctx context.Context, q string) *sql.Stmt {
	if !s.dia.Prepare {
		return nil
	}
	if v, ok := s.stmts.Load(q); ok {
		return v.(*sql.Stmt)
	}
	st, err := s.db.DB.PrepareContext(context.WithoutCancel(ctx), s.rebind(q))
	if err != nil {
		return nil
	}
	if prev, loaded := s.stmts.LoadOrStore(q, st); loaded {
		_ = st.Close()
		return prev.(*sql.Stmt)
	}
	return st
}

func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if s.wq != nil {
		return s.wq.exec(ctx, q, args...)
	}
	if st := s.prepared(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.db.DB.ExecContext(ctx, s.rebind(q), args...)
}

// ExecContext lets the store itself serve as an [execer].
func (s *Store) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return s.exec(ctx, q, args...)
}

// reader runs a query on the store (Store.query) or in a transaction (txq.QueryContext),
// for reads that run in either.
type reader func(ctx context.Context, q string, args ...any) (*sql.Rows, error)

func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.prepared(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.DB.QueryContext(ctx, s.rebind(q), args...)
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.prepared(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.db.DB.QueryRowContext(ctx, s.rebind(q), args...)
}

// txq is a transaction that rebinds like the store and, where the dialect prepares,
// runs the store's prepared statements on the transaction's connection.
type txq struct {
	s  *Store
	tx *sql.Tx
	// missed lists the statements that ran unprepared, for the write queue's leader to
	// prepare once the transaction has ended.
	missed []string
}

// stmt returns q's prepared statement bound to the transaction, or nil. It never
// prepares on the pool from inside a transaction: with every connection taken (one, on
// an in-memory SQLite) that would wait forever. A statement not prepared yet is parsed
// this once and noted in missed.
func (t *txq) stmt(ctx context.Context, q string) *sql.Stmt {
	if !t.s.dia.Prepare {
		return nil
	}
	if v, ok := t.s.stmts.Load(q); ok {
		return t.tx.StmtContext(ctx, v.(*sql.Stmt))
	}
	if !slices.Contains(t.missed, q) {
		t.missed = append(t.missed, q)
	}
	return nil
}

// prepareMissed prepares, on the pool, the statements t ran unprepared. Call it only
// after t has ended, so the pool has t's connection back.
func (t *txq) prepareMissed(ctx context.Context) {
	for _, q := range t.missed {
		t.s.prepared(ctx, q)
	}
}

func (t *txq) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.s.rebind(q), args...)
}

// execText runs q as text, never prepared: for statements whose text changes with the
// number of values (IN lists, multi-row VALUES), which would each be prepared and kept
// on every connection.
func (t *txq) execText(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.s.rebind(q), args...)
}

// queryText is execText's query.
func (t *txq) queryText(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.s.rebind(q), args...)
}

func (t *txq) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, t.s.rebind(q), args...)
}

func (t *txq) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.s.rebind(q), args...)
}

// tx runs fn in a transaction, committing when it returns nil. On a one-writer database
// it goes through the write queue and may share its transaction with other writes
// (under a savepoint of its own). On SQLite the DSN's _txlock=immediate makes BEGIN take
// the write lock up front, so claims never fail busy.
func (s *Store) tx(ctx context.Context, fn func(ctx context.Context, tx *txq) error) error {
	if s.wq != nil {
		return s.wq.do(ctx, fn)
	}
	tx, err := s.db.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(ctx, &txq{s: s, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
