package gate_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	clientauth "github.com/bbc28f59/engine/clientx/auth"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/vault"
	"github.com/golang-jwt/jwt/v5"
	"github.com/uptrace/bun"
)

func TestSignInAndMe(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ts := h.signIn(t, "Alice@Example.com ")
	if ts.TokenType != "Bearer" || ts.ExpiresIn != 300 || ts.AccessToken == "" || ts.RefreshToken == "" {
		t.Fatalf("token set = %+v", ts)
	}
	if want := h.clock.Now().Add(5 * time.Minute); !ts.ExpiresAt.Equal(want) {
		t.Fatalf("expiresAt = %v, want %v", ts.ExpiresAt, want)
	}
	c := h.client(t, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return ts.AccessToken, nil }}))
	me := clientx.Call(context.Background(), c, gate.Me, gate.MeInput{})
	if me.Error != nil {
		t.Fatal(me.Error)
	}
	want := engine.Principal{ID: h.userID["alice@example.com"], Email: "alice@example.com", Tenant: "t1", Scopes: []string{"notes:read", "notes:write"}}
	got, _ := json.Marshal(me.Data)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Fatalf("me = %s, want %s", got, wantJSON)
	}
}

func TestSignInFailures(t *testing.T) {
	t.Parallel()
	h := setup(t)
	for _, tc := range []struct{ name, body string }{
		{"wrong password", `{"email":"alice@example.com","password":"wrong password"}`},
		{"unknown email", `{"email":"nobody@example.com","password":"` + pw + `"}`},
	} {
		status, _, env := h.raw(t, "auth.signInEmail", "", tc.body)
		if status != http.StatusUnauthorized || errorJSON(t, env) != `{"code":"Unauthorized","data":{}}` {
			t.Errorf("%s: %d %v", tc.name, status, env)
		}
	}
	// Empty fields are refused by the flows' input schemas, before any handler runs.
	for _, tc := range []struct{ flow, body, path string }{
		{"auth.signInEmail", `{"email":"","password":"` + pw + `"}`, "email"},
		{"auth.signInEmail", `{"email":"alice@example.com","password":""}`, "password"},
		{"auth.refresh", `{"refreshToken":""}`, "refreshToken"},
	} {
		status, _, env := h.raw(t, tc.flow, "", tc.body)
		if got := errorJSON(t, env); status != http.StatusBadRequest || !strings.Contains(got, `"code":"ValidationError"`) || !strings.Contains(got, tc.path) {
			t.Errorf("%s %s: %d %s", tc.flow, tc.body, status, got)
		}
	}
}

func TestSignUp(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) { c.PublicSignUp = true })
	c := h.client(t)
	ctx := context.Background()
	r := clientx.Call(ctx, c, gate.SignUpEmail, gate.Credentials{Email: "new@example.com", Password: "long enough pw"})
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	again := clientx.Call(ctx, c, gate.SignUpEmail, gate.Credentials{Email: "NEW@example.com", Password: "long enough pw"})
	if again.Error == nil || again.Error.Code != engine.CodeConflict {
		t.Fatalf("second sign-up: %+v", again.Error)
	}
	short := clientx.Call(ctx, c, gate.SignUpEmail, gate.Credentials{Email: "x@example.com", Password: "short"})
	if short.Error == nil || short.Error.Code != engine.CodeValidation {
		t.Fatalf("short password: %+v", short.Error)
	}
	bad := clientx.Call(ctx, c, gate.SignUpEmail, gate.Credentials{Email: "not an email", Password: "long enough pw"})
	if bad.Error == nil || bad.Error.Code != engine.CodeValidation {
		t.Fatalf("bad email: %+v", bad.Error)
	}
	if in := clientx.Call(ctx, c, gate.SignInEmail, gate.Credentials{Email: "new@example.com", Password: "long enough pw"}); in.Error != nil {
		t.Fatal(in.Error)
	}
}

