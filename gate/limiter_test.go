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
	sqlLimiter := func(open func(testing.TB) *bun.DB) func(t *testing.T) gate.Limiter {
		return func(t *testing.T) gate.Limiter {
			db := open(t)
			table := fmt.Sprintf("rl_test_%d_%d", time.Now().UnixNano()%1e9, tableSeq.Add(1))
			s, err := gate.NewSQLLimiter(db, l, gate.WithTable(table), gate.WithNow(clock.Now))
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
			m, err := gate.NewMemoryLimiter(l, gate.WithNow(clock.Now))
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
			t.Run("peek takes nothing", func(t *testing.T) {
				clock := newClock()
				lim := limiters(t, gate.Limit{Events: 2, Per: 10 * time.Second}, clock)[name](t).(gate.Peeker)
				ctx := context.Background()
				peek := func() string {
					ok, retry, err := lim.Peek(ctx, "k")
					if err != nil {
						t.Fatal(err)
					}
					return fmt.Sprint(ok, " ", retry)
				}
				for range 5 {
					if got := peek(); got != "true 0s" {
						t.Fatalf("peek of a full bucket: %s", got)
					}
				}
				for i := range 2 {
					if ok, _, err := lim.Allow(ctx, "k"); !ok || err != nil {
						t.Fatalf("call %d after peeks: %v %v", i, ok, err)
					}
				}
				if got := peek(); got != "false 5s" {
					t.Fatalf("peek of an empty bucket: %s", got)
				}
				clock.Advance(2 * time.Second)
				if got := peek(); got != "false 3s" {
					t.Fatalf("peek 2 s on: %s", got)
				}
				// A clock that steps back sees the level of the last decision, no less.
				clock.Advance(-time.Hour)
				if got := peek(); got != "false 5s" {
					t.Fatalf("peek with the clock stepped back: %s", got)
				}
				clock.Advance(time.Hour + 3*time.Second)
				if got := peek(); got != "true 0s" {
					t.Fatalf("peek after the wait: %s", got)
				}
				if ok, _, _ := lim.Allow(ctx, "k"); !ok {
					t.Fatal("no token after the wait")
				}
				if got := peek(); got != "false 5s" {
					t.Fatalf("peek after taking the refilled token: %s", got)
				}
			})
			// Retry times are exact to the millisecond: 0.7 of a token refilled
			// leaves 3 s to wait, not 3.001 s, so the level is stored at full
			// precision (a 4-byte float would hold 0.69999999).
			t.Run("retry-after is exact", func(t *testing.T) {
				clock := newClock()
				lim := limiters(t, gate.Limit{Events: 1, Per: 10 * time.Second}, clock)[name](t)
				ctx := context.Background()
				if ok, _, err := lim.Allow(ctx, "k"); !ok || err != nil {
					t.Fatalf("first call: %v %v", ok, err)
				}
				clock.Advance(7 * time.Second)
				for range 2 {
					if ok, retry, err := lim.Allow(ctx, "k"); ok || err != nil || retry != 3*time.Second {
						t.Fatalf("7 s on: ok %v retry %v err %v", ok, retry, err)
					}
				}
			})
			// Waiting exactly the retry time finds a token, at limits whose refill
			// per millisecond has no exact binary fraction (1/900000 for one token
			// every 15 minutes), for Allow and for Peek.
			t.Run("a token at the retry time", func(t *testing.T) {
				for _, l := range []gate.Limit{gate.DefaultFailuresPerEmail, gate.DefaultAttemptsPerIP, {Events: 3, Per: 7 * time.Second}} {
					clock := newClock()
					lim := limiters(t, l, clock)[name](t).(gate.Peeker)
					ctx := context.Background()
					for {
						if ok, _, err := lim.Allow(ctx, "k"); err != nil || !ok {
							break
						}
					}
					_, retry, err := lim.Peek(ctx, "k")
					if err != nil || retry <= time.Millisecond {
						t.Fatalf("%+v: retry %v, err %v", l, retry, err)
					}
					clock.Advance(retry - time.Millisecond)
					if ok, left, _ := lim.Peek(ctx, "k"); ok || left != time.Millisecond {
						t.Fatalf("%+v: a millisecond early: peek %v, %v left", l, ok, left)
					}
					clock.Advance(time.Millisecond)
					if ok, left, _ := lim.Peek(ctx, "k"); !ok || left != 0 {
						t.Fatalf("%+v: peek at the retry time %v: %v, %v left", l, retry, ok, left)
					}
					if ok, left, _ := lim.Allow(ctx, "k"); !ok {
						t.Fatalf("%+v: no token at the retry time %v (%v left)", l, retry, left)
					}
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
	m, err := gate.NewMemoryLimiter(gate.Limit{Events: 10, Per: time.Minute}, gate.WithNow(clock.Now))
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

// Peeking at a key that has no bucket creates none.
func TestMemoryLimiterPeekAddsNoBucket(t *testing.T) {
	t.Parallel()
	m, err := gate.NewMemoryLimiter(gate.Limit{Events: 1, Per: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := m.Peek(context.Background(), "k"); !ok || err != nil || m.Len() != 0 {
		t.Fatalf("peek: %v %v, %d buckets", ok, err, m.Len())
	}
}

func TestNoLimit(t *testing.T) {
	t.Parallel()
	for range 100 {
		if ok, _, err := gate.NoLimit.Allow(context.Background(), "k"); !ok || err != nil {
			t.Fatal("NoLimit refused")
		}
	}
	if ok, retry, err := gate.NoLimit.Peek(context.Background(), "k"); !ok || retry != 0 || err != nil {
		t.Fatal("NoLimit refused a peek")
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
	s, err := gate.NewSQLLimiter(openSQLite(t), gate.Limit{Events: 10, Per: time.Minute}, gate.WithNow(clock.Now))
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
	clock.Advance(30 * time.Second)
	_, _, _ = s.Allow(ctx, "half full") // not yet refilled at the prune
	clock.Advance(30 * time.Second)
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

// A bucket is forgotten only once it has refilled: one drawn recently survives a sweep,
// so forgetting never hands out a token early.
func TestMemoryLimiterKeepsBucketsUntilRefilled(t *testing.T) {
	t.Parallel()
	clock := newClock()
	m, err := gate.NewMemoryLimiter(gate.Limit{Events: 1, Per: time.Minute}, gate.WithNow(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clock.Advance(50 * time.Second)
	if ok, _, _ := m.Allow(ctx, "k"); !ok {
		t.Fatal("first call refused")
	}
	clock.Advance(10 * time.Second)
	_, _, _ = m.Allow(ctx, "other") // a minute since the limiter began: a sweep
	if ok, retry, _ := m.Allow(ctx, "k"); ok || retry != 50*time.Second {
		t.Fatalf("k 10 s after its last token: ok %v, retry %v; want 50 s to wait", ok, retry)
	}
	if m.Len() != 2 {
		t.Fatalf("%d buckets, want k and other", m.Len())
	}
}

// One option type serves both limiters; the SQL table makes no sense in memory, and
// saying so beats ignoring it.
func TestMemoryLimiterRefusesATable(t *testing.T) {
	if _, err := gate.NewMemoryLimiter(gate.Limit{Events: 1, Per: time.Second}, gate.WithTable("t")); err == nil {
		t.Fatal("NewMemoryLimiter took WithTable")
	}
	if _, err := gate.NewMemoryLimiter(gate.Limit{Events: 1, Per: time.Second}, gate.WithNow(time.Now)); err != nil {
		t.Fatal(err)
	}
}

// Peek and Allow of an SQL limiter agree at the level where a bucket holds a token: a row
// that holds just that much (a billionth under 1, the tolerance for float error in the
// refill) is allowed by both, and one a billionth below it by neither.
func TestSQLLimiterWholeTokenLevel(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *bun.DB{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			clock := newClock()
			table := fmt.Sprintf("rl_level_%d_%d", time.Now().UnixNano()%1e9, tableSeq.Add(1))
			s, err := gate.NewSQLLimiter(db, gate.Limit{Events: 1, Per: time.Hour}, gate.WithTable(table), gate.WithNow(clock.Now))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.CreateTable(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+table) })
			const level = 1 - 1e-9
			for _, tc := range []struct {
				tokens float64
				want   bool
			}{{level, true}, {level - 1e-9, false}} {
				set := func() {
					t.Helper()
					if _, err := db.ExecContext(ctx, "DELETE FROM "+table); err != nil {
						t.Fatal(err)
					}
					if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" (bucket, tokens, updated_ms, ok) VALUES ('k', ?, ?, FALSE)", tc.tokens, clock.Now().UnixMilli()); err != nil {
						t.Fatal(err)
					}
				}
				set()
				peek, _, err := s.Peek(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				set()
				allow, _, err := s.Allow(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if peek != tc.want || allow != tc.want {
					t.Errorf("a bucket of %.12f tokens: peek %v, allow %v, want %v", tc.tokens, peek, allow, tc.want)
				}
			}
		})
	}
}
