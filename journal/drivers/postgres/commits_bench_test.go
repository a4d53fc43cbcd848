package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
)

// BenchmarkLogCommits holds live streams writing tokens at a model's pace (50 a second
// each) through one journal on a database of its own, and reports the commits a second
// Postgres counts for that database (pg_stat_database.xact_commit) and the rows stored a
// second. Run it with -benchtime 1x: each sub-benchmark is one measured window.
func BenchmarkLogCommits(b *testing.B) {
	for _, durable := range []bool{false, true} {
		for _, n := range []int{100, 400, 1000} {
			b.Run(fmt.Sprintf("durable=%v/streams=%d", durable, n), func(b *testing.B) {
				benchLogCommits(b, n, durable)
			})
		}
	}
}

func benchLogCommits(b *testing.B, streams int, durable bool) {
	ctx := context.Background()
	dsnOwn, name := ownDatabase(b)
	db := testenv.PostgresDB(b, dsnOwn)
	d, err := postgres.New(db, postgres.Options{Listener: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsnOwn) }})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	j, err := journal.New(d, journal.Options{Owner: "bench", LogPolicy: &journal.LogPolicy{
		Deltas: []journal.DeltaType{{Type: "TEXT_MESSAGE_CONTENT", Key: "messageId", Text: "delta"}},
		Ends:   []string{"RUN_FINISHED"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close(ctx)
	ws := make([]*journal.LogWriter, streams)
	for i := range ws {
		s := journal.Stream{ID: fmt.Sprintf("s-%d", i), Flow: "f"}
		var run *journal.Run
		if durable {
			if run, err = j.Begin(ctx, journal.NewRun{Flow: "f", Input: json.RawMessage(`{}`)}); err != nil {
				b.Fatal(err)
			}
			s.RunID = run.ID
		}
		if ws[i], err = j.CreateLog(ctx, s, run, journal.LogOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	// One loop writes a token to every stream each 20 ms: 50 tokens a second each.
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var tokens int64
		for k := 0; ; k++ {
			select {
			case <-stop:
				done <- tokens
				return
			case <-t.C:
			}
			for _, w := range ws {
				if k%100 == 0 { // a structural event now and then, as a reply has
					if _, err := w.Write(ctx, json.RawMessage(`{"type":"TEXT_MESSAGE_START","messageId":"m"}`)); err != nil {
						b.Error(err)
					}
				}
				if _, err := w.WriteDelta(ctx, "TEXT_MESSAGE_CONTENT", "m", "tok "); err != nil {
					b.Error(err)
				}
				tokens++
			}
		}
	}()
	time.Sleep(2 * time.Second) // warm up
	c0 := commits(b, name)
	var r0 int
	for _, w := range ws {
		r0 += w.Stats().Rows
	}
	start := time.Now()
	time.Sleep(5 * time.Second)
	c1 := commits(b, name)
	elapsed := time.Since(start)
	var r1 int
	for _, w := range ws {
		r1 += w.Stats().Rows
	}
	close(stop)
	tokens := <-done
	for _, w := range ws {
		_ = w.Close(ctx)
	}
	b.ReportMetric(float64(c1-c0)/elapsed.Seconds(), "commits/s")
	b.ReportMetric(float64(r1-r0)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(tokens), "tokens")
}

// ownDatabase creates a database for one benchmark, dropped at cleanup, so that its
// commits are the only ones counted, and returns its DSN and name.
func ownDatabase(tb testing.TB) (string, string) {
	tb.Helper()
	base := dsn(tb)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	name := "jt_commits_" + uniquePrefix()[3:13]
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String(), name
}

// commits reads the commits Postgres counted for database name.
func commits(tb testing.TB, name string) int64 {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), dsn(tb))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), "SELECT xact_commit FROM pg_stat_database WHERE datname = $1", name).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