func TestRefreshRotatesAndReuseRevokesFamily(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ctx := context.Background()
	c := h.client(t)
	first := h.signIn(t, "alice@example.com")
	second := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: first.RefreshToken})
	if second.Error != nil {
		t.Fatal(second.Error)
	}
	if second.Data.RefreshToken == first.RefreshToken {
		t.Fatal("refresh token was not rotated")
	}
	// Reusing the first token after the grace is theft or a bug: it fails and revokes
	// the family, so the rotated token dies with it.
	h.clock.Advance(gate.DefaultRefreshReuseGrace)
	reuse := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: first.RefreshToken})
	if reuse.Error == nil || reuse.Error.Code != engine.CodeUnauthorized || reuse.Status != 401 {
		t.Fatalf("reuse: %+v", reuse)
	}
	after := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: second.Data.RefreshToken})
	if after.Error == nil || after.Error.Code != engine.CodeUnauthorized {
		t.Fatalf("token of a revoked family still refreshes: %+v", after)
	}
	// Other sign-ins (other families) are untouched.
	other := h.signIn(t, "alice@example.com")
	if r := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: other.RefreshToken}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: "made-up"}); r.Error == nil || r.Error.Code != engine.CodeUnauthorized {
		t.Fatalf("unknown token: %+v", r)
	}
}

func TestRefreshTokenExpires(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ts := h.signIn(t, "bob@example.com")
	h.clock.Advance(31 * 24 * time.Hour)
	r := clientx.Call(context.Background(), h.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: ts.RefreshToken})
	if r.Error == nil || r.Error.Code != engine.CodeUnauthorized {
		t.Fatalf("expired refresh token: %+v", r)
	}
}

// An expired access token is answered 401; the client's session refreshes once and the
// retried call succeeds.
func TestExpiredAccessTokenRefreshesOnce(t *testing.T) {
	t.Parallel()
	h := setup(t)
	sess := clientauth.NewMemorySession()
	ts := h.signIn(t, "alice@example.com")
	sess.Set(ts) // gate.TokenSet is clientx/auth's: no conversion
	var refreshes atomic.Int32
	c := h.client(t, clientx.WithClientAuth(func(c *clientx.Client) clientx.Auth {
		return clientx.Auth{GetToken: sess.GetToken, Refresh: func(ctx context.Context) error {
			refreshes.Add(1)
			return sess.Refresh(ctx, c)
		}}
	}))
	ctx := context.Background()
	if r := clientx.Call(ctx, c, echoFlow, EchoIn{Text: "hi"}); r.Error != nil || refreshes.Load() != 0 {
		t.Fatalf("fresh token: %+v, refreshes %d", r.Error, refreshes.Load())
	}
	h.clock.Advance(6 * time.Minute)
	status, _, env := h.raw(t, "t.echo", ts.AccessToken, `{}`)
	if status != 401 || errorJSON(t, env) != `{"code":"Unauthorized","data":{}}` {
		t.Fatalf("expired token: %d %v", status, env)
	}
	r := clientx.Call(ctx, c, echoFlow, EchoIn{Text: "again"})
	if r.Error != nil || r.Data.Text != "again" {
		t.Fatalf("after refresh: %+v", r)
	}
	if refreshes.Load() != 1 {
		t.Fatalf("refreshes = %d, want 1", refreshes.Load())
	}
	now, _ := sess.Tokens()
	if now.AccessToken == ts.AccessToken || now.RefreshToken == ts.RefreshToken {
		t.Fatal("session was not updated by the refresh")
	}
	// The token endpoints do not read the stale token a client still sends with them.
	if status, _, env := h.post(t, "/auth/sign-in/email", signInBody("alice@example.com", pw), "Authorization", "Bearer "+ts.AccessToken); status != 200 {
		t.Fatalf("sign-in with an expired token attached: %d %v", status, env)
	}
	if status, _, env := h.post(t, "/auth/refresh", `{"refreshToken":"`+now.RefreshToken+`"}`, "Authorization", "Bearer "+ts.AccessToken); status != 200 {
		t.Fatalf("refresh with an expired token attached: %d %v", status, env)
	}
}

