package gate_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	clientauth "github.com/bbc28f59/engine/clientx/auth"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
	"github.com/golang-jwt/jwt/v5"
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
	status, _, env := h.raw(t, "auth.signInEmail", "", `{"email":"","password":""}`)
	if status != http.StatusBadRequest {
		t.Errorf("empty credentials: %d %v", status, env)
	}
}

func TestSignUp(t *testing.T) {
	t.Parallel()
	h := setup(t)
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
	// Reusing the first token is theft or a bug: it fails and revokes the family, so
	// the rotated token dies with it.
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
	var set clientauth.TokenSet
	b, _ := json.Marshal(ts)
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	sess.Set(set)
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
	base := jwt.MapClaims{"sub": "x", "iss": "engine", "exp": h.clock.Now().Add(time.Minute).Unix(), "iat": h.clock.Now().Unix()}
	noExp := jwt.MapClaims{"sub": "x", "iss": "engine", "iat": h.clock.Now().Unix()}

	for _, tc := range []struct{ name, token string }{
		{"tampered claims", tampered},
		{"alg none", none},
		{"wrong key", otherKey(base, jwt.SigningMethodHS256, []byte("another key, 32 bytes or longer!!"), kid)},
		{"unknown kid", otherKey(base, jwt.SigningMethodHS256, []byte(testKey), "nope")},
		{"HS512", otherKey(base, jwt.SigningMethodHS512, []byte(testKey), kid)},
		{"no expiry", otherKey(noExp, jwt.SigningMethodHS256, []byte(testKey), kid)},
		{"garbage", "not.a.token"},
	} {
		status, _, env := h.raw(t, "t.echo", tc.token, `{}`)
		if status != http.StatusUnauthorized || errorJSON(t, env) != `{"code":"Unauthorized","data":{}}` {
			t.Errorf("%s: %d %v", tc.name, status, env)
		}
	}
	// A public flow runs anonymously with a bad token rather than failing.
	status, _, env := h.raw(t, "t.whoami", tampered, `{}`)
	if status != 200 || env["data"].(map[string]any)["text"] != "anonymous" {
		t.Errorf("public flow with a bad token: %d %v", status, env)
	}
	status, _, env = h.raw(t, "t.whoami", good, `{}`)
	if status != 200 || env["data"].(map[string]any)["text"] != "alice@example.com" {
		t.Errorf("public flow with a good token: %d %v", status, env)
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

// Racing rotations of one refresh token: exactly one wins, the others count as reuse and
// revoke the family, so even the winner's new token is dead.
func TestConcurrentRefreshOfOneToken(t *testing.T) {
	t.Parallel()
	h := setup(t)
	ts := h.signIn(t, "alice@example.com")
	c := h.client(t)
	ctx := context.Background()
	results := make(chan clientx.Result[gate.TokenSet], 10)
	for range 10 {
		go func() {
			results <- clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: ts.RefreshToken})
		}()
	}
	var wins []gate.TokenSet
	for range 10 {
		r := <-results
		switch {
		case r.Error == nil:
			wins = append(wins, r.Data)
		case r.Error.Code != engine.CodeUnauthorized:
			t.Fatalf("unexpected failure: %+v", r.Error)
		}
	}
	if len(wins) != 1 {
		t.Fatalf("%d rotations succeeded, want 1", len(wins))
	}
	if r := clientx.Call(ctx, c, gate.Refresh, gate.RefreshInput{RefreshToken: wins[0].RefreshToken}); r.Error == nil {
		t.Fatal("the winner's token survived the reuse")
	}
}
