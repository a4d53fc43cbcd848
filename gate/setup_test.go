package gate_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/vault"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

// fakeClock is a settable clock shared by the auth and the limiters under test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var dbSeq atomic.Int64

// openSQLite returns a private in-memory SQLite database.
func openSQLite(t testing.TB) *bun.DB {
	t.Helper()
	return testenv.MemorySQLite(t, "gate-test")
}

// openPostgres returns the test Postgres database, or skips saying why.
func openPostgres(t testing.TB) *bun.DB {
	t.Helper()
	return testenv.PostgresDB(t, testenv.PostgresDSN(t, "the Postgres run"))
}

const testKey = "0123456789abcdef0123456789abcdef-test-key"

var testSecret = vault.NewSecret(testKey)

// testKid is the key id gate derives from testKey: the first 6 bytes of its SHA-256.
var testKid = func() string {
	sum := sha256.Sum256([]byte(testKey))
	return base64.RawURLEncoding.EncodeToString(sum[:6])
}()

// The test app's flows: one per kind of gate.
var (
	testUnit = engine.NewUnit("t")
	echoFlow = engine.Define[EchoIn, EchoIn](testUnit, "echo")
	scoped   = engine.Define[EchoIn, EchoIn](testUnit, "scoped")
	policed  = engine.Define[EchoIn, EchoIn](testUnit, "policed")
	limited  = engine.Define[EchoIn, EchoIn](testUnit, "limited", engine.Public())
	whoami   = engine.Define[EchoIn, EchoIn](testUnit, "whoami", engine.Public())
)

type EchoIn struct {
	Text string `json:"text,omitempty"`
}

type harness struct {
	auth   *gate.Auth
	app    *engine.App
	srv    *httptest.Server
	db     *bun.DB
	clock  *fakeClock
	lim    *gate.MemoryLimiter
	userID map[string]string
}

const pw = "correct horse battery staple"

// setup builds an app with auth (fast hashing, fake clock, otherwise the defaults as
// adjusted by each of with), the test flows and seeded users, served over loopback HTTP.
func setup(t testing.TB, with ...func(*gate.AuthConfig)) *harness {
	t.Helper()
	h := &harness{clock: newClock(), userID: map[string]string{}}
	db := openSQLite(t)
	h.db = db
	v, err := vault.New(vault.Map{"JWT_KEY": testKey})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := gate.KeysFromVault(context.Background(), v, "JWT_KEY")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gate.AuthConfig{DB: db, Keys: keys, Hash: gate.FastHashParams, Now: h.clock.Now, AccessTTL: 5 * time.Minute}
	for _, w := range with {
		w(&cfg)
	}
	h.auth, err = gate.NewAuth(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.lim, err = gate.NewMemoryLimiter(gate.Limit{Events: 5, Per: time.Minute}, gate.WithNow(h.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	echo := func(_ *engine.Fx, in EchoIn) (EchoIn, error) { return in, nil }
	h.app, err = engine.New(
		h.auth.Option(),
		vault.With(v),
		engine.Bind(echoFlow, echo),
		engine.Bind(scoped, echo, gate.Scopes("notes:write")),
		engine.Bind(policed, echo, gate.Policy(func(fx *engine.Fx, in EchoIn) error {
			if in.Text != "please" {
				return gate.Deny("ask nicely")
			}
			return nil
		})),
		engine.Bind(limited, echo, gate.RateLimit(h.lim, gate.ByClientIP(gate.RemoteAddr))),
		engine.Bind(whoami, func(fx *engine.Fx, in EchoIn) (EchoIn, error) {
			if p := fx.Principal(); p != nil {
				return EchoIn{Text: p.Email}, nil
			}
			return EchoIn{Text: "anonymous"}, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.app.Close(context.Background()) })
	for _, u := range []gate.User{
		{Email: "alice@example.com", Password: pw, Tenant: "t1", Scopes: []string{"notes:read", "notes:write"}},
		{Email: "bob@example.com", Password: pw, Tenant: "t1", Scopes: []string{"notes:read"}},
	} {
		id, err := h.auth.EnsureUser(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		h.userID[u.Email] = id
	}
	h.srv = httptest.NewServer(h.app.Handler())
	t.Cleanup(h.srv.Close)
	return h
}

// client returns a typed client over REST, with bearer auth when tok is not nil.
func (h *harness) client(t testing.TB, opts ...clientx.Option) *clientx.Client {
	t.Helper()
	c, err := clientx.ForApp(h.app, h.srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// principal returns the principal of a seeded user, as its access tokens carry it.
func (h *harness) principal(t testing.TB, email string) engine.Principal {
	t.Helper()
	ts := h.signIn(t, email)
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+ts.AccessToken)
	p, err := h.auth.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

func (h *harness) signIn(t testing.TB, email string) gate.TokenSet {
	t.Helper()
	return h.signInAs(t, email, pw)
}

// signInAs signs in with the given password, failing the test unless it succeeds.
func (h *harness) signInAs(t testing.TB, email, password string) gate.TokenSet {
	t.Helper()
	r := clientx.Call(context.Background(), h.client(t), gate.SignInEmail, gate.Credentials{Email: email, Password: password})
	if r.Error != nil {
		t.Fatalf("sign in %s: %v", email, r.Error)
	}
	return r.Data
}

// raw posts an RPC call with an optional bearer token and returns status, headers and
// the decoded envelope.
func (h *harness) raw(t *testing.T, flow, token, body string) (int, http.Header, map[string]any) {
	t.Helper()
	var hdr []string
	if token != "" {
		hdr = []string{"Authorization", "Bearer " + token}
	}
	return h.post(t, "/_engine/"+strings.Replace(flow, ".", "/", 1), body, hdr...)
}

// post sends a JSON POST to path with the given header name/value pairs and returns
// status, headers and the decoded envelope; a reply that is not one fails the test.
func (h *harness) post(t testing.TB, path, body string, hdr ...string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("%s: not an envelope: %s", path, b)
		}
	}
	return resp.StatusCode, resp.Header, env
}

// status posts body to path and returns the status, or 0 when no answer came; unlike
// post it touches no testing.TB, so goroutines a test starts may call it.
func (h *harness) status(path, body string) int {
	resp, err := http.Post(h.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// signInBody is the JSON body of a sign-in.
func signInBody(email, password string) string {
	b, _ := json.Marshal(gate.Credentials{Email: email, Password: password})
	return string(b)
}

// headerIP is a test IPSource: the client IP is the X-Test-IP header, so one loopback
// client can stand for many.
type headerIP struct{}

func (headerIP) ClientIP(r *http.Request) (netip.Addr, error) {
	return netip.ParseAddr(r.Header.Get("X-Test-IP"))
}

// failingIP is an IPSource that cannot read any request.
type failingIP struct{}

func (failingIP) ClientIP(*http.Request) (netip.Addr, error) {
	return netip.Addr{}, errors.New("no client IP here")
}

// errorJSON returns the envelope's error object re-encoded, for exact comparisons.
func errorJSON(t *testing.T, env map[string]any) string {
	t.Helper()
	b, err := json.Marshal(env["error"])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// benchDB is openSQLite for benchmarks.
func benchDB(b *testing.B) *bun.DB {
	b.Helper()
	sqldb, err := sql.Open("sqlite", fmt.Sprintf("file:gate-bench-%d?mode=memory&cache=shared", dbSeq.Add(1)))
	if err != nil {
		b.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	b.Cleanup(func() { _ = db.Close() })
	return db
}
