package gate

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/bbc28f59/engine"
)

// HashBound bounds the password hashing of an [Auth]. An argon2id hash or verification
// under [DefaultHashParams] holds 19 MiB for its 20–40 ms, and sign-in is public: with no
// bound, 200 parallel wrong-password sign-ins took a server from 83 MiB to 3.57 GiB
// resident. With it, at most Concurrent hashes hold memory at once however many requests
// arrive; up to Queue more callers wait their turn for at most Wait, and everyone beyond
// that is answered at once with Unavailable (503, Retry-After) instead of piling up.
// Waiting callers hold no hashing memory, so the process's peak grows with Concurrent
// times [HashParams] Memory, not with the number of callers.
//
// The bound covers sign-in (including the hash spent on unknown emails, so that their
// timing matches), sign-up and [Auth.EnsureUser]; seeding waits as long as its context
// allows rather than failing.
type HashBound struct {
	// Concurrent is how many hashes run at once. The default is runtime.GOMAXPROCS(0),
	// since a one-lane argon2id hash keeps one core busy and more at once only wait for
	// the scheduler while holding their memory; but no more than fit in 64 MiB at the
	// configured [HashParams] Memory (3 at [DefaultHashParams]), so that a many-core
	// server stays within the memory of a small one. Set it to go past that cap.
	Concurrent int
	// Queue is how many more callers may wait for a free slot (default 8 × Concurrent,
	// about eight hash times of waiting); negative for no queue at all.
	Queue int
	// Wait is how long a queued caller waits for a slot before it is answered
	// Unavailable, with this wait as its Retry-After (default 1 s).
	Wait time.Duration
}

// hasher enforces a [HashBound]. line holds a ticket for every caller hashing or queued,
// slots one for every caller hashing; a caller that cannot get a ticket at once, or a
// slot within the wait, is turned away.
type hasher struct {
	slots chan struct{}
	line  chan struct{}
	wait  time.Duration
	hook  func() // tests only: runs holding a slot, before the hash
}

// maxDefaultHashMemory caps the hashing memory of the default [HashBound] Concurrent at
// a quarter of the 256 MiB that a flood of sign-ins may add to a server's resident
// memory: the garbage collector lets the heap grow to about twice what is live, and
// requests and goroutines take their share. Measured with bench/signin_test.go (200
// parallel sign-ins at [DefaultHashParams]), 3 hashes at once peaked 182 MiB above the
// resting size and 6 at once 280 MiB.
const maxDefaultHashMemory = 64 << 20

// defaultConcurrent is the default [HashBound] Concurrent for procs cores and hashes of
// memKiB each (never 0: [HashParams] are validated first): one a core, no more than fit
// in maxDefaultHashMemory, and at least one.
func defaultConcurrent(procs int, memKiB uint32) int {
	return max(1, min(procs, maxDefaultHashMemory/(int(memKiB)<<10)))
}

func newHasher(b HashBound, p HashParams) (*hasher, error) {
	if b.Concurrent < 0 || b.Wait < 0 {
		return nil, fmt.Errorf("gate: invalid hash bound %+v", b)
	}
	if b.Concurrent == 0 {
		b.Concurrent = defaultConcurrent(runtime.GOMAXPROCS(0), p.Memory)
	}
	if b.Queue == 0 {
		b.Queue = 8 * b.Concurrent
	}
	if b.Wait == 0 {
		b.Wait = time.Second
	}
	return &hasher{
		slots: make(chan struct{}, b.Concurrent),
		line:  make(chan struct{}, b.Concurrent+max(b.Queue, 0)),
		wait:  b.Wait,
	}, nil
}

// busy is the answer to a caller turned away by the bound; its Retry-After is the wait.
func (h *hasher) busy() error {
	return engine.Unavailable("too many sign-in attempts at once; retry shortly", retryMs(h.wait))
}

// run runs fn holding a slot and returns its error, or answers Unavailable when the
// line is full or no slot frees up within the wait.
func (h *hasher) run(ctx context.Context, fn func() error) error {
	select {
	case h.line <- struct{}{}:
	default:
		return h.busy()
	}
	defer func() { <-h.line }()
	timer := time.NewTimer(h.wait)
	defer timer.Stop()
	select {
	case h.slots <- struct{}{}:
	case <-timer.C:
		return h.busy()
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.hash(fn)
}

// await runs fn holding a slot, waiting for one as long as ctx allows: for server-side
// work such as seeding users, which should be slow under load rather than fail.
func (h *hasher) await(ctx context.Context, fn func() error) error {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.hash(fn)
}

// hash runs fn in the slot the caller took, and gives the slot back.
func (h *hasher) hash(fn func() error) error {
	defer func() { <-h.slots }()
	if h.hook != nil {
		h.hook()
	}
	return fn()
}