func TestRejectedTokens(t *testing.T) {
	t.Parallel()
	h := setup(t)
	good := h.signIn(t, "alice@example.com").AccessToken
	// Use the good token first, so verified-token caching is in play for the rest.
	if status, _, env := h.raw(t, "t.echo", good, `{}`); status != 200 {
		t.Fatalf("good token: %d %v", status, env)
	}
	parts := strings.Split(good, ".")
	enc := base64.RawURLEncoding

	payload, _ := enc.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(payload, &claims)
	claims["scopes"] = []string{"admin"}
	forged, _ := json.Marshal(claims)
	tampered := parts[0] + "." + enc.EncodeToString(forged) + "." + parts[2]

	none := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"x"}`)) + "." + parts[1] + "."

	otherKey := func(claims jwt.MapClaims, method jwt.SigningMethod, key any, kid string) string {
		tk := jwt.NewWithClaims(method, claims)
		tk.Header["kid"] = kid
		s, err := tk.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	header, _ := enc.DecodeString(parts[0])
	var hdr map[string]any
	_ = json.Unmarshal(header, &hdr)
	kid, _ := hdr["kid"].(string)
	now := h.clock.Now()
	base := jwt.MapClaims{"sub": "x", "iss": "engine", "aud": "engine", "exp": now.Add(time.Minute).Unix(), "iat": now.Unix()}
	// with signs base with one claim changed (or removed, for nil) under the right key.
	with := func(claim string, v any) string {
		c := jwt.MapClaims{}
		for k, x := range base {
			c[k] = x
		}
		if v == nil {
			delete(c, claim)
		} else {
			c[claim] = v
		}
		return otherKey(c, jwt.SigningMethodHS256, []byte(testKey), kid)
	}
	if status, _, env := h.raw(t, "t.echo", with("sub", "x"), `{}`); status != 200 {
		t.Fatalf("the base claims are refused: %d %v", status, env)
	}
	later := now.Add(time.Minute).Unix()
	for _, tc := range []struct{ name, token string }{
		{"tampered claims", tampered},
		{"alg none", none},
		{"wrong key", otherKey(base, jwt.SigningMethodHS256, []byte("another key, 32 bytes or longer!!"), kid)},
		{"unknown kid", otherKey(base, jwt.SigningMethodHS256, []byte(testKey), "nope")},
		{"HS512", otherKey(base, jwt.SigningMethodHS512, []byte(testKey), kid)},
		{"no expiry", with("exp", nil)},
		{"expired", with("exp", now.Unix())},
		{"exp a string", with("exp", fmt.Sprint(later))},
		{"exp a bool", with("exp", true)},
		{"exp an object", with("exp", map[string]any{"n": later})},
		{"exp null", with("exp", json.RawMessage("null"))},
		{"iat a string", with("iat", fmt.Sprint(now.Unix()))},
		{"iat null", with("iat", json.RawMessage("null"))},
		{"iat in the future", with("iat", later)},
		{"nbf a string", with("nbf", fmt.Sprint(now.Unix()))},
		{"nbf a bool", with("nbf", false)},
		{"nbf in the future", with("nbf", later)},
		{"no issuer", with("iss", nil)},
		{"wrong issuer", with("iss", "someone else")},
		{"issuer a number", with("iss", 7)},
		{"no audience", with("aud", nil)},
		{"wrong audience", with("aud", "another app")},
		{"audience a number", with("aud", 7)},
		{"audience with a number", with("aud", []any{"engine", 7})},
		{"no subject", with("sub", nil)},
		{"subject a number", with("sub", 7)},
		{"scopes a string", with("scopes", "admin")},
		{"garbage", "not.a.token"},
	} {
		status, rh, env := h.raw(t, "t.echo", tc.token, `{}`)
		if status != http.StatusUnauthorized || errorJSON(t, env) != `{"code":"Unauthorized","data":{}}` {
			t.Errorf("%s: %d %v", tc.name, status, env)
		}
		if got := rh.Get("WWW-Authenticate"); got != `Bearer error="invalid_token"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, got)
		}
	}
	for _, tc := range []struct{ name, token string }{
		{"audience list", with("aud", []string{"another app", "engine"})},
		{"nbf now", with("nbf", now.Unix())},
		{"fractional exp", with("exp", float64(later)+0.5)},
		// Numbers at the edges of what a date claim may start with.
		{"iat zero", with("iat", 0)},
		{"nbf before the epoch", with("nbf", -1)},
		{"exp far off", with("exp", int64(9999999999))},
	} {
		if status, _, env := h.raw(t, "t.echo", tc.token, `{}`); status != 200 {
			t.Errorf("%s: %d %v", tc.name, status, env)
		}
	}
	// A public flow refuses a bad token too, so that a client refreshes it rather than
	// being served as anonymous; without a token it runs anonymously.
	status, rh, env := h.raw(t, "t.whoami", tampered, `{}`)
	if status != 401 || errorJSON(t, env) != `{"code":"Unauthorized","data":{}}` || rh.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("public flow with a bad token: %d %v %v", status, rh, env)
	}
	status, _, env = h.raw(t, "t.whoami", "", `{}`)
	if status != 200 || env["data"].(map[string]any)["text"] != "anonymous" {
		t.Errorf("public flow without a token: %d %v", status, env)
	}
	status, _, env = h.raw(t, "t.whoami", good, `{}`)
	if status != 200 || env["data"].(map[string]any)["text"] != "alice@example.com" {
		t.Errorf("public flow with a good token: %d %v", status, env)
	}
}

