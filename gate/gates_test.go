package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	lim := mustMemoryLimiter(t, gate.Limit{Events: 1, Per: time.Second}, time.Now)
	for name, opt := range map[string]engine.BindOption{
		"no scopes":    gate.Scopes(),
		"spaced scope": gate.Scopes("ok", "a b"),
		"empty scope":  gate.Scopes("ok", ""),
		"nil policy":   gate.Policy[EchoIn](nil),
		"nil limiter":  gate.RateLimit(nil, gate.ByPrincipal()),
		"nil key func": gate.RateLimit(lim, nil),
	} {
		// Public, so that only the option can make New fail (a gated flow in an app
		// without an authenticator fails too).
		u := engine.NewUnit("bad")
		f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
		if _, err := engine.New(engine.Bind(f, echo, opt)); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	u := engine.NewUnit("good")
	f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
	if _, err := engine.New(engine.Bind(f, echo, gate.RateLimit(lim, gate.ByPrincipal()), gate.Policy(func(*engine.Fx, EchoIn) error { return nil }))); err != nil {
		t.Errorf("good options refused: %v", err)
	}
}

// A limiter that refuses without saying how long to wait still yields a retry time a
// client can use: at least 1 ms, and Retry-After 1.
func TestRateLimitWithoutWait(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("nw")
	f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
	app, err := engine.New(engine.Bind(f, func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil },
		gate.RateLimit(refuseAll{}, gate.ByPrincipal())))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{app: app, srv: httptest.NewServer(app.Handler())}
	t.Cleanup(h.srv.Close)
	status, hdr, env := h.post(t, "/_engine/nw/f", `{}`)
	if status != http.StatusTooManyRequests || errorJSON(t, env) != `{"code":"RateLimited","data":{"retryAfterMs":1}}` || hdr.Get("Retry-After") != "1" {
		t.Fatalf("%d %s %q", status, errorJSON(t, env), hdr.Get("Retry-After"))
	}
}

// refuseAll refuses every call and says nothing of when to retry.
type refuseAll struct{}

func (refuseAll) Allow(context.Context, string) (bool, time.Duration, error) { return false, 0, nil }

func TestRoundUpMs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want time.Duration }{
		{5 * time.Second, 5 * time.Second},
		{5*time.Second + 5*time.Nanosecond, 5 * time.Second}, // float noise above a boundary
		{5*time.Second - 5*time.Nanosecond, 5 * time.Second}, // and below it
		{5*time.Second + time.Microsecond, 5*time.Second + time.Millisecond},
		{5*time.Second + 9*time.Nanosecond, 5 * time.Second},
		{5*time.Second + 10*time.Nanosecond, 5 * time.Second},
		{5*time.Second + 11*time.Nanosecond, 5*time.Second + time.Millisecond},
		{time.Millisecond - 11*time.Nanosecond, time.Millisecond},
		{time.Microsecond, time.Millisecond},
	} {
		if got := gate.RoundUpMs(tc.in); got != tc.want {
			t.Errorf("roundUpMs(%v) = %v, want %v", tc.in, got, tc.want)
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
	for name, err := range map[string]error{
		"no ranges":      second(gate.TrustedProxy("X-Forwarded-For")),
		"no header":      second(gate.TrustedProxy(" ", netip.MustParsePrefix("10.0.0.0/8"))),
		"invalid prefix": second(gate.TrustedProxy("X-Forwarded-For", netip.MustParsePrefix("10.0.0.0/8"), netip.Prefix{})),
	} {
		if err == nil {
			t.Errorf("TrustedProxy with %s was accepted", name)
		}
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
	lim, err := gate.NewMemoryLimiter(gate.Limit{Events: 2, Per: time.Hour}, gate.WithNow(clock.Now))
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

// Over HTTP each client IP has its own bucket, and a request whose IP cannot be read is
// an internal error rather than a call sharing some common bucket.
func TestRateLimitByClientIP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  gate.IPSource
		ips  []string
		want string
	}{
		{"one bucket per address", headerIP{}, []string{"192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.1", "2001:db8::1"}, "[200 200 200 429 200]"},
		{"unreadable IP", failingIP{}, []string{"192.0.2.1", "192.0.2.2"}, "[500 500]"},
		{"nil is the TCP peer", nil, []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, "[200 200 429]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := mustMemoryLimiter(t, gate.Limit{Events: 2, Per: time.Hour}, time.Now)
			u := engine.NewUnit("ipl")
			f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
			app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
				engine.Bind(f, func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil }, gate.RateLimit(lim, gate.ByClientIP(tc.src))))
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{app: app, srv: httptest.NewServer(app.Handler())}
			t.Cleanup(h.srv.Close)
			var got []int
			for _, ip := range tc.ips {
				status, _, _ := h.post(t, "/_engine/ipl/f", `{}`, asIP(ip)...)
				got = append(got, status)
			}
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("statuses %v, want %s", got, tc.want)
			}
		})
	}
}

