package gate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
)

const signInPath = "/auth/sign-in/email"

// asIP returns the header pair that makes the test's headerIP source read ip.
func asIP(ip string) []string { return []string{"X-Test-IP", ip} }

// The default per-IP limit: 30 attempts a minute from one address, whatever the email
// and the answer; IPv6 clients counted by their /64; sign-up drawing from the same
// bucket.
func TestAttemptsPerIP(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) {
		c.IPSource = headerIP{}
		c.PublicSignUp = true
		c.FailuresPerEmail = gate.NoLimit
	})
	attempt := func(ip string, n int) string {
		status, _, _ := h.post(t, signInPath, signInBody(fmt.Sprintf("user%d@example.com", n), pw), asIP(ip)...)
		return fmt.Sprint(status)
	}
	for i := range 30 {
		if got := attempt("203.0.113.7", i); got != "401" {
			t.Fatalf("attempt %d: %s", i, got)
		}
	}
	status, hdr, env := h.post(t, signInPath, signInBody("alice@example.com", pw), asIP("203.0.113.7")...)
	if status != http.StatusTooManyRequests || errorJSON(t, env) != `{"code":"RateLimited","data":{"retryAfterMs":2000}}` || hdr.Get("Retry-After") != "2" {
		t.Fatalf("31st attempt: %d %s Retry-After %q", status, errorJSON(t, env), hdr.Get("Retry-After"))
	}
	for range 30 {
		attempt("2001:db8:0:1::1", 0)
	}
	for _, tc := range []struct{ ip, want string }{
		{"203.0.113.8", "401"},            // another address
		{"::ffff:203.0.113.7", "429"},     // the same IPv4 address seen through IPv6
		{"::ffff:198.51.100.2", "401"},    // a mapped address of its own
		{"2001:db8:0:1:ffff::1", "429"},   // the same /64
		{"2001:0db8:0000:0001::4", "429"}, // the same /64, spelled with zeros
		{"2001:db8:0:1::1%eth0", "429"},   // a zone changes nothing
		{"2001:db8:0:0:ffff::1", "401"},   // the /64 below
		{"2001:db8:0:2::1", "401"},        // the /64 above
		{"2001:db8:1:1::1", "401"},        // another /48
	} {
		if got := attempt(tc.ip, 99); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.ip, got, tc.want)
		}
	}
	// Sign-up draws from the sign-in bucket.
	status, _, _ = h.post(t, "/auth/sign-up/email", signInBody("new@example.com", "long enough pw"), asIP("203.0.113.7")...)
	if status != http.StatusTooManyRequests {
		t.Errorf("sign-up from an exhausted address: %d", status)
	}
	h.clock.Advance(2 * time.Second)
	if got := attempt("203.0.113.7", 0); got != "401" {
		t.Errorf("after the wait: %s", got)
	}
	if got := attempt("203.0.113.7", 0); got != "429" {
		t.Errorf("second attempt after one refill: %s", got)
	}
}

// Sign-up draws a token from the per-IP bucket too, so sign-ups alone run it dry.
func TestSignUpCountsAsAttempt(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) {
		c.PublicSignUp = true
		c.AttemptsPerIP = mustMemoryLimiter(t, gate.Limit{Events: 2, Per: time.Hour}, c.Now)
	})
	var got []int
	for i := range 3 {
		status, _, _ := h.post(t, "/auth/sign-up/email", signInBody(fmt.Sprintf("new%d@example.com", i), "long enough pw"))
		got = append(got, status)
	}
	if fmt.Sprint(got) != "[200 200 429]" {
		t.Fatalf("sign-ups: %v", got)
	}
}

func mustMemoryLimiter(t testing.TB, l gate.Limit, now func() time.Time) *gate.MemoryLimiter {
	t.Helper()
	m, err := gate.NewMemoryLimiter(l, gate.WithNow(now))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The default per-email limit: five failures, then every attempt for that email, right
// password or not, is RateLimited until 15 minutes after the first failure; only
// failures count.
func TestFailuresPerEmail(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) { c.AttemptsPerIP = gate.NoLimit })
	try := func(email, password string) string {
		status, hdr, env := h.post(t, signInPath, signInBody(email, password))
		if status == http.StatusTooManyRequests {
			return fmt.Sprintf("429 %s %s", errorJSON(t, env), hdr.Get("Retry-After"))
		}
		return fmt.Sprint(status)
	}
	const locked = `429 {"code":"RateLimited","data":{"retryAfterMs":900000}} 900`
	for i := range 10 {
		if got := try("bob@example.com", pw); got != "200" {
			t.Fatalf("successful sign-in %d: %s (successes must not count)", i, got)
		}
	}
	for i, email := range []string{"alice@example.com", "Alice@Example.com", " ALICE@example.com", "alice@example.com", "alice@EXAMPLE.com"} {
		if got := try(email, "wrong password"); got != "401" {
			t.Fatalf("failure %d: %s", i, got)
		}
	}
	for _, tc := range []struct{ name, email, password, want string }{
		{"sixth failure", "alice@example.com", "wrong password", locked},
		{"right password", "alice@example.com", pw, locked},
		{"another spelling", "  Alice@example.COM", pw, locked},
		{"another email", "bob@example.com", pw, "200"},
	} {
		if got := try(tc.email, tc.password); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	h.clock.Advance(10 * time.Minute)
	if got := try("alice@example.com", pw); got != `429 {"code":"RateLimited","data":{"retryAfterMs":300000}} 300` {
		t.Errorf("10 minutes on: %s", got)
	}
	h.clock.Advance(5 * time.Minute)
	for i, want := range []string{"200", "200", "401", locked} {
		password := pw
		if i == 2 {
			password = "wrong password"
		}
		if got := try("alice@example.com", password); got != want {
			t.Errorf("after the window, attempt %d: %s, want %s", i, got, want)
		}
	}
}