// A verified token is remembered, but the cache repeats every check that depends on the
// clock: a clock stepped back to before iat or nbf refuses it, as does expiry.
func TestTokenCacheRechecksTime(t *testing.T) {
	t.Parallel()
	h := setup(t)
	now := h.clock.Now()
	tok := func(c jwt.MapClaims) string {
		tk := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		tk.Header["kid"] = testKid
		s, err := tk.SignedString([]byte(testKey))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(extra string) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "x", "iss": "engine", "aud": "engine", "exp": now.Add(time.Hour).Unix()}
		c[extra] = now.Add(30 * time.Second).Unix()
		return c
	}
	for _, extra := range []string{"iat", "nbf"} {
		t.Run(extra, func(t *testing.T) {
			h.clock.Set(now.Add(time.Minute))
			token := tok(claims(extra))
			if status, _, env := h.raw(t, "t.echo", token, `{}`); status != 200 {
				t.Fatalf("valid token: %d %v", status, env)
			}
			h.clock.Advance(-time.Minute) // now before the claim
			if status, _, _ := h.raw(t, "t.echo", token, `{}`); status != http.StatusUnauthorized {
				t.Fatalf("%s after the clock stepped back: %d", extra, status)
			}
			h.clock.Advance(time.Minute)
			if status, _, _ := h.raw(t, "t.echo", token, `{}`); status != 200 {
				t.Fatalf("back in the window: %d", status)
			}
			h.clock.Advance(time.Hour)
			if status, _, _ := h.raw(t, "t.echo", token, `{}`); status != http.StatusUnauthorized {
				t.Fatalf("expired: %d", status)
			}
		})
	}
}

