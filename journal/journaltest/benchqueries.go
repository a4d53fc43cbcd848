package journaltest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// QueryEpoch is the creation time of run 0 in the journals [BenchmarkQueries] measures.
var QueryEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// QueryPending is how many pending parks those journals hold, whatever their size:
// approvals wait for people, so they do not pile up with the runs.
const QueryPending = 200

// QuerySmall is the size of the small journal of [BenchmarkQueries].
const QuerySmall = 1000

// QueryLarge returns the size of the large journal of [BenchmarkQueries]: the
// ENGINE_BENCH_RUNS environment variable, 20,000 when unset, so the single pass CI makes
// over the benchmarks stays short; the published figure sets it to 1000000.
func QueryLarge(tb testing.TB) int {
	if v := os.Getenv("ENGINE_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < QuerySmall {
			tb.Fatalf("ENGINE_BENCH_RUNS=%q: want a number of runs >= %d", v, QuerySmall)
		}
		return n
	}
	return 20000
}

// QueryJournal is a driver filled for [BenchmarkQueries], and the plans of its queries.
type QueryJournal struct {
	Driver journal.Driver
	// Explain returns the database's plan of ListRuns (rq set) or PendingParks.
	Explain func(ctx context.Context, rq *journal.RunQuery, pq journal.ParkQuery) ([]string, error)
}

// BenchmarkQueries measures one page (50) of each operator query on a journal of
// [QuerySmall] runs and one of [QueryLarge], side by side: every iteration reads the
// page from both, in alternating order, and the benchmark reports the time of each
// ("small-ns/page", "large-ns/page") and their ratio ("ratio", target <= 1.5). It logs
// the large journal's query plans.
//
// Every query of the benchmark fills its page on both journals (the small one holds 50
// failed runs, 100 of each flow, 142 of each tenant), and the pending parks are as many
// on both, so the two sides do the same work but for the size of what they skip.
//
// fill returns a migrated driver holding n runs: run i (1..n) has id "r" followed by
// 1000000000+i, flow "flow.<i%10>", tenant "t<i%7>", created at QueryEpoch + i ms,
// status failed when i%20 == 0, running when i%1000 == 1, parked when i%(n/QueryPending)
// == 0, completed otherwise; runs with i%10 == 3 have a decided park "k", the parked ones a
// pending park "k" created with the run.
func BenchmarkQueries(b *testing.B, fill func(b *testing.B, n int) QueryJournal) {
	ctx := context.Background()
	large := QueryLarge(b)
	small, big := fill(b, QuerySmall), fill(b, large)
	mid := func(n int) journal.Cursor {
		i := n / 2
		return journal.Cursor{CreatedAt: QueryEpoch.Add(time.Duration(i) * time.Millisecond), ID: fmt.Sprint("r", 1000000000+i)}
	}
	type query struct {
		name string
		runs func(n int) *journal.RunQuery
		park func(n int) journal.ParkQuery
	}
	const limit = 50
	queries := []query{
		{name: "Runs", runs: func(int) *journal.RunQuery { return &journal.RunQuery{Limit: limit} }},
		{name: "RunsFailed", runs: func(int) *journal.RunQuery { return &journal.RunQuery{Status: journal.StatusFailed, Limit: limit} }},
		{name: "RunsOfFlowDeep", runs: func(n int) *journal.RunQuery {
			return &journal.RunQuery{Flow: "flow.3", After: mid(n), Limit: limit}
		}},
		{name: "RunsOfTenant", runs: func(int) *journal.RunQuery { return &journal.RunQuery{Tenant: "t3", Limit: limit} }},
		{name: "PendingParks", park: func(int) journal.ParkQuery { return journal.ParkQuery{Limit: limit} }},
		{name: "PendingParksOfTenant", park: func(int) journal.ParkQuery { return journal.ParkQuery{Tenant: "t0", Limit: limit} }},
	}
	read := func(j QueryJournal, q query, n int) (int, error) {
		if q.runs != nil {
			rs, err := j.Driver.ListRuns(ctx, *q.runs(n))
			return len(rs), err
		}
		ps, err := j.Driver.PendingParks(ctx, q.park(n))
		return len(ps), err
	}
	for _, q := range queries {
		var rq *journal.RunQuery
		if q.runs != nil {
			rq = q.runs(large)
		}
		var pq journal.ParkQuery
		if q.park != nil {
			pq = q.park(large)
		}
		plan, err := big.Explain(ctx, rq, pq)
		if err != nil {
			b.Fatalf("%s: explain: %v", q.name, err)
		}
		b.Logf("%s plan on %d runs: %q", q.name, large, plan)
		b.Run(q.name, func(b *testing.B) {
			var ts, tl time.Duration
			for i := range b.N {
				order := []bool{false, true}
				if i%2 == 1 {
					order = []bool{true, false}
				}
				for _, isLarge := range order {
					j, n, acc := small, QuerySmall, &ts
					if isLarge {
						j, n, acc = big, large, &tl
					}
					start := time.Now()
					got, err := read(j, q, n)
					*acc += time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					if got == 0 {
						b.Fatalf("%s on %d runs: an empty page", q.name, n)
					}
				}
			}
			b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "small-ns/page")
			b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N), "large-ns/page")
			b.ReportMetric(float64(tl)/float64(ts), "ratio")
		})
	}
}