// Unknown emails lock exactly like known ones, so a lock tells nothing about who exists.
func TestFailuresPerUnknownEmail(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) { c.AttemptsPerIP = gate.NoLimit })
	var got []int
	for range 7 {
		status, _, _ := h.post(t, signInPath, signInBody("nobody@example.com", pw))
		got = append(got, status)
	}
	if fmt.Sprint(got) != "[401 401 401 401 401 429 429]" {
		t.Fatalf("statuses: %v", got)
	}
}

func TestSignInLimitsOff(t *testing.T) {
	t.Parallel()
	h := setup(t, noLimits)
	for i := range 40 {
		if status, _, env := h.post(t, signInPath, signInBody("alice@example.com", "wrong password")); status != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d %v", i, status, env)
		}
	}
	h.signIn(t, "alice@example.com")
	if f := descriptorFlow(t, h, "auth.signInEmail"); f.Gated {
		t.Errorf("auth.signInEmail is marked gated with its limits off: %+v", f)
	}
}

// recorder is a Limiter that is not a Peeker and remembers the keys it saw.
type recorder struct {
	gate.Limiter
	mu   sync.Mutex
	keys []string
}

func (r *recorder) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	return r.Limiter.Allow(ctx, key)
}

// A failure limiter that cannot peek takes a token on every attempt, successful or not.
func TestFailuresWithoutPeek(t *testing.T) {
	t.Parallel()
	var rec *recorder
	h := setup(t, func(c *gate.AuthConfig) {
		c.AttemptsPerIP = gate.NoLimit
		rec = &recorder{Limiter: mustMemoryLimiter(t, gate.Limit{Events: 3, Per: time.Hour}, c.Now)}
		c.FailuresPerEmail = rec
	})
	var got []int
	for _, email := range []string{"alice@example.com", "ALICE@example.com ", "alice@example.com", "alice@example.com"} {
		status, _, _ := h.post(t, signInPath, signInBody(email, pw))
		got = append(got, status)
	}
	if fmt.Sprint(got) != "[200 200 200 429]" {
		t.Fatalf("statuses: %v", got)
	}
	// Keys are one per normalised email and carry neither the address nor a password.
	for _, k := range rec.keys {
		if k != rec.keys[0] || strings.Contains(k, "alice") || strings.Contains(k, pw) {
			t.Fatalf("keys = %q", rec.keys)
		}
	}
}

// failingLimiter fails every decision.
type failingLimiter struct{ peekOK bool }

var errLimiter = errors.New("limiter down")

func (failingLimiter) Allow(context.Context, string) (bool, time.Duration, error) {
	return false, 0, errLimiter
}

func (f failingLimiter) Peek(context.Context, string) (bool, time.Duration, error) {
	if f.peekOK {
		return true, 0, nil
	}
	return false, 0, errLimiter
}

// A limiter or IP source that fails fails the attempt closed: an internal error, never
// a password check.
func TestSignInLimitErrorsFailClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      func(*gate.AuthConfig)
		password string
	}{
		{"per-IP limiter", func(c *gate.AuthConfig) { c.AttemptsPerIP = failingLimiter{} }, pw},
		{"IP source", func(c *gate.AuthConfig) { c.IPSource = failingIP{} }, pw},
		{"failure peek", func(c *gate.AuthConfig) { c.FailuresPerEmail = failingLimiter{} }, pw},
		{"failure count", func(c *gate.AuthConfig) { c.FailuresPerEmail = failingLimiter{peekOK: true} }, "wrong password"},
		{"failure count without peek", func(c *gate.AuthConfig) { c.FailuresPerEmail = &recorder{Limiter: failingLimiter{}} }, pw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, tc.cfg)
			status, _, env := h.post(t, signInPath, signInBody("alice@example.com", tc.password))
			if status != http.StatusInternalServerError || errorJSON(t, env) != `{"code":"InternalError","data":{"message":"internal error"}}` {
				t.Fatalf("%d %s", status, errorJSON(t, env))
			}
		})
	}
}

// Sign-up is off unless the app turns it on: its route and RPC answer NotFound and the
// descriptor does not list it.
func TestSignUpIsOffByDefault(t *testing.T) {
	t.Parallel()
	h := setup(t)
	for _, path := range []string{"/auth/sign-up/email", "/_engine/auth/signUpEmail"} {
		status, _, env := h.post(t, path, signInBody("new@example.com", "long enough pw"))
		if status != http.StatusNotFound || env["error"].(map[string]any)["code"] != "NotFound" {
			t.Errorf("%s: %d %v", path, status, env)
		}
	}
	if _, ok := h.app.Lookup("auth.signUpEmail"); ok {
		t.Error("auth.signUpEmail is bound")
	}
	// Sign-in is still there, and marked as rate limited.
	if f := descriptorFlow(t, h, "auth.signInEmail"); !f.Gated || f.Tags["gate.rateLimit"] != true {
		t.Errorf("auth.signInEmail = %+v", f)
	}
}

// descriptorFlow returns the descriptor entry of the flow id.
func descriptorFlow(t *testing.T, h *harness, id string) engine.DescriptorFlow {
	t.Helper()
	for _, u := range h.app.Descriptor().Units {
		for _, f := range u.Flows {
			if f.ID == id {
				return f
			}
		}
	}
	t.Fatalf("no flow %s in the descriptor", id)
	return engine.DescriptorFlow{}
}
