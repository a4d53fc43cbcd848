package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the SQLite journal's database/sql driver

	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/journal/drivers/sqlite"
)

var memorySeq atomic.Int64

// MemorySQLite returns a private in-memory SQLite database (its name starts with name,
// and is unique in the test binary), on one connection with immediate transactions,
// closed at cleanup.
func MemorySQLite(tb testing.TB, name string) *bun.DB {
	tb.Helper()
	dsn := fmt.Sprintf("file:%s-%d-%d?mode=memory&cache=shared&_pragma=busy_timeout(5000)&_txlock=immediate", name, os.Getpid(), memorySeq.Add(1))
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	sqldb.SetMaxOpenConns(1)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// SQLiteJournal returns a SQLite journal driver on a fresh file in tb's temporary
// directory, opened as the driver's doc advises (WAL, immediate transactions, a pool of
// four), and the database under it, closed at cleanup.
func SQLiteJournal(tb testing.TB) (*sqlite.Driver, *sql.DB) {
	tb.Helper()
	dsn := "file:" + filepath.Join(tb.TempDir(), "journal.db") +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	sqldb.SetMaxOpenConns(4)
	sqldb.SetMaxIdleConns(4)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	tb.Cleanup(func() { _ = db.Close() })
	d, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return d, sqldb
}

// PostgresDB opens a pgx pool on dsn as a *bun.DB, both closed at cleanup.
func PostgresDB(tb testing.TB, dsn string) *bun.DB {
	tb.Helper()
	db, closeDB := openPostgres(tb, dsn)
	tb.Cleanup(closeDB)
	return db
}

// openPostgres opens a pgx pool on dsn as a *bun.DB and returns it with the function
// that closes both.
func openPostgres(tb testing.TB, dsn string) (*bun.DB, func()) {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	db := bun.NewDB(stdlib.OpenDBFromPool(pool), pgdialect.New())
	return db, func() { _ = db.Close(); pool.Close() }
}

// PostgresJournal opens a Postgres journal driver on the tables of prefix on the server
// of dsn, with its own pool and LISTEN connection as another process would have, and
// returns it with the database under it. At cleanup it closes both and, when owner,
// drops the tables; register it before the app that uses it, so that runs after the app
// closed.
func PostgresJournal(tb testing.TB, dsn, prefix string, owner bool) (*postgres.Driver, *sql.DB) {
	tb.Helper()
	db, closeDB := openPostgres(tb, dsn)
	d, err := postgres.New(db, postgres.Options{TablePrefix: prefix,
		Listener: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = d.Close()
		if owner {
			for _, t := range d.Tables() {
				_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+t)
			}
		}
		closeDB()
	})
	return d, db.DB
}
