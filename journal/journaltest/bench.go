package journaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// Baseline is the hand-written equivalent of one park → claim → complete cycle, issuing
// the same statements as the driver (raw SQL on the same handle, or a plain map and
// mutex for the memory driver) so [Benchmark] can report the journal's overhead. i is
// unique per call; run ids derived from it must not collide with the journal's.
type Baseline func(ctx context.Context, i int) error

// Benchmark measures a driver: the journal's park → claim → complete cycle against the
// hand-written baseline in the same run (metric "ratio", target >= 0.8), raw event appends
// per second, and the [journal.LogWriter]'s coalescing at 50, 200 and 1,000 deltas/s on a
// fake clock (stored rows and commits per 1,000 deltas, and commits per streamed second,
// target <= 10). newBaseline gets the driver under test so it can share its handle.
func Benchmark(b *testing.B, newDriver func(b *testing.B) journal.Driver, newBaseline func(b *testing.B, d journal.Driver) Baseline) {
	b.Run("Cycle", func(b *testing.B) {
		d := newDriver(b)
		clock := NewClock()
		j, err := journal.New(d, journal.Options{Owner: "bench", Now: clock.Now, LogPolicy: policy})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close(context.Background()) //nolint:errcheck
		base := newBaseline(b, d)
		ctx := context.Background()
		in := json.RawMessage(`{"q":"hello"}`)
		b.ResetTimer()
		// Interleave the two so table growth and machine noise hit both alike.
		var jt, bt time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := journalCycle(ctx, j, in); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if err := base(ctx, i); err != nil {
				b.Fatal(err)
			}
			jt += mid.Sub(start)
			bt += time.Since(mid)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/jt.Seconds(), "cycles/s")
		b.ReportMetric(float64(b.N)/bt.Seconds(), "raw-cycles/s")
		b.ReportMetric(bt.Seconds()/jt.Seconds(), "ratio")
	})
	b.Run("Append", func(b *testing.B) {
		d := newDriver(b)
		j, err := journal.New(d, journal.Options{Owner: "bench", LogPolicy: policy})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close(context.Background()) //nolint:errcheck
		ctx := context.Background()
		if err := j.CreateStream(ctx, journal.Stream{ID: "bench"}); err != nil {
			b.Fatal(err)
		}
		ev := json.RawMessage(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"hello world"}`)
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := j.AppendEvents(ctx, "bench", nil, journal.EventRow{Seq: int64(i + 1), Event: ev}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
	})
	// The writer paces itself on the wall clock, so the coalescing cases run at 10x speed:
	// intervals a tenth of the defaults, deltas ten times as fast. Rows per 1,000 deltas
	// and commits per (scaled) second are what the default options give at the named rate.
	const speedup = 10
	scaled := journal.LogOptions{FlushInterval: 100 * time.Millisecond / speedup, CommitInterval: 100 * time.Millisecond / speedup}
	for _, rate := range []int{50, 200, 1000} {
		b.Run(fmt.Sprintf("Coalesce/%d-deltas-per-s", rate), func(b *testing.B) {
			d := newDriver(b)
			j, err := journal.New(d, journal.Options{Owner: "bench", LogPolicy: policy})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close(context.Background()) //nolint:errcheck
			ctx := context.Background()
			var rows, commits int
			deltas := 2 * rate // two seconds of stream at the named rate
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := coalesceStream(ctx, j, scaled, fmt.Sprintf("s%d", i), deltas, rate*speedup)
				if err != nil {
					b.Fatal(err)
				}
				rows += st.Rows
				commits += st.Commits
			}
			b.ReportMetric(float64(rows)/float64(b.N)/float64(deltas)*1000, "rows/1000deltas")
			b.ReportMetric(float64(commits)/float64(b.N)/float64(deltas)*1000, "commits/1000deltas")
			b.ReportMetric(float64(commits)/float64(b.N)/2, "commits/s")
		})
	}
}

// journalCycle is one park → claim → complete cycle through the public API.
func journalCycle(ctx context.Context, j *journal.Journal, in json.RawMessage) error {
	r, err := j.Begin(ctx, journal.NewRun{Flow: "bench", Input: in})
	if err != nil {
		return err
	}
	if _, err := r.Park(ctx, "k", time.Time{}, in); err != nil {
		return err
	}
	if err := r.Suspend(ctx); err != nil {
		return err
	}
	if err := j.Decide(ctx, r.ID, "k", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
		return err
	}
	r2, err := j.Claim(ctx, r.ID)
	if err != nil {
		return err
	}
	return r2.Complete(ctx, in)
}

// coalesceStream streams n text deltas at rate per second of wall time through a log
// writer and returns what it committed. Deltas keep to a schedule (the i-th is due at
// i/rate), so sleep granularity does not change the average rate.
func coalesceStream(ctx context.Context, j *journal.Journal, opts journal.LogOptions, id string, n, rate int) (journal.LogStats, error) {
	if err := j.CreateStream(ctx, journal.Stream{ID: id}); err != nil {
		return journal.LogStats{}, err
	}
	w, err := j.NewLogWriter(ctx, id, nil, opts)
	if err != nil {
		return journal.LogStats{}, err
	}
	step := time.Second / time.Duration(rate)
	ev := json.RawMessage(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"tok "}`)
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * step)); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := w.Write(ctx, ev); err != nil {
			return journal.LogStats{}, err
		}
	}
	if err := w.Close(ctx); err != nil {
		return journal.LogStats{}, err
	}
	return w.Stats(), nil
}