// The cache holds at most its bound: one more verified token starts it afresh.
func TestTokenCacheIsBounded(t *testing.T) {
	t.Parallel()
	h := setup(t)
	gate.SetTokenCacheSize(h.auth, 3)
	check := func(id string) {
		tok, err := h.auth.AccessToken(engine.Principal{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		if _, err := h.auth.Authenticate(r); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	for _, id := range []string{"a", "b", "a", "c", "d", "e"} {
		check(id)
		got = append(got, gate.TokenCacheLen(h.auth))
	}
	if fmt.Sprint(got) != "[1 2 2 3 1 2]" {
		t.Fatalf("cache sizes %v", got)
	}
}

// Tokens are issued with the configured audience and refused by an Auth expecting
// another; the default audience is "engine".
func TestAudience(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	mk := func(aud string) *gate.Auth {
		a, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: gate.Keys{Current: gate.Key{Secret: testSecret}}, Audience: aud, Hash: gate.FastHashParams})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	p := engine.Principal{ID: "u1"}
	req := func(tok string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	for _, tc := range []struct {
		issuer, verifier string
		ok               bool
	}{{"", "", true}, {"", "engine", true}, {"billing", "billing", true}, {"billing", "", false}, {"", "billing", false}} {
		tok, err := mk(tc.issuer).AccessToken(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = mk(tc.verifier).Authenticate(req(tok))
		if (err == nil) != tc.ok {
			t.Errorf("issued for %q, checked for %q: %v", tc.issuer, tc.verifier, err)
		}
	}
}

// Rotation: a token signed with the previous key still verifies after the key moves to
// Previous; once dropped, it does not.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	clock := newClock()
	oldKey := gate.Key{Secret: vault.NewSecret(testKey)}
	newKey := gate.Key{Secret: vault.NewSecret("a fresh key of at least thirty-two bytes")}
	mk := func(keys gate.Keys) *gate.Auth {
		a, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: keys, Hash: gate.FastHashParams, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	p := engine.Principal{ID: "u1", Email: "u@example.com", Tenant: "t", Scopes: []string{}}
	tok, err := mk(gate.Keys{Current: oldKey}).AccessToken(p)
	if err != nil {
		t.Fatal(err)
	}
	req := func(tok string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	got, err := mk(gate.Keys{Current: newKey, Previous: []gate.Key{oldKey}}).Authenticate(req(tok))
	if err != nil || got.ID != "u1" {
		t.Fatalf("previous key: %v %v", got, err)
	}
	if _, err := mk(gate.Keys{Current: newKey}).Authenticate(req(tok)); !engine.IsCode(err, engine.CodeUnauthorized) {
		t.Fatalf("dropped key: %v", err)
	}
	if _, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret("short")}}}); err == nil {
		t.Fatal("a short key was accepted")
	}
}

func TestSignOutRevokesRefresh(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ts := h.signIn(t, "bob@example.com")
	c := h.client(t, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return ts.AccessToken, nil }}))
	ctx := context.Background()
	if r := clientx.Call(ctx, c, gate.SignOut, gate.SignOutInput{RefreshToken: ts.RefreshToken}); r.Error != nil || r.Status != http.StatusNoContent {
		t.Fatalf("sign out: %+v", r)
	}
	if r := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: ts.RefreshToken}); r.Error == nil || r.Error.Code != engine.CodeUnauthorized {
		t.Fatalf("refresh after sign-out: %+v", r)
	}
}

func TestEnsureUserIsIdempotent(t *testing.T) {
	t.Parallel()
	h := setup(t)
	id, err := h.auth.EnsureUser(context.Background(), gate.User{Email: "ALICE@example.com", Password: "a different password"})
	if err != nil || id != h.userID["alice@example.com"] {
		t.Fatalf("EnsureUser again: %q %v", id, err)
	}
	h.signIn(t, "alice@example.com") // the password was not reset
}

