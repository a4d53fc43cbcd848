package gate_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
)

func TestDenialEnvelopes(t *testing.T) {
	t.Parallel()
	h := setup(t)
	alice := h.signIn(t, "alice@example.com").AccessToken
	bob := h.signIn(t, "bob@example.com").AccessToken
	for _, tc := range []struct {
		name, flow, token, body string
		status                  int
		errJSON                 string
	}{
		{"no token", "t.echo", "", `{}`, 401, `{"code":"Unauthorized","data":{}}`},
		{"scope missing", "t.scoped", bob, `{}`, 403, `{"code":"Forbidden","data":{"gate":"scope","reason":"missing scope notes:write"}}`},
		{"scope held", "t.scoped", alice, `{"text":"x"}`, 200, `null`},
		{"policy denies", "t.policed", alice, `{"text":"now"}`, 403, `{"code":"Forbidden","data":{"gate":"policy","reason":"ask nicely"}}`},
		{"policy allows", "t.policed", alice, `{"text":"please"}`, 200, `null`},
		{"policy needs auth first", "t.policed", "", `{"text":"please"}`, 401, `{"code":"Unauthorized","data":{}}`},
	} {
		status, _, env := h.raw(t, tc.flow, tc.token, tc.body)
		if status != tc.status || errorJSON(t, env) != tc.errJSON {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, errorJSON(t, env), tc.status, tc.errJSON)
		}
	}
}

// Exactly the burst gets through when 50 callers race one bucket, and the rest are
// told how long to wait, over real HTTP.
func TestRateLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	h := setup(t)
	var mu sync.Mutex
	counts := map[int]int{}
	var denied []map[string]any
	var retryAfter []string
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, hdr, env := h.raw(t, "t.limited", "", `{}`)
			mu.Lock()
			defer mu.Unlock()
			counts[status]++
			if status == http.StatusTooManyRequests {
				denied = append(denied, env)
				retryAfter = append(retryAfter, hdr.Get("Retry-After"))
			}
		}()
	}
	wg.Wait()
	if counts[200] != 5 || counts[429] != 45 || len(counts) != 2 {
		t.Fatalf("statuses = %v, want 5×200 and 45×429", counts)
	}
	// 5 a minute: the next token is 12 s away.
	for i, env := range denied {
		if got := errorJSON(t, env); got != `{"code":"RateLimited","data":{"retryAfterMs":12000}}` {
			t.Fatalf("denial = %s", got)
		}
		if retryAfter[i] != "12" {
			t.Fatalf("Retry-After = %q", retryAfter[i])
		}
	}
	h.clock.Advance(12 * time.Second)
	if status, _, _ := h.raw(t, "t.limited", "", `{}`); status != 200 {
		t.Fatalf("after the wait: %d", status)
	}
	if status, _, _ := h.raw(t, "t.limited", "", `{}`); status != 429 {
		t.Fatalf("second call after one refill: %d", status)
	}
}

func TestDescriptorMarksGates(t *testing.T) {
	t.Parallel()
	h := setup(t)
	flows := map[string]engine.DescriptorFlow{}
	for _, u := range h.app.Descriptor().Units {
		for _, f := range u.Flows {
			flows[f.ID] = f
		}
	}
	if f := flows["t.limited"]; !f.Public || !f.Gated || f.Tags["gate.rateLimit"] != true {
		t.Errorf("t.limited = %+v", f)
	}
	if f := flows["t.scoped"]; !f.Gated {
		t.Errorf("t.scoped = %+v", f)
	}
	if s, _ := json.Marshal(flows["t.scoped"].Tags["gate.scopes"]); string(s) != `["notes:write"]` {
		t.Errorf("t.scoped scopes tag = %s", s)
	}
	if f := flows["auth.refresh"]; f.Trigger == nil || f.Trigger.Path != "/auth/refresh" || f.Trigger.Method != "POST" {
		t.Errorf("auth.refresh trigger = %+v", f.Trigger)
	}
}

