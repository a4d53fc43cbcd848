package gate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/gate"
)

// slotHolder is a hash hook that blocks every hash until released, counting how many
// are held at once.
type slotHolder struct {
	entered chan struct{}
	release chan struct{}
	now     atomic.Int32
	most    atomic.Int32
}

func holdSlots(a *gate.Auth) *slotHolder {
	s := &slotHolder{entered: make(chan struct{}, 100), release: make(chan struct{})}
	gate.SetHashHook(a, func() {
		n := s.now.Add(1)
		for {
			m := s.most.Load()
			if n <= m || s.most.CompareAndSwap(m, n) {
				break
			}
		}
		s.entered <- struct{}{}
		<-s.release
		s.now.Add(-1)
	})
	return s
}

// waitFor polls cond until it holds; a condition that never holds ends in the test's
// own timeout, so nothing here asserts on time.
func waitFor(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// noLimits turns both sign-in limits off, so every attempt reaches the hashing bound.
func noLimits(c *gate.AuthConfig) {
	c.AttemptsPerIP = gate.NoLimit
	c.FailuresPerEmail = gate.NoLimit
}

// At most Concurrent hashes run at once; Queue more wait; everyone else, on sign-in and
// sign-up alike, is answered Unavailable with Retry-After at once.
func TestHashingIsBounded(t *testing.T) {
	t.Parallel()
	h := setup(t, noLimits, func(c *gate.AuthConfig) {
		c.PublicSignUp = true
		c.Hashing = gate.HashBound{Concurrent: 2, Queue: 3, Wait: time.Minute}
	})
	hold := holdSlots(h.auth)
	results := make(chan int, 5)
	for i := range 5 {
		email := "alice@example.com"
		if i%2 == 1 {
			email = "nobody@example.com" // the dummy hash of unknown emails is bounded too
		}
		go func() { results <- h.status(signInPath, signInBody(email, "wrong password")) }()
	}
	<-hold.entered
	<-hold.entered
	waitFor(func() bool { return gate.HashLine(h.auth) == 5 })
	for _, tc := range []struct{ name, path, body string }{
		{"sign-in", "/auth/sign-in/email", signInBody("bob@example.com", pw)},
		{"sign-in over RPC", "/_engine/auth/signInEmail", signInBody("bob@example.com", pw)},
		{"sign-up", "/auth/sign-up/email", signInBody("new@example.com", "long enough pw")},
	} {
		status, hdr, env := h.post(t, tc.path, tc.body)
		want := `{"code":"Unavailable","data":{"message":"too many sign-in attempts at once; retry shortly","retryAfterMs":60000}}`
		if status != http.StatusServiceUnavailable || errorJSON(t, env) != want || hdr.Get("Retry-After") != "60" {
			t.Errorf("%s beyond the queue: %d %s Retry-After %q", tc.name, status, errorJSON(t, env), hdr.Get("Retry-After"))
		}
	}
	close(hold.release)
	for range 5 {
		if status := <-results; status != http.StatusUnauthorized {
			t.Errorf("queued sign-in: %d, want 401", status)
		}
	}
	if most := hold.most.Load(); most != 2 {
		t.Fatalf("at most %d hashes ran at once, want 2", most)
	}
	if n := gate.HashLine(h.auth); n != 0 {
		t.Fatalf("%d callers still in line", n)
	}
	h.signIn(t, "bob@example.com") // the bound is free again
}

// A caller that finds every slot taken and no room to wait, or waits its whole Wait, is
// answered Unavailable.
func TestHashingTurnsAway(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		bound gate.HashBound
	}{
		{"no queue", gate.HashBound{Concurrent: 1, Queue: -1, Wait: time.Hour}},
		{"wait runs out", gate.HashBound{Concurrent: 1, Queue: 1, Wait: 20 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, noLimits, func(c *gate.AuthConfig) { c.Hashing = tc.bound })
			hold := holdSlots(h.auth)
			first := make(chan int, 1)
			go func() { first <- h.status(signInPath, signInBody("alice@example.com", pw)) }()
			<-hold.entered
			status, hdr, env := h.post(t, "/auth/sign-in/email", signInBody("bob@example.com", pw))
			if status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
				t.Errorf("second sign-in: %d %v", status, env)
			}
			close(hold.release)
			if s := <-first; s != http.StatusOK {
				t.Fatalf("first sign-in: %d", s)
			}
		})
	}
}

// HashBound's defaults: GOMAXPROCS at once, 8 times as many waiting, for 1 s.
func TestHashingDefaults(t *testing.T) {
	t.Parallel()
	t.Run("concurrent and queue", func(t *testing.T) {
		t.Parallel()
		h := setup(t, noLimits, func(c *gate.AuthConfig) { c.Hashing = gate.HashBound{Wait: time.Minute} })
		hold := holdSlots(h.auth)
		n := runtime.GOMAXPROCS(0)
		results := make(chan int, 9*n)
		for range 9 * n {
			go func() { results <- h.status(signInPath, signInBody("alice@example.com", pw)) }()
		}
		for range n {
			<-hold.entered
		}
		waitFor(func() bool { return gate.HashLine(h.auth) == 9*n })
		if status := h.status(signInPath, signInBody("bob@example.com", pw)); status != http.StatusServiceUnavailable {
			t.Errorf("beyond %d at once and %d waiting: %d", n, 8*n, status)
		}
		close(hold.release)
		for range 9 * n {
			if status := <-results; status != http.StatusOK {
				t.Errorf("admitted sign-in: %d", status)
			}
		}
		if most := hold.most.Load(); int(most) != n {
			t.Errorf("%d at once, want GOMAXPROCS = %d", most, n)
		}
	})
	t.Run("wait", func(t *testing.T) {
		t.Parallel()
		h := setup(t, noLimits, func(c *gate.AuthConfig) { c.Hashing = gate.HashBound{Concurrent: 1, Queue: 1} })
		hold := holdSlots(h.auth)
		first := make(chan int, 1)
		go func() { first <- h.status(signInPath, signInBody("alice@example.com", pw)) }()
		<-hold.entered
		_, hdr, env := h.post(t, signInPath, signInBody("bob@example.com", pw))
		if want := `{"code":"Unavailable","data":{"message":"too many sign-in attempts at once; retry shortly","retryAfterMs":1000}}`; errorJSON(t, env) != want || hdr.Get("Retry-After") != "1" {
			t.Errorf("after the default wait: %s Retry-After %q", errorJSON(t, env), hdr.Get("Retry-After"))
		}
		close(hold.release)
		<-first
	})
}

