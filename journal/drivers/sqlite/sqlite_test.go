package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/sqlite"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// openDB opens a fresh WAL database in a temp dir, closed at cleanup.
func openDB(tb testing.TB) *bun.DB {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "journal.db")
	sqldb, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		tb.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

func newDriver(tb testing.TB) *sqlite.Driver {
	tb.Helper()
	d, err := sqlite.New(openDB(tb), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.Migrate(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) {
	t.Parallel()
	journaltest.Run(t, func(t *testing.T) journal.Driver { return newDriver(t) })
}

func TestOptions(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"Bad", "1x", "a-b", "a;drop"} {
		if _, err := sqlite.New(openDB(t), sqlite.Options{TablePrefix: bad}); err == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
	if _, err := sqlite.New(nil, sqlite.Options{}); err == nil {
		t.Error("nil db accepted")
	}
	d := newDriver(t)
	if err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if d.Capabilities().Has(journal.CapMultiProcess) || !d.Capabilities().Has(journal.CapDurable|journal.CapBlockingIO) {
		t.Fatalf("capabilities = %b", d.Capabilities())
	}
}

// A journal written before parks carried their run's tenant lists its pending parks by
// tenant once Migrate has run again.
func TestMigrateGivesOldParksTheirTenant(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	db, ctx := d.DB().DB, t.Context()
	for _, q := range []string{
		`DROP INDEX engine_parks_waiting_tenant_idx`,
		`ALTER TABLE engine_parks DROP COLUMN tenant`,
		`INSERT INTO engine_runs (id, flow, tenant, status, created_at, updated_at) VALUES ('r1', 'f', 'acme', 'parked', 1, 1)`,
		`INSERT INTO engine_parks (run_id, park_key, deadline, created_at) VALUES ('r1', 'k', 0, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ps, err := d.PendingParks(ctx, journal.ParkQuery{Tenant: "acme", Limit: 10})
	if err != nil || len(ps) != 1 || ps[0].RunID != "r1" {
		t.Fatalf("pending parks of acme = %+v, %v", ps, err)
	}
}
