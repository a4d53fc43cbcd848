package postgres_test

import (
	"testing"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/journal/internal/sqlbench"
	"github.com/bbc28f59/engine/journal/journaltest"
)

func BenchmarkJournal(b *testing.B) {
	db := openDB(b)
	journaltest.Benchmark(b,
		func(b *testing.B) journal.Driver { return newDriver(b, db, uniquePrefix()) },
		func(b *testing.B, d journal.Driver) journaltest.Baseline {
			drv := d.(*postgres.Driver)
			tables := drv.Tables() // events, streams, steps, parks, leases, runs
			return sqlbench.Baseline(drv.DB().DB, tables[5], tables[3], true, " FOR SHARE", " FOR UPDATE")
		})
}