// Two tabs refreshing at once with one refresh token: exactly one rotation wins, the
// others are 401, and the family lives on, so the winner keeps refreshing and the user
// stays signed in. A reuse after RefreshReuseGrace is theft and revokes the family; with
// the grace turned off, the race itself revokes it. On every database that holds
// refresh tokens.
func TestConcurrentRefreshOfOneToken(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) *bun.DB{
		"sqlite": func(t *testing.T) *bun.DB { return openSQLite(t) },
		"postgres": func(t *testing.T) *bun.DB {
			return testenv.PostgresDB(t, testenv.Schema(t, testenv.PostgresDSN(t, "the Postgres run"), "gate_refresh_"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			h := setup(t, func(c *gate.AuthConfig) { c.DB = db })
			ctx := context.Background()
			c := h.client(t)
			refresh := func(tok string) clientx.Result[gate.TokenSet] {
				return clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: tok})
			}
			refused := func(what string, r clientx.Result[gate.TokenSet]) {
				t.Helper()
				if r.Error == nil || r.Error.Code != engine.CodeUnauthorized || r.Status != 401 {
					t.Fatalf("%s: %+v, want 401 Unauthorized", what, r)
				}
			}
			first := h.signIn(t, "alice@example.com")
			const tabs = 10
			// Every tab reads the unspent token before any spends it, so that all but
			// one lose the race to spend it rather than find it spent.
			var read atomic.Int32
			allRead := make(chan struct{})
			gate.SetRotateHook(h.auth, func() {
				if read.Add(1) == tabs {
					close(allRead)
				}
				select {
				case <-allRead:
				case <-time.After(10 * time.Second):
				}
			})
			results := make(chan clientx.Result[gate.TokenSet], tabs)
			for range tabs {
				go func() { results <- refresh(first.RefreshToken) }()
			}
			var wins []gate.TokenSet
			for range tabs {
				r := <-results
				if r.Error == nil {
					wins = append(wins, r.Data)
					continue
				}
				refused("a losing tab", r)
			}
			if len(wins) != 1 || read.Load() != tabs {
				t.Fatalf("%d rotations succeeded after %d reads, want 1 after %d", len(wins), read.Load(), tabs)
			}
			// Within the grace a reuse is refused and revokes nothing: the winner goes on.
			refused("a reuse within the grace", refresh(first.RefreshToken))
			next := refresh(wins[0].RefreshToken)
			if next.Error != nil {
				t.Fatalf("the winner's refresh after the race: %+v", next)
			}
			if status, _, env := h.raw(t, "t.echo", next.Data.AccessToken, `{}`); status != 200 {
				t.Fatalf("the winner's access token: %d %v", status, env)
			}
			// After the grace the same reuse is theft: the family is revoked.
			h.clock.Advance(gate.DefaultRefreshReuseGrace)
			refused("a reuse after the grace", refresh(first.RefreshToken))
			refused("the family after the theft", refresh(next.Data.RefreshToken))

			// With the grace off, the race itself revokes the family.
			strict := setup(t, func(c *gate.AuthConfig) { c.DB = db; c.RefreshReuseGrace = -1 })
			ts := strict.signIn(t, "bob@example.com")
			won := clientx.Call(ctx, strict.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: ts.RefreshToken})
			if won.Error != nil {
				t.Fatal(won.Error)
			}
			refused("a reuse without a grace", clientx.Call(ctx, strict.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: ts.RefreshToken}))
			refused("the family without a grace", clientx.Call(ctx, strict.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: won.Data.RefreshToken}))
		})
	}
}

// Signing out with another user's refresh token answers like success and ends nothing
// of theirs, nor of the caller's; signing out with one of the caller's tokens ends that
// session only; signing out with no token ends every session of the caller and no one
// else's.
func TestSignOutTouchesOnlyTheCaller(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ctx := context.Background()
	alice, bob := h.signIn(t, "alice@example.com"), h.signIn(t, "bob@example.com")
	bobsOther, bobsThird := h.signIn(t, "bob@example.com"), h.signIn(t, "bob@example.com")
	as := func(ts gate.TokenSet) *clientx.Client {
		return h.client(t, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return ts.AccessToken, nil }}))
	}
	signOut := func(tok string) {
		t.Helper()
		if r := clientx.Call(ctx, as(bob), gate.SignOut, gate.SignOutInput{RefreshToken: tok}); r.Error != nil || r.Status != http.StatusNoContent {
			t.Fatalf("bob's sign-out with %q: %+v", tok, r)
		}
	}
	// refresh rotates tok and returns the new token, or "" when it was refused.
	refresh := func(tok string) string {
		t.Helper()
		r := clientx.Call(ctx, h.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: tok})
		if r.Error != nil {
			if r.Error.Code != engine.CodeUnauthorized {
				t.Fatalf("refresh: %+v", r)
			}
			return ""
		}
		return r.Data.RefreshToken
	}
	signOut(alice.RefreshToken)
	aliceTok := refresh(alice.RefreshToken)
	if aliceTok == "" {
		t.Fatal("alice's session ended by bob's sign-out with her token")
	}
	bobTok := refresh(bob.RefreshToken)
	if bobTok == "" {
		t.Fatal("bob's own session ended by his sign-out with alice's token")
	}
	signOut(bobsOther.RefreshToken)
	if refresh(bobsOther.RefreshToken) != "" {
		t.Error("the session bob signed out of still refreshes")
	}
	if bobTok = refresh(bobTok); bobTok == "" {
		t.Fatal("bob's first session ended when he signed out of his second")
	}
	signOut("")
	for name, tok := range map[string]string{"bob's first session": bobTok, "bob's third session": bobsThird.RefreshToken} {
		if refresh(tok) != "" {
			t.Errorf("%s after signing out everywhere still refreshes", name)
		}
	}
	if refresh(aliceTok) == "" {
		t.Fatal("alice's session ended by bob signing out everywhere")
	}
	if r := clientx.Call(ctx, h.client(t), gate.SignOut, gate.SignOutInput{}); r.Error == nil || r.Error.Code != engine.CodeUnauthorized {
		t.Fatalf("anonymous sign-out: %+v", r)
	}
}