// Seeding users waits for a slot, bounded by its context, rather than being turned away.
func TestEnsureUserWaitsForHashing(t *testing.T) {
	t.Parallel()
	h := setup(t, noLimits, func(c *gate.AuthConfig) {
		c.Hashing = gate.HashBound{Concurrent: 1, Queue: -1, Wait: time.Millisecond}
	})
	var once sync.Once
	entered, release := make(chan struct{}), make(chan struct{})
	gate.SetHashHook(h.auth, func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	})
	first := make(chan int, 1)
	go func() { first <- h.status(signInPath, signInBody("alice@example.com", pw)) }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := h.auth.EnsureUser(ctx, gate.User{Email: "carol@example.com", Password: pw})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("EnsureUser with every slot taken: %v, want it to wait until its deadline", err)
	}
	close(release)
	if s := <-first; s != http.StatusOK {
		t.Fatalf("first sign-in: %d", s)
	}
	if _, err := h.auth.EnsureUser(context.Background(), gate.User{Email: "carol@example.com", Password: pw}); err != nil {
		t.Fatal(err)
	}
	h.signIn(t, "carol@example.com")
}

// The default Concurrent is one hash a core, but no more than fit in 64 MiB, and never
// none.
func TestDefaultConcurrent(t *testing.T) {
	t.Parallel()
	const mib = 1024 // KiB
	for _, tc := range []struct {
		procs  int
		memKiB uint32
		want   int
	}{
		{2, gate.DefaultHashParams.Memory, 2},
		{3, gate.DefaultHashParams.Memory, 3},
		{64, gate.DefaultHashParams.Memory, 3}, // 3 × 19 MiB fit in 64 MiB, 4 do not
		{64, gate.FastHashParams.Memory, 64},
		{200, 32 * mib, 2},   // exactly two fit
		{200, 32*mib + 1, 1}, // one KiB more and only one does
		{8, 200 * mib, 1},    // none fits; one runs anyway
		{1, 8, 1},
	} {
		if got := gate.DefaultConcurrent(tc.procs, tc.memKiB); got != tc.want {
			t.Errorf("%d cores, %d KiB a hash: %d at once, want %d", tc.procs, tc.memKiB, got, tc.want)
		}
	}
}

func TestHashBoundValidation(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	for _, b := range []gate.HashBound{{Concurrent: -1}, {Wait: -time.Second}} {
		if _, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: gate.Keys{Current: gate.Key{Secret: testSecret}}, Hashing: b}); err == nil {
			t.Errorf("%+v accepted", b)
		}
	}
}

// The failure count is checked again holding a slot, so guesses that queued before the
// fifth failure landed are refused; and before queueing, so a locked email is refused
// with RateLimited even when the line is full, costing no slot.
func TestFailuresUnderTheHashingBound(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) {
		c.AttemptsPerIP = gate.NoLimit
		c.Hashing = gate.HashBound{Concurrent: 1, Queue: 6, Wait: time.Minute}
	})
	fill := func(email func(i int) string) (*slotHolder, chan int) {
		hold := holdSlots(h.auth)
		results := make(chan int, 7)
		for i := range 7 {
			go func() { results <- h.status(signInPath, signInBody(email(i), "wrong password")) }()
		}
		<-hold.entered
		waitFor(func() bool { return gate.HashLine(h.auth) == 7 })
		return hold, results
	}
	counts := func(results chan int) string {
		n := map[int]int{}
		for range 7 {
			n[<-results]++
		}
		return fmt.Sprint(n)
	}
	hold, results := fill(func(int) string { return "alice@example.com" })
	close(hold.release)
	if got := counts(results); got != "map[401:5 429:2]" {
		t.Fatalf("7 queued guesses: %s, want 5 checked and 2 refused", got)
	}
	hold, results = fill(func(i int) string { return fmt.Sprintf("q%d@example.com", i) })
	for _, tc := range []struct{ email, password, want string }{
		{"alice@example.com", pw, `{"code":"RateLimited","data":{"retryAfterMs":900000}}`},
		{"bob@example.com", pw, `{"code":"Unavailable","data":{"message":"too many sign-in attempts at once; retry shortly","retryAfterMs":60000}}`},
	} {
		if _, _, env := h.post(t, signInPath, signInBody(tc.email, tc.password)); errorJSON(t, env) != tc.want {
			t.Errorf("%s with the line full: %s, want %s", tc.email, errorJSON(t, env), tc.want)
		}
	}
	close(hold.release)
	if got := counts(results); got != "map[401:7]" {
		t.Fatalf("the second line: %s", got)
	}
}
