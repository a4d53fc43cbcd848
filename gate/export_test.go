package gate

// Test hooks, compiled only into this package's tests.

// SetHashHook makes fn run inside every hashing slot of a, before the hash, so a test
// can hold slots and count how many are held at once. Set it before any hashing starts.
func SetHashHook(a *Auth, fn func()) { a.hasher.hook = fn }

// SetRotateHook makes fn run in every rotation of a, after the refresh token was read
// and before it is spent, so a test can line up racing rotations. Set it before any
// rotation starts.
func SetRotateHook(a *Auth, fn func()) { a.rotateHook = fn }

// HashLine returns how many callers of a are hashing or queued for a slot.
func HashLine(a *Auth) int { return len(a.hasher.line) }

// RoundUpMs is roundUpMs.
var RoundUpMs = roundUpMs

// SetTokenCacheSize bounds a's verified-token cache at n entries.
func SetTokenCacheSize(a *Auth, n int) { a.codec.cache.max = n }

// TokenCacheLen returns how many verified tokens a remembers.
func TokenCacheLen(a *Auth) int {
	c := a.codec.cache
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// DefaultConcurrent is defaultConcurrent.
var DefaultConcurrent = defaultConcurrent
