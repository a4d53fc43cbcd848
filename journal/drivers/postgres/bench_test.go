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

// BenchmarkQueries measures a page of each operator query on 1,000 runs against one on
// ENGINE_BENCH_RUNS (default 20,000; set 1000000 for the published figure).
func BenchmarkQueries(b *testing.B) {
	db := openDB(b)
	journaltest.BenchmarkQueries(b, func(b *testing.B, n int) journaltest.QueryJournal {
		d := newDriver(b, db, uniquePrefix())
		tables := d.Tables() // events, streams, steps, parks, leases, runs
		if err := sqlbench.Fill(b.Context(), d.DB().DB, tables[5], tables[3], true, n); err != nil {
			b.Fatal(err)
		}
		return journaltest.QueryJournal{Driver: d, Explain: d.Explain}
	})
}