// A family with any revoked row is dead, even for a token issued after the revocation:
// the race of a rotation with a replay that revoked the family as the new token was
// being stored. The race is staged by revoking the older row directly.
func TestRefreshHonoursRevokedFamily(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ctx := context.Background()
	first := h.signIn(t, "alice@example.com")
	second := clientx.Call(ctx, h.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: first.RefreshToken})
	if second.Error != nil {
		t.Fatal(second.Error)
	}
	sum := sha256.Sum256([]byte(first.RefreshToken))
	if _, err := h.db.ExecContext(ctx, "UPDATE engine_refresh_tokens SET revoked = TRUE WHERE hash = ?", hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	if r := clientx.Call(ctx, h.client(t), gate.Refresh, gate.RefreshInput{RefreshToken: second.Data.RefreshToken}); r.Error == nil || r.Error.Code != engine.CodeUnauthorized {
		t.Fatalf("refresh in a revoked family: %+v", r)
	}
}

func TestEnsureUserRefusesBadScopes(t *testing.T) {
	t.Parallel()
	h := setup(t)
	for i, scopes := range [][]string{{""}, {"a b"}, {"ok", "tab\there"}, {"new\nline"}, {"ok", ""}} {
		if _, err := h.auth.EnsureUser(context.Background(), gate.User{Email: fmt.Sprintf("u%d@example.com", i), Password: pw, Scopes: scopes}); err == nil {
			t.Errorf("scopes %q accepted", scopes)
		}
	}
	if _, err := h.auth.EnsureUser(context.Background(), gate.User{Email: "fine@example.com", Password: pw, Scopes: []string{"a:b", "c"}}); err != nil {
		t.Fatal(err)
	}
}

// The app's SignUp decides a new user's tenant and scopes, or refuses the sign-up; scopes
// that could not survive storage (empty, or with spaces) are the app's bug, an internal
// error that creates no user.
func TestSignUpFunc(t *testing.T) {
	t.Parallel()
	h := setup(t, noLimits, func(c *gate.AuthConfig) {
		c.PublicSignUp = true
		c.SignUp = func(_ context.Context, email string) (string, []string, error) {
			switch email {
			case "member@example.com":
				return "team", []string{"notes:read", "notes:write"}, nil
			case "loner@example.com":
				return "", nil, nil
			case "empty@example.com":
				return "team", []string{"notes:read", ""}, nil
			case "spaced@example.com":
				return "team", []string{"notes:read notes:write"}, nil
			case "tabbed@example.com":
				return "team", []string{"notes:read\tadmin"}, nil
			}
			return "", nil, gate.Deny("invite only")
		}
	})
	const password = "long enough pw"
	me := func(ts gate.TokenSet) engine.Principal {
		c := h.client(t, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return ts.AccessToken, nil }}))
		r := clientx.Call(context.Background(), c, gate.Me, gate.MeInput{})
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		return r.Data
	}
	signUp := func(email string) (int, map[string]any) {
		status, _, env := h.post(t, "/auth/sign-up/email", signInBody(email, password))
		return status, env
	}
	status, env := signUp("member@example.com")
	if status != http.StatusOK {
		t.Fatalf("member: %d %v", status, env)
	}
	if p := me(h.signInAs(t, "member@example.com", password)); p.Tenant != "team" || fmt.Sprint(p.Scopes) != "[notes:read notes:write]" {
		t.Errorf("member = %+v", p)
	}
	if status, env := signUp("loner@example.com"); status != http.StatusOK {
		t.Fatalf("loner: %d %v", status, env)
	}
	if p := me(h.signInAs(t, "loner@example.com", password)); p.Tenant != p.ID || len(p.Scopes) != 0 {
		t.Errorf("loner = %+v, want a tenant of its own and no scopes", p)
	}
	if status, env := signUp("stranger@example.com"); status != http.StatusForbidden || errorJSON(t, env) != `{"code":"Forbidden","data":{"gate":"policy","reason":"invite only"}}` {
		t.Errorf("stranger: %d %v", status, env)
	}
	for _, email := range []string{"empty@example.com", "spaced@example.com", "tabbed@example.com"} {
		if status, env := signUp(email); status != http.StatusInternalServerError || errorJSON(t, env) != `{"code":"InternalError","data":{"message":"internal error"}}` {
			t.Errorf("%s: %d %v", email, status, env)
		}
	}
	for _, email := range []string{"stranger@example.com", "empty@example.com", "spaced@example.com", "tabbed@example.com"} {
		if status, _, _ := h.post(t, signInPath, signInBody(email, password)); status != http.StatusUnauthorized {
			t.Errorf("%s was created: sign-in %d", email, status)
		}
	}
}

