package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// dsn returns the test database or skips, saying why.
func dsn(tb testing.TB) string {
	tb.Helper()
	return testenv.PostgresDSN(tb, "the Postgres tests")
}

// openDB opens a pgx pool as a *bun.DB, closed at cleanup.
func openDB(tb testing.TB) *bun.DB {
	tb.Helper()
	return testenv.PostgresDB(tb, dsn(tb))
}

// uniquePrefix isolates one test's tables.
func uniquePrefix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return "jt_" + hex.EncodeToString(b) + "_"
}

// newDriver returns a migrated driver on its own tables (dropped at cleanup) with a
// LISTEN connector on the test database.
func newDriver(tb testing.TB, db *bun.DB, prefix string) *postgres.Driver {
	tb.Helper()
	return newDriverWith(tb, db, postgres.Options{TablePrefix: prefix})
}

// newDriverWith is newDriver with opts (its TablePrefix set).
func newDriverWith(tb testing.TB, db *bun.DB, opts postgres.Options) *postgres.Driver {
	tb.Helper()
	url := dsn(tb)
	opts.Listener = func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }
	d, err := postgres.New(db, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = d.Close()
		for _, tbl := range d.Tables() {
			_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+tbl)
		}
	})
	return d
}

func TestConformance(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	journaltest.Run(t, func(t *testing.T) journal.Driver { return newDriver(t, db, uniquePrefix()) })
}

// TestConformanceCommitEachWrite holds the driver to the suite with every write in a
// transaction of its own, where the writes and the reads that join them (a claim's
// steps and parks, a suspend's count) take their own transactions.
func TestConformanceCommitEachWrite(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	journaltest.Run(t, func(t *testing.T) journal.Driver {
		return newDriverWith(t, db, postgres.Options{TablePrefix: uniquePrefix(), CommitEachWrite: true})
	})
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	d := newDriver(t, openDB(t), uniquePrefix())
	want := journal.CapDurable | journal.CapMultiProcess | journal.CapCrossProcessWakeups | journal.CapBlockingIO
	if d.Capabilities() != want {
		t.Fatalf("capabilities = %b, want %b", d.Capabilities(), want)
	}
	noListen, err := postgres.New(openDB(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if noListen.Capabilities().Has(journal.CapCrossProcessWakeups) {
		t.Fatal("a driver without a listener claims cross-process wake-ups")
	}
}
