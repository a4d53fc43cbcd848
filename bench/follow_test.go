package bench_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
)

// drivers are the journal drivers the follow and approval benchmarks run on; Postgres
// skips with the reason when ENGINE_TEST_POSTGRES_DSN is unset.
var drivers = []string{agentbench.Memory, agentbench.SQLite, agentbench.Postgres}

// BenchmarkFollowResume reconnects to GET /agent/runs/:runId/events of a
// finished durable run (100 deltas, stored rows) with Last-Event-ID set to the middle of
// its log and times the first frame, alternating serially with a plain request — a tiny
// RPC flow call read to its end — on the same instance in the same run. x-plain is resume
// latency over plain latency. follow-µs and plain-µs are the mean times per request.
//
// On SQLite and Postgres the run executes on instance A, and the follower resumes:
//
//   - same-instance: on A, which answers from the rows it committed;
//   - other-instance: on B, a second app with its own driver, journal and server on the
//     same database, which has read the run before (a client that followed it there
//     reconnects there): B answers from the rows it read;
//   - other-instance-first-read: on B with its follow tail off, so every resume reads
//     the database, as the first resume of a run on an instance does.
func BenchmarkFollowResume(b *testing.B) {
	for _, driver := range drivers {
		paths := []string{"same-instance", "other-instance", "other-instance-first-read"}
		if driver == agentbench.Memory {
			paths = []string{""} // the memory journal lives in one process
		}
		for _, path := range paths {
			name := driver
			if path != "" {
				name += "/" + path
			}
			b.Run(name, func(b *testing.B) {
				benchFollowResume(b, driver, path)
			})
		}
	}
}

func benchFollowResume(b *testing.B, driver, path string) {
	ctx := context.Background()
	a := newEnv(b, agentbench.Options{Deltas: 100, Driver: driver})
	e := a
	if strings.HasPrefix(path, "other-instance") {
		e = newEnv(b, agentbench.Options{Deltas: 100, Driver: driver, SameDatabase: a, NoTail: path == "other-instance-first-read"})
	}
	runID, last, err := a.StoredRun(ctx)
	if err != nil {
		b.Fatal(err)
	}
	after := last / 2
	follow := func() time.Duration {
		d, err := e.FollowFirstFrame(ctx, runID, after)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	plain := func() time.Duration {
		d, err := e.Ping(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	for range 50 {
		follow()
		plain()
	}
	var f, p time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			f += follow()
			p += plain()
		} else {
			p += plain()
			f += follow()
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(f.Nanoseconds())/n/1e3, "follow-µs")
	b.ReportMetric(float64(p.Nanoseconds())/n/1e3, "plain-µs")
	b.ReportMetric(float64(f)/float64(p), "x-plain")
}

// BenchmarkApprovalCycle runs park → decide → resume cycles through the real
// routes: POST a durable chat flow whose agent calls a tool that needs approval (the run
// parks; its stream ends with the interrupt), POST /agent/approvals/approve, and follow
// the run from the last frame seen until it finishes with the tool's result. One op is
// one cycle, serially; cycles/s is the rate.
func BenchmarkApprovalCycle(b *testing.B) {
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) {
			ctx := context.Background()
			e := newEnv(b, agentbench.Options{Deltas: 10, Driver: driver})
			for range 5 {
				if err := e.ApprovalCycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if err := e.ApprovalCycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
		})
	}
}
