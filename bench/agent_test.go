package bench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
)

// BenchmarkAgentStream streams N concurrent agent runs of M text deltas each
// through the scripted provider over loopback TCP, read with the real SSE reader, on a
// memory journal so the event log writer runs; the flow is plain ("agent") or durable
// ("durable"). "unlogged" is the plain flow in an app without a journal: the streaming
// path alone, without the event log. The baseline ("raw") is a handler writing the same
// captured frames through the same SSE writer: same bytes, same count. One iteration is
// one round of the four targets' batches; the metrics are medians over the rounds:
//
//   - <target>-frames/s, and <target>-x-raw: throughput over raw (target ≥ 0.7)
//   - <target>-allocs/frame, <target>-B/frame: whole process, reader included
//   - <target>-cpu-ns/frame and <target>-x-raw-cpu: process CPU per frame and its ratio,
//     which the shared machine's other load does not move (frames/s does)
//   - <target>-writes/frame: server socket writes (flushes) per frame
//   - <target>-ttff-µs: time to first frame of a single stream, read after the batch
//   - <target>-rows/1k: stored log rows per 1,000 deltas (read from the journal after the round)
//
// The paced case makes the provider wait before every chunk (the raw handler waits the
// same), as a real model does; it shows the log coalescing under realistic timing.
func BenchmarkAgentStream(b *testing.B) {
	cases := []struct {
		n, m int
		pace time.Duration
	}{
		{n: 16, m: 200},
		{n: 64, m: 50},
		{n: 32, m: 100, pace: time.Millisecond},
	}
	for _, c := range cases {
		name := fmt.Sprintf("N=%d/M=%d/pace=%s", c.n, c.m, c.pace)
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			e := newEnv(b, agentbench.Options{Deltas: c.m, Pace: c.pace})
			if _, err := e.Round(ctx, c.n, 0); err != nil { // warm up
				b.Fatal(err)
			}
			var rounds [][]agentbench.Sample
			for i := 0; b.Loop(); i++ {
				r, err := e.Round(ctx, c.n, i)
				if err != nil {
					b.Fatal(err)
				}
				rounds = append(rounds, r)
			}
			sum, err := agentbench.Summarize(rounds)
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range sum {
				t := metricName(s.Target)
				b.ReportMetric(s.FramesPerSec, t+"-frames/s")
				b.ReportMetric(s.AllocsPerFrame, t+"-allocs/frame")
				b.ReportMetric(s.BytesPerFrame, t+"-B/frame")
				b.ReportMetric(float64(s.FirstFrame.Nanoseconds())/1e3, t+"-ttff-µs")
				b.ReportMetric(float64(s.CPUPerFrame.Nanoseconds()), t+"-cpu-ns/frame")
				b.ReportMetric(s.WritesPerFrame, t+"-writes/frame")
				if s.Target != agentbench.Raw {
					b.ReportMetric(s.XRaw, t+"-x-raw")
					b.ReportMetric(s.XRawCPU, t+"-x-raw-cpu")
				}
				if s.Target.Logged() {
					b.ReportMetric(s.RowsPer1k, t+"-rows/1k")
				}
			}
		})
	}
}

// BenchmarkAgentHandler serves one streamed run at a time through each target's
// handler in the process, with no network: the agent flows' cost per run against the raw
// handler replaying the same frames. It is the low-noise companion of
// BenchmarkAgentStream, for telling whether a change to the agent path helped: ns/op is
// one whole run of 200 deltas; <target>-µs-over-raw is what the run costs beyond the raw
// handler writing its frames.
func BenchmarkAgentHandler(b *testing.B) {
	for _, driver := range []string{agentbench.Memory, agentbench.SQLite} {
		e := newEnv(b, agentbench.Options{Deltas: 200, Driver: driver})
		var rawNs float64 // set by the raw sub-benchmark, which runs first
		for _, t := range agentbench.Targets {
			b.Run(driver+"/"+string(t), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					e.ServeInProcess(t)
				}
				perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if t == agentbench.Raw {
					rawNs = perOp
				} else if rawNs > 0 {
					b.ReportMetric((perOp-rawNs)/1e3, metricName(t)+"-µs-over-raw")
				}
			})
		}
	}
}

// BenchmarkAgentIdleMemory holds 500 idle streams open per target — agent runs
// whose model waits an hour before its first chunk, and a raw SSE handler that sends the
// same opening frames and blocks — and reports HeapInuse+StackInuse growth per open
// stream (after a GC, before and after opening; the client side is a bare TCP connection
// that keeps no goroutine or buffer); <target>-stack-B/stream is the goroutine-stack part
// of the figure. x-raw is the agent's figure over raw (target ≤ 1.3).
// Medians over iterations; run with -benchtime=3x.
func BenchmarkAgentIdleMemory(b *testing.B) {
	const streams = 500
	// The journal holds a durable run's records in the process only with the memory
	// driver; on SQLite they live in the database, which is what a deployment sees.
	for _, driver := range []string{agentbench.Memory, agentbench.SQLite} {
		b.Run(driver, func(b *testing.B) {
			ctx := context.Background()
			e := newEnv(b, agentbench.Options{Deltas: 10, Driver: driver})
			per := map[agentbench.Target][]float64{}
			stack := map[agentbench.Target][]float64{}
			ratio := map[agentbench.Target][]float64{}
			for b.Loop() {
				got := map[agentbench.Target]float64{}
				for _, t := range agentbench.Targets {
					v, err := e.IdleMemory(ctx, t, streams)
					if err != nil {
						b.Fatal(err)
					}
					got[t] = v.Total()
					per[t] = append(per[t], v.Total())
					stack[t] = append(stack[t], v.Stack)
				}
				for _, t := range agentbench.Targets[1:] {
					ratio[t] = append(ratio[t], got[t]/got[agentbench.Raw])
				}
			}
			for _, t := range agentbench.Targets {
				b.ReportMetric(agentbench.Median(per[t]), metricName(t)+"-B/stream")
				b.ReportMetric(agentbench.Median(stack[t]), metricName(t)+"-stack-B/stream")
				if t != agentbench.Raw {
					b.ReportMetric(agentbench.Median(ratio[t]), metricName(t)+"-x-raw")
				}
			}
		})
	}
}

// metricName shortens a target for metric units ("agent-durable" → "durable").
func metricName(t agentbench.Target) string {
	return strings.TrimPrefix(string(t), "agent-")
}
