package gate

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MemoryLimiter is a [Limiter] of in-process token buckets (golang.org/x/time/rate), one
// per key. Buckets idle long enough to be full again are evicted lazily while other calls
// come in, so the map stays as small as the set of recently active keys without a
// background goroutine. Limits are per process: behind a load balancer each instance
// counts on its own; use [SQLLimiter] to share them.
type MemoryLimiter struct {
	limit Limit
	now   func() time.Time
	idle  time.Duration

	mu        sync.Mutex
	buckets   map[string]*memBucket
	lastSweep time.Time
}

type memBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewMemoryLimiter returns an in-memory limiter applying l to every key. Of the
// [LimiterOption]s it takes [WithNow].
func NewMemoryLimiter(l Limit, opts ...LimiterOption) (*MemoryLimiter, error) {
	l, err := l.validate()
	if err != nil {
		return nil, err
	}
	c := limiterConfig{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.table != "" {
		return nil, errors.New("gate.NewMemoryLimiter: WithTable is for SQL limiters")
	}
	m := &MemoryLimiter{limit: l, now: c.now, buckets: map[string]*memBucket{}}
	// A bucket idle for this long has refilled completely, so forgetting it changes no
	// decision: a new bucket starts full too.
	m.idle = time.Duration(float64(l.Burst) / l.perSecond() * float64(time.Second))
	if m.idle < time.Second {
		m.idle = time.Second
	}
	m.lastSweep = m.now()
	return m, nil
}

// Allow implements [Limiter].
func (m *MemoryLimiter) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.lastSweep) >= m.idle {
		m.sweep(now)
	}
	b := m.buckets[key]
	if b == nil {
		b = &memBucket{lim: rate.NewLimiter(rate.Limit(m.limit.perSecond()), m.limit.Burst)}
		m.buckets[key] = b
	}
	if now.After(b.seen) {
		b.seen = now
	}
	if b.lim.AllowN(now, 1) {
		return true, 0, nil
	}
	r := b.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return false, roundUpMs(wait), nil
}

// Peek implements [Peeker]. A key without a bucket has a full one waiting, so it is
// allowed without creating one.
func (m *MemoryLimiter) Peek(_ context.Context, key string) (bool, time.Duration, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets[key]
	if b == nil {
		return true, 0, nil
	}
	tokens := b.lim.TokensAt(now)
	if tokens >= 1 {
		return true, 0, nil
	}
	wait := time.Duration((1 - tokens) / m.limit.perSecond() * float64(time.Second))
	return false, roundUpMs(wait), nil
}

func (m *MemoryLimiter) sweep(now time.Time) {
	for k, b := range m.buckets {
		if now.Sub(b.seen) >= m.idle {
			delete(m.buckets, k)
		}
	}
	m.lastSweep = now
}

// Len returns the number of buckets held, for tests and metrics.
func (m *MemoryLimiter) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}
