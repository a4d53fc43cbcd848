package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/store"
)

// gateParts builds an app of the auth, notes, admin and limited parts only, over a
// private in-memory database, served over loopback HTTP.
func gateParts(t *testing.T) (*engine.App, *httptest.Server, *env) {
	t.Helper()
	e := memoryEnv(t)
	app, srv := serveParts(t, e, "auth", "notes", "admin", "limited")
	return app, srv, e
}

// memoryEnv is the environment of an app on a private in-memory database.
func memoryEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Journal: "memory", Password: "correct horse battery staple", Logger: slog.New(slog.DiscardHandler)}
	db, err := openDB(e)
	if err != nil {
		t.Fatal(err)
	}
	e.DB = db
	t.Cleanup(func() { _ = db.Close() })
	return e
}

// serveParts builds an app of the named parts, logging to e.Logger, on e's database,
// starts it and serves it over loopback HTTP: called twice with one database, it is two
// instances of the app.
func serveParts(t *testing.T, e *env, names ...string) (*engine.App, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	opts := []engine.Option{engine.WithLogger(e.Logger)}
	for _, p := range parts {
		if slices.Contains(names, p.name) {
			o, err := p.build(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, o)
		}
	}
	app, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return app, srv
}

func TestGatePartsEndToEnd(t *testing.T) {
	app, srv, e := gateParts(t)
	ctx := context.Background()
	anon, err := clientx.ForApp(app, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	as := func(email string) *clientx.Client {
		r := clientx.Call(ctx, anon, gate.SignInEmail, gate.Credentials{Email: email, Password: "correct horse battery staple"})
		if r.Error != nil {
			t.Fatalf("sign in %s: %v", email, r.Error)
		}
		tok := r.Data.AccessToken
		c, err := clientx.ForApp(app, srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob, carol, ops := as("alice@example.com"), as("bob@example.com"), as("carol@example.com"), as("ops@example.com")

	me := clientx.Call(ctx, ops, gate.Me, gate.MeInput{})
	if me.Error != nil || !me.Data.Operator || me.Data.Tenant != "t1" || len(me.Data.Scopes) != 0 {
		t.Fatalf("ops me = %+v", me)
	}
	n := clientx.Call(ctx, alice, Notes.Create, store.Fields{"title": "t1 note", "body": "b"})
	if n.Error != nil {
		t.Fatal(n.Error)
	}
	if r := clientx.Call(ctx, bob, Notes.Get, store.ID{ID: n.Data.ID}); r.Error != nil {
		t.Errorf("bob (t1, notes:read) get: %v", r.Error)
	}
	if r := clientx.Call(ctx, bob, Notes.Remove, store.ID{ID: n.Data.ID}); r.Error == nil || r.Error.Code != engine.CodeForbidden {
		t.Errorf("bob remove: %+v", r.Error)
	}
	if r := clientx.Call(ctx, carol, Notes.Get, store.ID{ID: n.Data.ID}); r.Error == nil || r.Error.Code != engine.CodeNotFound {
		t.Errorf("carol (t2) get: %+v", r.Error)
	}
	if r := clientx.Call(ctx, alice, Stats, struct{}{}); r.Status != http.StatusForbidden {
		t.Errorf("alice admin.stats: %+v", r)
	}
	statuses := []int{}
	for range 6 {
		statuses = append(statuses, clientx.Call(ctx, anon, Ping, struct{}{}).Status)
	}
	if want := []int{200, 200, 200, 200, 200, 429}; !equal(statuses, want) {
		t.Errorf("limited.ping statuses = %v, want %v", statuses, want)
	}
	// The descriptor carries no secret and marks the gated flows.
	resp, err := http.Get(srv.URL + "/_engine/client.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, f := range app.Descriptor().Units {
		for _, fl := range f.Flows {
			if fl.ID == "limited.ping" && !fl.Gated {
				t.Error("limited.ping is not marked gated")
			}
		}
	}
	key, err := demoKey(ctx, e.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) == 0 || strings.Contains(string(body), key.Reveal()) {
		t.Fatal("the descriptor is empty or carries the signing key")
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// answer is what a sign-in got: the status, the envelope's error code ("" on success),
// Retry-After, and what was wrong with the reply as an envelope ("" when nothing was).
type answer struct {
	status     int
	code       string
	retryAfter string
	problem    string
}

// signInAt posts a sign-in to base with c; it touches no testing.T, so the goroutines of
// a test may call it. A reply that is not an envelope, or no reply, is a problem.
func signInAt(c *http.Client, base, email, password string) answer {
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := c.Post(base+"/auth/sign-in/email", "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{problem: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	if err != nil {
		a.problem = err.Error()
		return a
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(b, &env); {
	case err != nil:
		a.problem = fmt.Sprintf("%d: not an envelope: %q", a.status, b)
	case resp.StatusCode >= 400 && (env.Error == nil || env.Error.Code == ""):
		a.problem = fmt.Sprintf("%d without an error code: %s", a.status, b)
	case env.Error != nil:
		a.code = env.Error.Code
	}
	return a
}

// fromIP returns a client whose connections come from the loopback address ip, so that
// one test can be many clients to the per-IP limit; it skips the test, saying why, where
// the system does not route all of 127.0.0.0/8 to the loopback interface.
func fromIP(t *testing.T, ip, probe string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(probe, "http://"))
	if err != nil {
		t.Skipf("cannot connect from %s (%v): this system does not route 127.0.0.0/8 to loopback", ip, err)
	}
	_ = conn.Close()
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 100},
		Timeout:   30 * time.Second, // APP.md: every sign-in is answered within 30 s
	}
}

// lockedFor checks a RateLimited answer and returns its Retry-After in seconds.
func lockedFor(t *testing.T, a answer) int {
	t.Helper()
	secs, err := strconv.Atoi(a.retryAfter)
	if a.status != http.StatusTooManyRequests || a.code != "RateLimited" || err != nil || secs < 1 {
		t.Fatalf("want RateLimited with Retry-After, got %+v", a)
	}
	return secs
}

// Sign-up is off in the reference app: its route and its RPC are NotFound.
func TestSignUpIsOff(t *testing.T) {
	_, srv, _ := gateParts(t)
	for _, path := range []string{"/auth/sign-up/email", "/_engine/auth/signUpEmail"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"email":"new@example.com","password":"long enough pw"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"code":"NotFound"`) {
			t.Errorf("%s: %d %s, want 404 NotFound", path, resp.StatusCode, b)
		}
	}
}

// TestSignInLimitsAcrossInstances checks the sign-in rows of APP.md "The HTTP edge" over
// HTTP, with two instances of the app on one database (one in-memory SQLite database
// and, with ENGINE_TEST_POSTGRES_DSN, one Postgres schema through two pools): an email
// with 5 failures is refused on both, right password or not, until its window passes;
// and one client IP gets 30 attempts a minute from the two of them together.
func TestSignInLimitsAcrossInstances(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name string
		envs func(t *testing.T) [2]*env
	}{
		{"memory", func(t *testing.T) [2]*env {
			e := memoryEnv(t)
			return [2]*env{e, e}
		}},
		{"postgres", func(t *testing.T) [2]*env {
			dsn := testenv.PostgresDSN(t, "the two instances on Postgres")
			dsn = testenv.Schema(t, dsn, "conformance_")
			var envs [2]*env
			for i := range envs {
				e := &env{Journal: dsn, Password: "correct horse battery staple", Logger: logger}
				db, err := openDB(e)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				e.DB = db
				envs[i] = e
			}
			return envs
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			envs := tc.envs(t)
			var base [2]string
			for i, e := range envs {
				_, srv := serveParts(t, e, "auth")
				base[i] = srv.URL
			}
			c := fromIP(t, "127.0.0.1", base[0])

			// Failures per email, counted by both instances together.
			for i := range 5 {
				if a := signInAt(c, base[i%2], "bob@example.com", "wrong password"); a.status != http.StatusUnauthorized || a.problem != "" {
					t.Fatalf("failure %d: %+v", i, a)
				}
			}
			for i := range 2 {
				if secs := lockedFor(t, signInAt(c, base[i], "bob@example.com", envs[i].Password)); secs > 900 {
					t.Errorf("instance %d locks bob for %d s, more than the 15-minute window", i, secs)
				}
			}
			if a := signInAt(c, base[1], "alice@example.com", envs[1].Password); a.status != http.StatusOK {
				t.Fatalf("another email: %+v", a)
			}

			// Attempts per client IP: a fresh address sends 30 attempts to each
			// instance at once. The two share one bucket of 30, refilled at one
			// attempt every 2 s while they run, so about half are refused.
			c3 := fromIP(t, "127.0.0.3", base[0])
			start := time.Now()
			var mu sync.Mutex
			var answers []answer
			var wg sync.WaitGroup
			for i := range 60 {
				wg.Go(func() {
					a := signInAt(c3, base[i%2], fmt.Sprintf("nobody%d@example.com", i), "wrong password")
					mu.Lock()
					answers = append(answers, a)
					mu.Unlock()
				})
			}
			wg.Wait()
			refill := int(time.Since(start)/(2*time.Second)) + 1
			admitted := 0
			for _, a := range answers {
				switch {
				case a.problem != "":
					t.Errorf("attempt: %s", a.problem)
				case a.status == http.StatusTooManyRequests:
					lockedFor(t, a)
				case a.status == http.StatusUnauthorized, a.status == http.StatusServiceUnavailable:
					admitted++
				default:
					t.Errorf("attempt: %+v", a)
				}
			}
			if admitted < 30 || admitted > 30+refill {
				t.Errorf("one address got %d of 60 attempts past the limit, want 30 (and %d more for the time they took)", admitted, refill)
			}
		})
	}
}

// TestSignInFlood checks the hashing row of APP.md "The HTTP edge" against a real process
// at the real argon2id cost: 200 parallel sign-ins, from enough loopback addresses that
// the per-IP limit lets all of them reach the password check, are each answered with an
// envelope (401, 429 or 503) within 30 s, and grow the process's resident memory by less
// than 256 MiB.
func TestSignInFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the flood test builds and starts the app")
	}
	bin := testenv.Build(t, ".")
	in := startInstance(t, bin, "flood", []string{"ENGINE_JOURNAL=memory"})
	status := fmt.Sprintf("/proc/%d/status", in.Pid())
	if _, err := os.ReadFile(status); err != nil {
		t.Skipf("cannot read %s (%v): resident memory cannot be measured here", status, err)
	}
	memKiB := func(field string) int {
		b, err := os.ReadFile(status)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Fatalf("no %s in %s", field, status)
		return 0
	}
	// Start the high-water mark afresh (Linux 4.0 and later); where it cannot be, the
	// peak includes start-up, which only makes the check stricter.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", in.Pid()), []byte("5"), 0)
	before := memKiB("VmRSS")

	// 7 addresses of 29 attempts or fewer stay under 30 a minute each. Every tenth
	// attempt is for bob, a known user (his failures may lock him: 429).
	var clients []*http.Client
	for i := range 7 {
		clients = append(clients, fromIP(t, fmt.Sprintf("127.0.0.%d", 10+i), in.URL))
	}
	answers := make([]answer, 200)
	var wg sync.WaitGroup
	for i := range answers {
		email := fmt.Sprintf("flood%d@example.com", i)
		if i%10 == 0 {
			email = "bob@example.com"
		}
		wg.Go(func() { answers[i] = signInAt(clients[i%len(clients)], in.URL, email, "wrong password") })
	}
	wg.Wait()
	grew := memKiB("VmHWM") - before
	counts := map[int]int{}
	for i, a := range answers {
		counts[a.status]++
		switch {
		case a.problem != "":
			t.Errorf("sign-in %d: %s", i, a.problem)
		case a.status == http.StatusUnauthorized && a.code == "Unauthorized":
		case a.status == http.StatusTooManyRequests && a.code == "RateLimited" && a.retryAfter != "":
		case a.status == http.StatusServiceUnavailable && a.code == "Unavailable" && a.retryAfter != "":
		default:
			t.Errorf("sign-in %d: %+v", i, a)
		}
	}
	t.Logf("answers %v; resident memory %d MiB before, peak %d MiB above it", counts, before/1024, grew/1024)
	if grew >= 256*1024 {
		t.Errorf("200 parallel sign-ins grew resident memory by %d MiB, want less than 256", grew/1024)
	}
}
