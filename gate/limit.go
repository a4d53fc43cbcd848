package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bbc28f59/engine"
)

// Limiter decides whether one more call under key may run now. It is the seam for
// sharing limits: [MemoryLimiter] counts in one process; [SQLLimiter] keeps one row per
// key in the app's database, so every instance on that database draws from the same
// buckets. An implementation must be safe for concurrent use and must decide atomically
// (two racing callers never both take the last token).
type Limiter interface {
	// Allow takes one token for key. When none is left it returns ok false and how long
	// until one will be.
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// Peeker is a [Limiter] that can also look at a bucket without drawing from it. [Auth]
// needs it to count only failed sign-ins: it peeks before checking a password and draws
// a token only when the password was wrong. [MemoryLimiter], [SQLLimiter] and [NoLimit]
// implement it, and other limiters may. Given a Limiter without it, [Auth] falls back
// to drawing a token for every attempt, successful or not (see
// [AuthConfig.FailuresPerEmail]).
type Peeker interface {
	Limiter
	// Peek reports whether Allow would let a call under key through now and, when it
	// would not, how long until it would, without taking a token or creating a bucket.
	Peek(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// NoLimit is a [Peeker] that allows every call. It exists so that a limit on by default
// can be turned off in so many words: [AuthConfig.AttemptsPerIP] or
// [AuthConfig.FailuresPerEmail] set to NoLimit, rather than a zero value that reads like
// "the default".
var NoLimit Peeker = noLimit{}

type noLimit struct{}

func (noLimit) Allow(context.Context, string) (bool, time.Duration, error) { return true, 0, nil }
func (noLimit) Peek(context.Context, string) (bool, time.Duration, error)  { return true, 0, nil }

// Limit is a token bucket: Events calls per Per on average, with bursts of up to Burst
// (Events when zero). Limit{Events: 5, Per: time.Minute} lets 5 calls through at once,
// then one every 12 seconds.
type Limit struct {
	Events int           // calls allowed per Per, on average
	Per    time.Duration // the period of Events
	Burst  int           // calls allowed at once (default Events)
}

func (l Limit) validate() (Limit, error) {
	if l.Events <= 0 || l.Per <= 0 {
		return l, fmt.Errorf("gate: limit needs positive Events and Per, got %d per %v", l.Events, l.Per)
	}
	if l.Burst < 0 {
		return l, fmt.Errorf("gate: negative burst %d", l.Burst)
	}
	if l.Burst == 0 {
		l.Burst = l.Events
	}
	return l, nil
}

// perSecond is the refill rate in tokens per second.
func (l Limit) perSecond() float64 { return float64(l.Events) / l.Per.Seconds() }

// KeyFunc names the bucket a call draws from. The flow id is prepended by [RateLimit],
// so one limiter can serve many flows without them sharing buckets.
type KeyFunc func(fx *engine.Fx) (string, error)

// ByPrincipal keys calls by the authenticated principal; anonymous calls (public flows)
// share the single bucket "anonymous". Pair it with auth, or use [ByPrincipalOrIP].
func ByPrincipal() KeyFunc {
	return func(fx *engine.Fx) (string, error) {
		if p := fx.Principal(); p != nil {
			return "principal:" + p.ID, nil
		}
		return "anonymous", nil
	}
}

// ByClientIP keys calls by client IP as src reads it ([RemoteAddr] when nil).
//
// In-process calls ([engine.App.Invoke], agents calling tools) have no request and so no
// IP: they are keyed by their principal ("principal:<id>") when there is one, and
// otherwise share the one bucket "in-process". A request whose IP cannot be read (a
// custom transport with an odd RemoteAddr) is an internal error, never an unlimited call.
func ByClientIP(src IPSource) KeyFunc {
	if src == nil {
		src = RemoteAddr
	}
	return func(fx *engine.Fx) (string, error) {
		r := fx.Request()
		if r == nil {
			if p := fx.Principal(); p != nil {
				return "principal:" + p.ID, nil
			}
			return "in-process", nil
		}
		ip, err := src.ClientIP(r)
		if err != nil {
			return "", err
		}
		return "ip:" + ip.String(), nil
	}
}

// ByPrincipalOrIP keys authenticated calls by principal and anonymous ones by client IP.
func ByPrincipalOrIP(src IPSource) KeyFunc {
	byIP := ByClientIP(src)
	return func(fx *engine.Fx) (string, error) {
		if p := fx.Principal(); p != nil {
			return "principal:" + p.ID, nil
		}
		return byIP(fx)
	}
}

// RateLimit draws one token per call from l under the flow id and key's bucket, and
// denies with RateLimited {retryAfterMs} (plus Retry-After) when the bucket is empty. A
// limiter error fails the call as an internal error rather than letting it through.
// Reading a durable run of the flow (polling its state, following its events) is not a
// call: the route checks the flow's gates for the reader, and this one draws nothing.
func RateLimit(l Limiter, key KeyFunc) engine.BindOption {
	if l == nil || key == nil {
		return engine.InvalidBindOption(errors.New("gate.RateLimit: nil limiter or key"))
	}
	return tagged("rateLimit", true, limitBy(l, func(fx *engine.Fx) (string, error) {
		k, err := key(fx)
		if err != nil {
			return "", err
		}
		return fx.Flow().ID() + "|" + k, nil
	}))
}

// limitBy is the middleware of [RateLimit] with the bucket named in full by key, so
// several flows can draw from one bucket (the auth attempts of one client IP).
func limitBy(l Limiter, key KeyFunc) engine.Middleware {
	return func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			if engine.IsForRead(fx.Context()) {
				// Polling or following a run of the flow is not a call of it.
				return next(fx, in)
			}
			k, err := key(fx)
			if err != nil {
				return nil, fmt.Errorf("gate: rate limit key of %s: %w", fx.Flow().ID(), err)
			}
			ok, retry, err := l.Allow(fx.Context(), k)
			if err != nil {
				return nil, fmt.Errorf("gate: rate limit of %s: %w", fx.Flow().ID(), err)
			}
			if !ok {
				return nil, engine.RateLimited(retryMs(retry))
			}
			return next(fx, in)
		}
	}
}

// roundUpMs rounds a wait up to whole milliseconds, absorbing float error in refill
// arithmetic so that waiting the returned time always finds a token.
func roundUpMs(d time.Duration) time.Duration {
	const ms = time.Millisecond
	// Float error of a few nanoseconds below a millisecond boundary is noise.
	return ((d - 10*time.Nanosecond + ms - 1) / ms) * ms
}

// retryMs rounds up so a caller that waits retryAfterMs finds a token.
func retryMs(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	return int64(math.Ceil(float64(d) / float64(time.Millisecond)))
}
