package capacity

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ceiling is what one Postgres server can take, measured from Go on a database of its
// own: the figures that say where instances sharing one Postgres meet their wall.
type Ceiling struct {
	Version        string `json:"version"`
	MaxConnections int    `json:"maxConnections"`
	InUse          int    `json:"connectionsInUse"` // on the whole server when measured
	SyncCommit     string `json:"synchronousCommit"`
	// Commits is single-row INSERT transactions per second by number of connections.
	Commits []Rate `json:"commits"`
	// BatchedRows is rows per second when each commit carries 50 rows, by connections.
	BatchedRows []Rate `json:"batchedRows"`
	// Notify is notifications per second each listener received, by number of listeners,
	// with 8 connections sending one pg_notify per transaction.
	Notify []Rate `json:"notify"`
	// Skipped lists what was not measured because the shared server had too few spare
	// connections.
	Skipped []string `json:"skipped,omitempty"`
}

// Rate is a throughput at a concurrency.
type Rate struct {
	N      int     `json:"n"`
	PerSec float64 `json:"perSec"`
}

// PostgresCeiling measures the server of dsn for about d per figure: commits per second
// of single-row transactions from 1 to 32 connections (group commit at work), rows per
// second when commits are batched, and NOTIFY throughput to 1 and 4 listeners. It makes
// a database of its own and drops it, and never takes the last 30 connections of the
// server, which others may be using.
func PostgresCeiling(ctx context.Context, dsn string, d time.Duration) (Ceiling, error) {
	var c Ceiling
	dbDSN, _, drop, err := newDatabase(ctx, dsn, 0)
	if err != nil {
		return c, err
	}
	defer drop()
	cfg, err := pgxpool.ParseConfig(dbDSN)
	if err != nil {
		return c, err
	}
	cfg.MaxConns = 72
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return c, err
	}
	defer pool.Close()
	err = pool.QueryRow(ctx, `SELECT version(), current_setting('max_connections')::int, current_setting('synchronous_commit'),
		(SELECT count(*) FROM pg_stat_activity)`).Scan(&c.Version, &c.MaxConnections, &c.SyncCommit, &c.InUse)
	if err != nil {
		return c, err
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE ceiling (id bigserial PRIMARY KEY, v text NOT NULL)"); err != nil {
		return c, err
	}
	// The server is shared: leave at least 30 connections to everyone else.
	spare := c.MaxConnections - c.InUse - 30
	for _, n := range []int{1, 4, 16, 32} {
		if n+1 > spare {
			c.Skipped = append(c.Skipped, fmt.Sprintf("commits with %d connections: only %d spare on the server", n, spare))
			continue
		}
		r, err := hammer(ctx, pool, n, d, func(ctx context.Context, conn *pgxpool.Conn) (int, error) {
			_, err := conn.Exec(ctx, "INSERT INTO ceiling (v) VALUES ('x')")
			return 1, err
		})
		if err != nil {
			return c, fmt.Errorf("capacity: commits with %d connections: %w", n, err)
		}
		c.Commits = append(c.Commits, Rate{n, r})
	}
	rows := "INSERT INTO ceiling (v) SELECT 'x' FROM generate_series(1, 50)"
	for _, n := range []int{1, 16} {
		r, err := hammer(ctx, pool, n, d, func(ctx context.Context, conn *pgxpool.Conn) (int, error) {
			_, err := conn.Exec(ctx, rows)
			return 50, err
		})
		if err != nil {
			return c, fmt.Errorf("capacity: batched commits: %w", err)
		}
		c.BatchedRows = append(c.BatchedRows, Rate{n, r})
	}
	for _, listeners := range []int{1, 4} {
		if listeners+9 > spare {
			c.Skipped = append(c.Skipped, fmt.Sprintf("NOTIFY to %d listeners: only %d spare connections on the server", listeners, spare))
			continue
		}
		r, err := notifyRate(ctx, pool, dbDSN, listeners, d)
		if err != nil {
			return c, fmt.Errorf("capacity: NOTIFY to %d listeners: %w", listeners, err)
		}
		c.Notify = append(c.Notify, Rate{listeners, r})
	}
	return c, nil
}

// hammer runs op on n connections for d and returns the units done per second.
func hammer(ctx context.Context, pool *pgxpool.Pool, n int, d time.Duration, op func(context.Context, *pgxpool.Conn) (int, error)) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Release()
			for ctx.Err() == nil {
				k, err := op(ctx, conn)
				if err != nil {
					if ctx.Err() == nil {
						errs[i] = err
					}
					return
				}
				done.Add(int64(k))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}

// notifyRate has 8 connections send pg_notify, one per transaction, for d while
// listeners connections LISTEN, and returns the notifications per second each listener
// received (the least of them).
func notifyRate(ctx context.Context, pool *pgxpool.Pool, dsn string, listeners int, d time.Duration) (float64, error) {
	counts := make([]atomic.Int64, listeners)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	ready := make(chan error, listeners)
	for i := range listeners {
		wg.Go(func() {
			conn, err := pgx.Connect(lctx, dsn)
			if err != nil {
				ready <- err
				return
			}
			defer conn.Close(context.Background())
			if _, err := conn.Exec(lctx, "LISTEN ceiling"); err != nil {
				ready <- err
				return
			}
			ready <- nil
			for {
				if _, err := conn.WaitForNotification(lctx); err != nil {
					return
				}
				counts[i].Add(1)
			}
		})
	}
	for range listeners {
		if err := <-ready; err != nil {
			stop()
			wg.Wait()
			return 0, err
		}
	}
	start := time.Now()
	var seq atomic.Int64
	_, err := hammer(ctx, pool, 8, d, func(ctx context.Context, conn *pgxpool.Conn) (int, error) {
		_, err := conn.Exec(ctx, "SELECT pg_notify('ceiling', $1)", fmt.Sprint(seq.Add(1)))
		return 1, err
	})
	elapsed := time.Since(start)
	time.Sleep(200 * time.Millisecond) // let the last notifications arrive
	stop()
	wg.Wait()
	if err != nil {
		return 0, err
	}
	least := counts[0].Load()
	for i := range counts {
		least = min(least, counts[i].Load())
	}
	return float64(least) / elapsed.Seconds(), nil
}

// WriteCeiling writes a [Ceiling] as a table.
func WriteCeiling(w io.Writer, c Ceiling) error {
	fmt.Fprintf(w, "%s\nmax_connections %d (%d in use), synchronous_commit %s\n\n", c.Version, c.MaxConnections, c.InUse, c.SyncCommit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tconcurrency\tper second\t")
	for _, r := range c.Commits {
		fmt.Fprintf(tw, "single-row commits\t%d connections\t%.0f\t\n", r.N, r.PerSec)
	}
	for _, r := range c.BatchedRows {
		fmt.Fprintf(tw, "rows, 50 a commit\t%d connections\t%.0f\t\n", r.N, r.PerSec)
	}
	for _, r := range c.Notify {
		fmt.Fprintf(tw, "notifications received, each listener\t%d listeners\t%.0f\t\n", r.N, r.PerSec)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range c.Skipped {
		fmt.Fprintln(w, "  not measured:", s)
	}
	return nil
}
