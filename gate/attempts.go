package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/bbc28f59/engine"
)

// attemptKey names the per-IP bucket of a sign-in or sign-up attempt; both flows share
// it, so alternating them buys nothing. IPv6 clients are keyed by their /64. In-process
// calls (no request) share one bucket.
func (a *Auth) attemptKey(fx *engine.Fx) (string, error) {
	r := fx.Request()
	if r == nil {
		return "auth.attempt|in-process", nil
	}
	ip, err := a.cfg.IPSource.ClientIP(r)
	if err != nil {
		return "", err
	}
	ip = ip.Unmap() // an IPv4 client seen through an IPv6 socket is still one address
	if ip.Is4() {
		return "auth.attempt|ip:" + ip.String(), nil
	}
	block, _ := ip.WithZone("").Prefix(64) // cannot fail: every IPv6 address has 64 bits to keep
	return "auth.attempt|net:" + block.String(), nil
}

// failureKey names the failure bucket of an email as [normalEmail] returns it (trimmed
// and lowercased, so "Alice@example.com " and "alice@example.com" are one bucket): its
// SHA-256, so limiter tables hold no addresses and keys have one length.
func failureKey(email string) string {
	sum := sha256.Sum256([]byte(email))
	return "auth.failure|" + hex.EncodeToString(sum[:])
}

// failures counts failed sign-ins per email; see [AuthConfig.FailuresPerEmail].
type failures struct {
	l Limiter
	p Peeker // l, when it can peek; nil otherwise
}

func newFailures(l Limiter) failures {
	p, _ := l.(Peeker)
	return failures{l: l, p: p}
}

// locked answers RateLimited when the failures of key are used up, counting nothing. A
// limiter that cannot peek cannot tell without counting, so it says nothing here.
func (f failures) locked(ctx context.Context, key string) error {
	if f.p == nil {
		return nil
	}
	return refusal(f.p.Peek(ctx, key))
}

// admit is the check made holding a hashing slot, right before the password is checked:
// [failures.locked] again, or a token for the attempt from a limiter that cannot peek.
func (f failures) admit(ctx context.Context, key string) error {
	if f.p == nil {
		return refusal(f.l.Allow(ctx, key))
	}
	return f.locked(ctx, key)
}

// fail counts a wrong password (a limiter that cannot peek counted the attempt in
// [failures.admit]) and answers Unauthorized.
func (f failures) fail(ctx context.Context, key string) error {
	if f.p != nil {
		if _, _, err := f.l.Allow(ctx, key); err != nil {
			return fmt.Errorf("gate: sign-in failures: %w", err)
		}
	}
	return engine.Unauthorized()
}

// refusal turns a limiter's decision into RateLimited, an error, or nil to go on.
func refusal(ok bool, retry time.Duration, err error) error {
	if err != nil {
		return fmt.Errorf("gate: sign-in failures: %w", err)
	}
	if !ok {
		return engine.RateLimited(retryMs(retry))
	}
	return nil
}
