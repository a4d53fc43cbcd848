package gate_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/gate"
	"github.com/uptrace/bun"
)

var tableSeq atomic.Int64

// limiters builds every Limiter implementation with the same limit and clock, so one
// suite checks them all; the Postgres one is skipped, saying so, without a DSN.
func limiters(t *testing.T, l gate.Limit, clock *fakeClock) map[string]func(t *testing.T) gate.Limiter {
	sqlLimiter := func(open func(*testing.T) *bun.DB) func(t *testing.T) gate.Limiter {
		return func(t *testing.T) gate.Limiter {
			db := open(t)
			table := fmt.Sprintf("rl_test_%d_%d", time.Now().UnixNano()%1e9, tableSeq.Add(1))
			s, err := gate.NewSQLLimiter(db, l, gate.WithSQLTable(table), gate.WithSQLClock(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CreateTable(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+table) })
			return s
		}
	}
	return map[string]func(t *testing.T) gate.Limiter{
		"memory": func(t *testing.T) gate.Limiter {
			m, err := gate.NewMemoryLimiter(l, gate.WithLimiterClock(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"sqlite":   sqlLimiter(openSQLite),
		"postgres": sqlLimiter(openPostgres),
	}
}

func TestLimiters(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("exact count under 50 concurrent callers", func(t *testing.T) {
				clock := newClock()
				lim := limiters(t, gate.Limit{Events: 7, Per: time.Minute}, clock)[name](t)
				var ok atomic.Int32
				var wg sync.WaitGroup
				for range 50 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						allowed, _, err := lim.Allow(context.Background(), "k")
						if err != nil {
							t.Error(err)
						}
						if allowed {
							ok.Add(1)
						}
					}()
				}
				wg.Wait()
				if ok.Load() != 7 {
					t.Fatalf("allowed %d, want 7", ok.Load())
				}
			})
			t.Run("refill and retry-after", func(t *testing.T) {
				clock := newClock()
				lim := limiters(t, gate.Limit{Events: 2, Per: 10 * time.Second}, clock)[name](t)
				ctx := context.Background()
				for i := range 2 {
					if ok, _, err := lim.Allow(ctx, "k"); !ok || err != nil {
						t.Fatalf("call %d: %v %v", i, ok, err)
					}
				}
				ok, retry, err := lim.Allow(ctx, "k")
				if ok || err != nil || retry != 5*time.Second {
					t.Fatalf("over the limit: ok %v retry %v err %v", ok, retry, err)
				}
				clock.Advance(2 * time.Second)
				if _, retry, _ := lim.Allow(ctx, "k"); retry != 3*time.Second {
					t.Fatalf("retry after 2 s = %v, want 3s", retry)
				}
				clock.Advance(3 * time.Second)
				if ok, _, _ := lim.Allow(ctx, "k"); !ok {
					t.Fatal("no token after the wait")
				}
				if ok, _, _ := lim.Allow(ctx, "other"); !ok {
					t.Fatal("keys share a bucket")
				}
				// A clock that steps back never costs tokens.
				clock.Advance(-time.Hour)
				if ok, _, _ := lim.Allow(ctx, "other"); !ok {
					t.Fatal("clock step back lost a token")
				}
			})
			t.Run("burst", func(t *testing.T) {
				clock := newClock()
				lim := limiters(t, gate.Limit{Events: 1, Per: time.Second, Burst: 3}, clock)[name](t)
				n := 0
				for range 10 {
					if ok, _, _ := lim.Allow(context.Background(), "k"); ok {
						n++
					}
				}
				if n != 3 {
					t.Fatalf("burst let %d through, want 3", n)
				}
			})
		})
	}
}

func TestMemoryLimiterEvictsIdleBuckets(t *testing.T) {
	t.Parallel()
	clock := newClock()
	m, err := gate.NewMemoryLimiter(gate.Limit{Events: 10, Per: time.Minute}, gate.WithLimiterClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 100 {
		_, _, _ = m.Allow(ctx, fmt.Sprint(i))
	}
	if m.Len() != 100 {
		t.Fatalf("len = %d", m.Len())
	}
	clock.Advance(time.Minute) // every bucket is full again
	_, _, _ = m.Allow(ctx, "fresh")
	if m.Len() != 1 {
		t.Fatalf("len after idle = %d, want 1", m.Len())
	}
}

func TestLimitValidation(t *testing.T) {
	t.Parallel()
	for _, l := range []gate.Limit{{}, {Events: 1}, {Per: time.Second}, {Events: 1, Per: time.Second, Burst: -1}} {
		if _, err := gate.NewMemoryLimiter(l); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	if _, err := gate.NewSQLLimiter(nil, gate.Limit{Events: 1, Per: time.Second}); err == nil {
		t.Error("nil db accepted")
	}
}

func TestSQLLimiterPrune(t *testing.T) {
	t.Parallel()
	clock := newClock()
	s, err := gate.NewSQLLimiter(openSQLite(t), gate.Limit{Events: 10, Per: time.Minute}, gate.WithSQLClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		_, _, _ = s.Allow(ctx, fmt.Sprint("old", i))
	}
	clock.Advance(time.Minute)
	_, _, _ = s.Allow(ctx, "recent")
	n, err := s.Prune(ctx)
	if err != nil || n != 5 {
		t.Fatalf("pruned %d, %v; want 5", n, err)
	}
	// The recent bucket kept its state: 9 tokens left.
	allowed := 0
	for range 20 {
		if ok, _, _ := s.Allow(ctx, "recent"); ok {
			allowed++
		}
	}
	if allowed != 9 {
		t.Fatalf("recent bucket allowed %d more, want 9", allowed)
	}
}
