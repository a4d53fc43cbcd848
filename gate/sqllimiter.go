package gate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// SQLLimiter is a [Limiter] whose token buckets live in the app's database, one row per
// key, so several instances on one database share every limit. Each decision is a single
// INSERT … ON CONFLICT DO UPDATE … RETURNING statement: the database serialises racing
// callers on the row, so no two of them take the same token, on SQLite and Postgres alike.
//
// The refill is computed from the caller's clock (milliseconds since the epoch), so
// instances sharing a database should run NTP-synchronised clocks; a clock running behind
// never removes tokens (time deltas below zero count as zero).
type SQLLimiter struct {
	db    *bun.DB
	table string
	limit Limit
	now   func() time.Time
	query string
	peek  string
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// LimiterOption configures a limiter built by [NewMemoryLimiter] or [NewSQLLimiter].
type LimiterOption func(*limiterConfig)

type limiterConfig struct {
	now   func() time.Time
	table string
}

// WithNow sets the limiter's clock (default time.Now); tests pass a fake one to refill
// buckets without waiting.
func WithNow(now func() time.Time) LimiterOption {
	return func(c *limiterConfig) {
		if now != nil {
			c.now = now
		}
	}
}

// WithTable sets an SQL limiter's table (default engine_rate_limits). Limiters with
// different limits need different tables, or keys that never collide.
func WithTable(name string) LimiterOption { return func(c *limiterConfig) { c.table = name } }

// NewSQLLimiter returns a database-backed limiter applying l to every key. Call
// [SQLLimiter.CreateTable] once (for example from [engine.OnStart]) before use.
func NewSQLLimiter(db *bun.DB, l Limit, opts ...LimiterOption) (*SQLLimiter, error) {
	if db == nil {
		return nil, errors.New("gate.NewSQLLimiter: nil db")
	}
	l, err := l.validate()
	if err != nil {
		return nil, err
	}
	c := limiterConfig{now: time.Now, table: "engine_rate_limits"}
	for _, o := range opts {
		o(&c)
	}
	s := &SQLLimiter{db: db, table: c.table, limit: l, now: c.now}
	if !tableName.MatchString(s.table) {
		return nil, fmt.Errorf("gate.NewSQLLimiter: bad table name %q", s.table)
	}
	least, greatest := "LEAST", "GREATEST"
	switch db.Dialect().Name() {
	case dialect.PG:
	case dialect.SQLite:
		least, greatest = "min", "max"
	default:
		return nil, fmt.Errorf("gate.NewSQLLimiter: unsupported dialect %s", db.Dialect().Name())
	}
	// bun's indexed placeholders: ?0 key, ?1 burst-1, ?2 now (ms), ?3 burst, ?4 refill
	// per ms. Every SET expression reads the old row, so the refilled level is the same
	// in each.
	refilled := fmt.Sprintf("%s(?3, t.tokens + %s(0, ?2 - t.updated_ms) * ?4)", least, greatest)
	s.query = fmt.Sprintf(`INSERT INTO %[1]s AS t (bucket, tokens, updated_ms, ok) VALUES (?0, ?1, ?2, TRUE)
ON CONFLICT (bucket) DO UPDATE SET
  tokens = CASE WHEN %[2]s >= %[4]v THEN %[2]s - 1 ELSE %[2]s END,
  ok = (%[2]s >= %[4]v),
  updated_ms = %[3]s(t.updated_ms, ?2)
RETURNING tokens, ok`, s.table, refilled, greatest, wholeToken)
	s.peek = fmt.Sprintf("SELECT tokens, updated_ms FROM %s WHERE bucket = ?", s.table)
	return s, nil
}

// CreateTable creates the bucket table when missing.
func (s *SQLLimiter) CreateTable(ctx context.Context) error {
	typ := "DOUBLE PRECISION"
	boolean := "BOOLEAN"
	if s.db.Dialect().Name() == dialect.SQLite {
		typ = "REAL"
	}
	_, err := s.db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
  bucket TEXT PRIMARY KEY,
  tokens %s NOT NULL,
  updated_ms BIGINT NOT NULL,
  ok %s NOT NULL)`, s.table, typ, boolean))
	if err != nil {
		return fmt.Errorf("gate: creating %s: %w", s.table, err)
	}
	return nil
}

// wholeToken is the level at which a bucket holds a token. It is a billionth short of 1
// because the refill is floating-point arithmetic: 900000 ms at 1/900000 of a token a
// millisecond comes to 0.9999999999999999, which would keep a bucket empty for one
// millisecond past the retry time it gave. A billionth is far above that error, and lets
// a token through early by a billionth of its refill time: under a millisecond for any
// limit that refills a token at least every 11 days.
const wholeToken = 1 - 1e-9

// Allow implements [Limiter].
func (s *SQLLimiter) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	nowMs := s.now().UnixMilli()
	ratePerMs := s.limit.perSecond() / 1000
	burst := float64(s.limit.Burst)
	var tokens float64
	var ok bool
	err := s.db.QueryRowContext(ctx, s.query, key, burst-1, nowMs, burst, ratePerMs).Scan(&tokens, &ok)
	if err != nil {
		return false, 0, fmt.Errorf("gate: rate limit %s: %w", s.table, err)
	}
	if ok {
		return true, 0, nil
	}
	wait := time.Duration((1 - tokens) / ratePerMs * float64(time.Millisecond))
	return false, roundUpMs(wait), nil
}

// Peek implements [Peeker] with one read of the key's row: the refill is computed the
// way [SQLLimiter.Allow] computes it, and nothing is written, so a missing row stays
// missing (a full bucket).
func (s *SQLLimiter) Peek(ctx context.Context, key string) (bool, time.Duration, error) {
	var tokens float64
	var updated int64
	err := s.db.QueryRowContext(ctx, s.peek, key).Scan(&tokens, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("gate: rate limit %s: %w", s.table, err)
	}
	ratePerMs := s.limit.perSecond() / 1000
	tokens = min(float64(s.limit.Burst), tokens+float64(max(0, s.now().UnixMilli()-updated))*ratePerMs)
	if tokens >= wholeToken {
		return true, 0, nil
	}
	wait := time.Duration((1 - tokens) / ratePerMs * float64(time.Millisecond))
	return false, roundUpMs(wait), nil
}

// Prune deletes buckets idle long enough to have refilled completely (forgetting them
// changes no decision: a missing bucket starts full) and returns how many it removed.
// The library starts no goroutines; call it now and then, from one instance or all.
func (s *SQLLimiter) Prune(ctx context.Context) (int64, error) {
	full := time.Duration(float64(s.limit.Burst) / s.limit.perSecond() * float64(time.Second))
	cutoff := s.now().Add(-full).UnixMilli()
	res, err := s.db.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE updated_ms <= ?", s.table), cutoff)
	if err != nil {
		return 0, fmt.Errorf("gate: pruning %s: %w", s.table, err)
	}
	return res.RowsAffected()
}
