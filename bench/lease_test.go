package bench_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
	"github.com/bbc28f59/engine/journal"
)

// BenchmarkLeaseRenewal times one lease renewal pass of an instance that holds 2,000
// durable runs (quiet conversations, each waiting on its model or on a person): with the
// SQL driver's batch renewal (journal.LeaseRenewer: a statement per 100 runs) against
// the same pass a run at a time (the driver behind a wrapper that hides the batch
// method: a write a run, as every renewal was before the batch). Two journals on one
// database hold 2,000 runs each; their passes alternate, the order swapped every
// iteration. batched-ms and each-ms are median passes, x-each the batched pass's time
// over the other's (min and max too), writes/pass the driver calls each pass made (one
// batch renewal, or a RenewLease a run).
func BenchmarkLeaseRenewal(b *testing.B) {
	const held = 2000
	for _, driver := range []string{agentbench.SQLite, agentbench.Postgres} {
		b.Run(driver, func(b *testing.B) {
			ctx := context.Background()
			d, closeDriver, err := agentbench.OpenDriver(ctx, driver, "")
			if errors.Is(err, agentbench.ErrNoPostgres) {
				b.Skip(err.Error())
			}
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(closeDriver)
			counted := &renewalCounter{Driver: d}
			batched := holdRuns(b, &countingRenewer{counted}, "batched", held)
			each := holdRuns(b, counted, "each", held)
			pass := func(j *journal.Journal) (time.Duration, int64) {
				before := counted.writes()
				start := time.Now()
				j.RenewOnce(ctx)
				return time.Since(start), counted.writes() - before
			}
			var bt, et, ratio []float64
			var bw, ew int64
			i := 0
			for b.Loop() {
				var tb, te time.Duration
				if i%2 == 0 {
					tb, bw = pass(batched)
					te, ew = pass(each)
				} else {
					te, ew = pass(each)
					tb, bw = pass(batched)
				}
				i++
				bt, et = append(bt, tb.Seconds()*1e3), append(et, te.Seconds()*1e3)
				ratio = append(ratio, tb.Seconds()/te.Seconds())
			}
			if bw != 1 || ew != held {
				b.Fatalf("a pass made %d writes batched and %d a run at a time, want 1 and %d", bw, ew, held)
			}
			for _, r := range []string{"batched", "each"} {
				if got := counted.lost(r); got != 0 {
					b.Fatalf("%d runs of %s lost their lease", got, r)
				}
			}
			b.ReportMetric(agentbench.Median(bt), "batched-ms")
			b.ReportMetric(agentbench.Median(et), "each-ms")
			b.ReportMetric(agentbench.Median(ratio), "x-each")
			b.ReportMetric(slices.Min(ratio), "x-each-min")
			b.ReportMetric(slices.Max(ratio), "x-each-max")
			b.ReportMetric(float64(bw), "batched-writes/pass")
			b.ReportMetric(float64(ew), "each-writes/pass")
		})
	}
}

// holdRuns opens a journal of owner on d that holds n running durable runs.
func holdRuns(b *testing.B, d journal.Driver, owner string, n int) *journal.Journal {
	b.Helper()
	j, err := journal.New(d, journal.Options{Owner: owner})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = j.Close(context.Background()) })
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				if _, err := j.Begin(context.Background(), journal.NewRun{Flow: "held"}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return j
}

// renewalCounter counts the renewal writes that reach the driver, and the leases they
// found lost by owner. Embedding the interface hides the driver's batch renewal, so a
// journal on it renews a run at a time.
type renewalCounter struct {
	journal.Driver
	n     atomic.Int64
	mu    sync.Mutex
	lostN map[string]int
}

func (c *renewalCounter) count(lost []journal.Fence) {
	c.n.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lostN == nil {
		c.lostN = map[string]int{}
	}
	for _, f := range lost {
		c.lostN[f.Owner]++
	}
}

func (c *renewalCounter) writes() int64 { return c.n.Load() }

func (c *renewalCounter) lost(owner string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostN[owner]
}

func (c *renewalCounter) RenewLease(ctx context.Context, f journal.Fence, expires time.Time) error {
	err := c.Driver.RenewLease(ctx, f, expires)
	var lost []journal.Fence
	if errors.Is(err, journal.ErrLeaseLost) {
		lost = []journal.Fence{f}
	}
	c.count(lost)
	return err
}

// countingRenewer is the counter with the driver's batch renewal.
type countingRenewer struct{ *renewalCounter }

func (c *countingRenewer) RenewLeases(ctx context.Context, fences []journal.Fence, expires time.Time) ([]journal.Fence, error) {
	lost, err := c.Driver.(journal.LeaseRenewer).RenewLeases(ctx, fences, expires)
	c.count(lost)
	return lost, err
}