func TestBadGateOptionsFailNew(t *testing.T) {
	t.Parallel()
	echo := func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil }
	for name, opt := range map[string]engine.BindOption{
		"no scopes":    gate.Scopes(),
		"blank scope":  gate.Scopes("a b"),
		"nil policy":   gate.Policy[EchoIn](nil),
		"nil limiter":  gate.RateLimit(nil, gate.ByPrincipal()),
		"nil key func": gate.RateLimit(&gate.MemoryLimiter{}, nil),
	} {
		u := engine.NewUnit("bad")
		f := engine.Define[EchoIn, EchoIn](u, "f")
		if _, err := engine.New(engine.Bind(f, echo, opt)); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestPolicyWithWrongInputTypeIsInternal(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("p")
	f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)), engine.Bind(f, func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil },
		gate.Policy(func(*engine.Fx, int) error { return nil })))
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Invoke(context.Background(), "p.f", nil, json.RawMessage(`{}`))
	if !engine.IsCode(err, engine.CodeInternal) {
		t.Fatalf("err = %v", err)
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	proxy, err := gate.TrustedProxy("X-Forwarded-For", netip.MustParsePrefix("10.0.0.0/8"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote, xff string
		src               gate.IPSource
		want              string
	}{
		{"remote addr ignores the header", "203.0.113.7:5555", "1.2.3.4", gate.RemoteAddr, "203.0.113.7"},
		{"untrusted peer cannot spoof", "203.0.113.7:5555", "1.2.3.4", proxy, "203.0.113.7"},
		{"trusted proxy", "10.1.2.3:80", "198.51.100.9", proxy, "198.51.100.9"},
		{"rightmost untrusted hop", "10.1.2.3:80", "1.2.3.4, 198.51.100.9, 10.9.9.9", proxy, "198.51.100.9"},
		{"all hops trusted", "10.1.2.3:80", "10.2.2.2", proxy, "10.2.2.2"},
		{"garbage hop stops the walk", "10.1.2.3:80", "1.2.3.4, garbage", proxy, "10.1.2.3"},
		{"no header", "10.1.2.3:80", "", proxy, "10.1.2.3"},
		{"ipv4-mapped ipv6", "[::ffff:203.0.113.7]:1", "", gate.RemoteAddr, "203.0.113.7"},
		{"ipv6", "[2001:db8::1]:443", "", gate.RemoteAddr, "2001:db8::1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		got, err := tc.src.ClientIP(r)
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := gate.TrustedProxy("X-Forwarded-For"); err == nil {
		t.Error("TrustedProxy without ranges was accepted")
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "pipe"
	if _, err := gate.RemoteAddr.ClientIP(r); err == nil {
		t.Error("a remote address without an IP gave an IP")
	}
}

// In-process calls have no IP: they share the "in-process" bucket, or their
// principal's.
func TestRateLimitInProcess(t *testing.T) {
	t.Parallel()
	clock := newClock()
	lim, err := gate.NewMemoryLimiter(gate.Limit{Events: 2, Per: time.Hour}, gate.WithLimiterClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	u := engine.NewUnit("ip")
	f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
	app, err := engine.New(engine.Bind(f, func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil },
		gate.RateLimit(lim, gate.ByClientIP(nil))))
	if err != nil {
		t.Fatal(err)
	}
	call := func(p *engine.Principal) string {
		_, err := app.Invoke(context.Background(), "ip.f", p, json.RawMessage(`{}`))
		if err == nil {
			return "ok"
		}
		return engine.AsError(err).Code
	}
	got := []string{call(nil), call(nil), call(nil), call(&engine.Principal{ID: "a"}), call(&engine.Principal{ID: "a"}), call(&engine.Principal{ID: "a"})}
	want := []string{"ok", "ok", "RateLimited", "ok", "ok", "RateLimited"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("calls = %v, want %v", got, want)
		}
	}
}
