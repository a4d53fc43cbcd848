package gate

import (
	"slices"
	"sync"
	"time"

	"github.com/bbc28f59/engine"
)

// tokenCache remembers access tokens that passed full verification, keyed by the exact
// token string, until they expire. Verifying an HS256 JWT (base64, JSON, HMAC, claim
// checks) costs ~10 µs and ~50 allocations; a hit costs a map lookup and a copy of the
// principal. It cannot weaken checks: a different string (any tampering) misses; the
// checks that depend only on the token (signature, algorithm, issuer, audience, the JSON
// types of the claims) give the same answer for the same string, and keys, issuer and
// audience never change for the life of an [Auth], so nothing verified under a key can
// outlive that key's acceptance; the checks that depend on the clock are repeated on each
// hit: exp, and iat and nbf against a clock that stepped back.
type tokenCache struct {
	mu  sync.RWMutex
	m   map[string]cachedToken
	max int
}

type cachedToken struct {
	p    engine.Principal
	from time.Time // the later of iat and nbf
	exp  time.Time
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{m: make(map[string]cachedToken), max: max}
}

// get returns a private copy of the cached principal, so a handler that mutates it
// cannot affect other requests.
func (c *tokenCache) get(tok string, now time.Time) (*engine.Principal, bool) {
	c.mu.RLock()
	e, ok := c.m[tok]
	c.mu.RUnlock()
	if !ok || now.Before(e.from) || !now.Before(e.exp) {
		return nil, false
	}
	p := e.p
	p.Scopes = slices.Clone(e.p.Scopes)
	return &p, true
}

func (c *tokenCache) put(tok string, p *engine.Principal, from, exp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		// Bounded without bookkeeping: forget everything; live tokens are re-verified
		// once on their next use.
		clear(c.m)
	}
	cp := *p
	cp.Scopes = slices.Clone(p.Scopes)
	c.m[tok] = cachedToken{p: cp, from: from, exp: exp}
}
