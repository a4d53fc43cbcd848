package sqlite_test

import (
	"testing"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/sqlite"
	"github.com/bbc28f59/engine/journal/internal/sqlbench"
	"github.com/bbc28f59/engine/journal/journaltest"
)

func BenchmarkJournal(b *testing.B) {
	journaltest.Benchmark(b,
		func(b *testing.B) journal.Driver { return newDriver(b) },
		func(b *testing.B, d journal.Driver) journaltest.Baseline {
			drv := d.(*sqlite.Driver)
			return sqlbench.Baseline(drv.DB().DB, "engine_runs", "engine_parks", false, "", "")
		})
}

// BenchmarkQueries measures a page of each operator query on 1,000 runs against one on
// ENGINE_BENCH_RUNS (default 20,000; set 1000000 for the published figure).
func BenchmarkQueries(b *testing.B) {
	journaltest.BenchmarkQueries(b, func(b *testing.B, n int) journaltest.QueryJournal {
		d := newDriver(b)
		if err := sqlbench.Fill(b.Context(), d.DB().DB, "engine_runs", "engine_parks", false, n); err != nil {
			b.Fatal(err)
		}
		return journaltest.QueryJournal{Driver: d, Explain: d.Explain}
	})
}