// ByPrincipal and ByPrincipalOrIP give every principal a bucket of its own; anonymous
// in-process callers share one.
func TestRateLimitByPrincipal(t *testing.T) {
	t.Parallel()
	for name, key := range map[string]gate.KeyFunc{"ByPrincipal": gate.ByPrincipal(), "ByPrincipalOrIP": gate.ByPrincipalOrIP(nil)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lim := mustMemoryLimiter(t, gate.Limit{Events: 1, Per: time.Hour}, time.Now)
			u := engine.NewUnit("pl")
			f := engine.Define[EchoIn, EchoIn](u, "f", engine.Public())
			app, err := engine.New(engine.Bind(f, func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil },
				gate.RateLimit(lim, key)))
			if err != nil {
				t.Fatal(err)
			}
			call := func(p *engine.Principal) string {
				_, err := app.Invoke(context.Background(), "pl.f", p, json.RawMessage(`{}`))
				if err == nil {
					return "ok"
				}
				return engine.AsError(err).Code
			}
			a, b := &engine.Principal{ID: "a"}, &engine.Principal{ID: "b"}
			got := []string{call(a), call(a), call(b), call(nil), call(nil), call(b), call(&engine.Principal{ID: "anonymous"})}
			if want := "[ok RateLimited ok ok RateLimited RateLimited ok]"; fmt.Sprint(got) != want {
				t.Fatalf("calls = %v, want %s", got, want)
			}
		})
	}
}

// Over HTTP, ByPrincipal gives every signed-in caller a bucket of its own, whatever its
// address, and anonymous callers share one; ByPrincipalOrIP keys anonymous callers by
// their address instead.
func TestRateLimitByPrincipalOverHTTP(t *testing.T) {
	t.Parallel()
	auth, err := gate.NewAuth(gate.AuthConfig{DB: openSQLite(t), Keys: gate.Keys{Current: gate.Key{Secret: testSecret}}, Hash: gate.FastHashParams})
	if err != nil {
		t.Fatal(err)
	}
	u := engine.NewUnit("hp")
	byPrincipal := engine.Define[EchoIn, EchoIn](u, "principal", engine.Public())
	orIP := engine.Define[EchoIn, EchoIn](u, "orIP", engine.Public())
	echo := func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil }
	lim := mustMemoryLimiter(t, gate.Limit{Events: 1, Per: time.Hour}, time.Now)
	app, err := engine.New(auth.Option(),
		engine.Bind(byPrincipal, echo, gate.RateLimit(lim, gate.ByPrincipal())),
		engine.Bind(orIP, echo, gate.RateLimit(lim, gate.ByPrincipalOrIP(headerIP{}))))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	h := &harness{app: app, srv: httptest.NewServer(app.Handler())}
	t.Cleanup(h.srv.Close)
	token := func(id, email, tenant string) string {
		tok, err := auth.AccessToken(engine.Principal{ID: id, Email: email, Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	// a and b share email and tenant, so only their ids tell them apart.
	a, b := token("a", "same@example.com", "t1"), token("b", "same@example.com", "t1")
	named := token("anonymous", "", "") // a principal whose id is the anonymous bucket's name
	for _, tc := range []struct {
		name  string
		flow  string
		calls [][2]string // token, client IP
		want  string
	}{
		{"ByPrincipal", "/_engine/hp/principal",
			[][2]string{{a, "192.0.2.1"}, {a, "192.0.2.2"}, {b, "192.0.2.1"}, {"", "192.0.2.1"}, {"", "192.0.2.2"}, {named, "192.0.2.3"}, {b, "192.0.2.9"}},
			"[200 429 200 200 429 200 429]"},
		{"ByPrincipalOrIP", "/_engine/hp/orIP",
			[][2]string{{a, "192.0.2.1"}, {a, "192.0.2.2"}, {"", "192.0.2.1"}, {"", "192.0.2.1"}, {"", "192.0.2.2"}, {b, "192.0.2.1"}},
			"[200 429 200 429 200 200]"},
	} {
		var got []int
		for _, c := range tc.calls {
			hdr := asIP(c[1])
			if c[0] != "" {
				hdr = append(hdr, "Authorization", "Bearer "+c[0])
			}
			status, _, _ := h.post(t, tc.flow, `{}`, hdr...)
			got = append(got, status)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
}

// second returns the error of a call's two results.
func second[T any](_ T, err error) error { return err }
