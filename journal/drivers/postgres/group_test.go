package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
)

// TestConcurrentWritesShareCommits holds the runs table locked from another connection
// while 200 runs are recorded at once, then lets them go, and counts the commits
// Postgres made for the database (a database of the test's own): by default the writes
// that queued meanwhile share transactions (each under a savepoint of its own), at most
// 64 to a transaction; with CommitEachWrite each commits on its own.
func TestConcurrentWritesShareCommits(t *testing.T) {
	t.Parallel()
	for _, each := range []bool{false, true} {
		t.Run(fmt.Sprintf("CommitEachWrite=%v", each), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			url, name := ownDatabase(t)
			const writes = 200
			var got int64
			withDriver(t, url, postgres.Options{CommitEachWrite: each}, func(d *postgres.Driver) {
				if err := d.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
			})
			before := settledCommits(t, name)
			lock, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Close(context.Background())
			tx, err := lock.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "LOCK TABLE engine_runs IN EXCLUSIVE MODE"); err != nil {
				t.Fatal(err)
			}
			withDriver(t, url, postgres.Options{CommitEachWrite: each}, func(d *postgres.Driver) {
				var wg sync.WaitGroup
				errs := make(chan error, writes)
				for i := range writes {
					wg.Go(func() {
						now := time.Now()
						errs <- d.InsertRun(ctx, journal.RunRecord{ID: fmt.Sprintf("r-%03d", i), Flow: "f",
							Status: journal.StatusRunning, CreatedAt: now, UpdatedAt: now})
					})
				}
				time.Sleep(300 * time.Millisecond) // every write is waiting by now
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
				runs, err := d.ListRuns(ctx, journal.RunQuery{Limit: writes + 1})
				if err != nil || len(runs) != writes {
					t.Fatalf("%d runs stored (%v), want %d", len(runs), err, writes)
				}
			})
			got = settledCommits(t, name) - before
			switch {
			case each && got < writes:
				t.Fatalf("%d commits for %d writes, each on its own", got, writes)
			case !each && (got < writes/64 || got > writes/4):
				t.Fatalf("%d commits for %d writes that queued together, want %d to %d", got, writes, writes/64, writes/4)
			}
			t.Logf("%d writes: %d commits", writes, got)
		})
	}
}

// withDriver runs fn with a driver on a pool of its own, closed before it returns: a
// closed connection's backend reports its commits to Postgres' statistics as it exits.
func withDriver(t *testing.T, url string, opts postgres.Options, fn func(d *postgres.Driver)) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(stdlib.OpenDBFromPool(pool), pgdialect.New())
	defer func() { _ = db.Close(); pool.Close() }()
	d, err := postgres.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fn(d)
}

// settledCommits reads the commits Postgres counted for database name once the count
// has stopped changing (backends that exited report theirs shortly after).
func settledCommits(t *testing.T, name string) int64 {
	t.Helper()
	last, same := commits(t, name), 0
	for deadline := time.Now().Add(10 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		n := commits(t, name)
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}
