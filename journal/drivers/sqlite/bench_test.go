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
