package bench_test

import (
	"context"
	"slices"
	"testing"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
)

// BenchmarkIdleDurableMemory is the guard of memory per idle open durable stream: on
// every journal driver (memory, SQLite, Postgres) it holds 500 durable agent runs open
// whose model waits an hour before its first chunk — a conversation waiting on its model —
// against 500 raw SSE streams that sent the same opening frames and block, and reports
// the durable stream's HeapInuse+StackInuse growth over raw's (x-raw; target ≤ 1.25).
// Raw and durable alternate in batches, the order swapped every iteration, so both meet
// the same process and machine; the figures are the median, min and max over iterations
// (run with -benchtime 5x). stack-B/stream shows how much of a durable stream is its
// goroutine's stack, which grows while the handler waits on the model inside the
// journal's step. live-B/stream is the bytes of the heap objects a stream keeps
// (HeapAlloc growth): the heap figure minus it is span room those objects keep from
// reuse, which the SQL journals' garbage, allocated while the streams open, makes larger;
// x-raw-live is the ratio on live heap objects and stacks.
func BenchmarkIdleDurableMemory(b *testing.B) {
	const streams = 500
	for _, driver := range []string{agentbench.Memory, agentbench.SQLite, agentbench.Postgres} {
		b.Run(driver, func(b *testing.B) {
			ctx := context.Background()
			e := newEnv(b, agentbench.Options{Deltas: 10, Driver: driver})
			var ratio, liveRatio, raw, dur, rawStack, durStack, rawLive, durLive []float64
			i := 0
			for b.Loop() {
				order := []agentbench.Target{agentbench.Raw, agentbench.Durable}
				if i%2 == 1 {
					slices.Reverse(order)
				}
				i++
				got := map[agentbench.Target]agentbench.Idle{}
				for _, t := range order {
					v, err := e.IdleMemory(ctx, t, streams)
					if err != nil {
						b.Fatal(err)
					}
					got[t] = v
				}
				r, d := got[agentbench.Raw], got[agentbench.Durable]
				if r.Total() <= 0 {
					b.Fatalf("raw idle streams measured %.0f B each: no baseline to compare with", r.Total())
				}
				ratio = append(ratio, d.Total()/r.Total())
				raw, dur = append(raw, r.Total()), append(dur, d.Total())
				rawStack, durStack = append(rawStack, r.Stack), append(durStack, d.Stack)
				rawLive, durLive = append(rawLive, r.Live), append(durLive, d.Live)
				liveRatio = append(liveRatio, (d.Live+d.Stack)/(r.Live+r.Stack))
			}
			b.ReportMetric(agentbench.Median(ratio), "x-raw")
			b.ReportMetric(slices.Min(ratio), "x-raw-min")
			b.ReportMetric(slices.Max(ratio), "x-raw-max")
			b.ReportMetric(agentbench.Median(raw), "raw-B/stream")
			b.ReportMetric(agentbench.Median(dur), "durable-B/stream")
			b.ReportMetric(agentbench.Median(rawStack), "raw-stack-B/stream")
			b.ReportMetric(agentbench.Median(durStack), "durable-stack-B/stream")
			b.ReportMetric(agentbench.Median(rawLive), "raw-live-B/stream")
			b.ReportMetric(agentbench.Median(durLive), "durable-live-B/stream")
			b.ReportMetric(agentbench.Median(liveRatio), "x-raw-live")
		})
	}
}