// KeysFromVault reads the current key and the previous ones by name; a name the vault
// lacks is an error, never a key left out.
func TestKeysFromVault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const oldKey = "an older key of at least thirty-two bytes"
	v, err := vault.New(vault.Map{"JWT_KEY": testKey, "JWT_OLD": oldKey})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := gate.KeysFromVault(ctx, v, "JWT_KEY", "JWT_OLD")
	if err != nil {
		t.Fatal(err)
	}
	if keys.Current.Secret.Reveal() != testKey || len(keys.Previous) != 1 || keys.Previous[0].Secret.Reveal() != oldKey {
		t.Fatalf("keys: current %d bytes, %d previous", len(keys.Current.Secret.Reveal()), len(keys.Previous))
	}
	for name, names := range map[string][]string{
		"missing current":  {"JWT_NONE"},
		"missing previous": {"JWT_KEY", "JWT_OLD", "JWT_NONE"},
	} {
		if _, err := gate.KeysFromVault(ctx, v, names[0], names[1:]...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := gate.KeysFromVault(ctx, nil, "JWT_KEY"); err == nil {
		t.Error("nil vault: no error")
	}
}

// Two instances seeding the same user at once both get its one id: the one that loses
// the insert reads the winner's row. Both are held in their hashing slots until both
// have found no user, so the race is certain.
func TestEnsureUserRace(t *testing.T) {
	t.Parallel()
	h := setup(t, func(c *gate.AuthConfig) { c.Hashing = gate.HashBound{Concurrent: 2} })
	hold := holdSlots(h.auth)
	ids := make(chan string, 2)
	for range 2 {
		go func() {
			id, err := h.auth.EnsureUser(context.Background(), gate.User{Email: "carol@example.com", Password: pw})
			if err != nil {
				t.Error(err)
			}
			ids <- id
		}()
	}
	<-hold.entered
	<-hold.entered
	close(hold.release)
	a, b := <-ids, <-ids
	if a == "" || a != b {
		t.Fatalf("ids %q and %q, want one id", a, b)
	}
	var n int
	if err := h.db.QueryRowContext(context.Background(), "SELECT count(*) FROM engine_users WHERE email = 'carol@example.com'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows for carol (%v)", n, err)
	}
	h.signIn(t, "carol@example.com")
}

// A refresh token of a user that no longer exists is Unauthorized, like any dead token.
func TestRefreshOfDeletedUser(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ts := h.signIn(t, "bob@example.com")
	if _, err := h.db.ExecContext(context.Background(), "DELETE FROM engine_users WHERE email = 'bob@example.com'"); err != nil {
		t.Fatal(err)
	}
	status, _, env := h.post(t, "/auth/refresh", `{"refreshToken":"`+ts.RefreshToken+`"}`)
	if status != http.StatusUnauthorized || errorJSON(t, env) != `{"code":"Unauthorized","data":{}}` {
		t.Fatalf("refresh of a deleted user: %d %v", status, env)
	}
}
