package gate_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
)

// Parameters at each minimum are accepted and one below is refused, for new hashes and
// for the parameters a stored hash carries.
func TestHashParamBounds(t *testing.T) {
	t.Parallel()
	minimum := gate.HashParams{Memory: 16, Time: 1, Threads: 2, SaltLen: 8, KeyLen: 16}
	if _, err := gate.HashPassword("pw", minimum); err != nil {
		t.Fatalf("minimum parameters refused: %v", err)
	}
	for name, p := range map[string]gate.HashParams{
		"memory below 8 KiB a lane": {Memory: 15, Time: 1, Threads: 2, SaltLen: 8, KeyLen: 16},
		"no pass":                   {Memory: 16, Time: 0, Threads: 2, SaltLen: 8, KeyLen: 16},
		"no lane":                   {Memory: 16, Time: 1, Threads: 0, SaltLen: 8, KeyLen: 16},
		"short salt":                {Memory: 16, Time: 1, Threads: 2, SaltLen: 7, KeyLen: 16},
		"short key":                 {Memory: 16, Time: 1, Threads: 2, SaltLen: 8, KeyLen: 15},
	} {
		if _, err := gate.HashPassword("pw", p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	salt := base64.RawStdEncoding.EncodeToString([]byte("saltsalt"))
	key := func(n int) string { return base64.RawStdEncoding.EncodeToString(make([]byte, n)) }
	for _, tc := range []struct {
		name, phc string
		ok        bool
	}{
		{"minimum", fmt.Sprintf("$argon2id$v=19$m=16,t=1,p=2$%s$%s", salt, key(16)), true},
		{"version 18", fmt.Sprintf("$argon2id$v=18$m=16,t=1,p=2$%s$%s", salt, key(16)), false},
		{"no version", fmt.Sprintf("$argon2id$v=x$m=16,t=1,p=2$%s$%s", salt, key(16)), false},
		{"short key", fmt.Sprintf("$argon2id$v=19$m=16,t=1,p=2$%s$%s", salt, key(15)), false},
		{"no pass", fmt.Sprintf("$argon2id$v=19$m=16,t=0,p=2$%s$%s", salt, key(16)), false},
		{"no lane", fmt.Sprintf("$argon2id$v=19$m=16,t=1,p=0$%s$%s", salt, key(16)), false},
		{"memory below 8 KiB a lane", fmt.Sprintf("$argon2id$v=19$m=15,t=1,p=2$%s$%s", salt, key(16)), false},
		{"bad parameters", fmt.Sprintf("$argon2id$v=19$m=x$%s$%s", salt, key(16)), false},
		{"bad salt", fmt.Sprintf("$argon2id$v=19$m=16,t=1,p=2$!!$%s", key(16)), false},
		{"bad key", fmt.Sprintf("$argon2id$v=19$m=16,t=1,p=2$%s$!!", salt), false},
		{"leading text", fmt.Sprintf("x$argon2id$v=19$m=16,t=1,p=2$%s$%s", salt, key(16)), false},
	} {
		_, err := gate.VerifyPassword("pw", tc.phc)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// NewAuth fills in the documented defaults and refuses what cannot work.
func TestNewAuthConfig(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	keys := gate.Keys{Current: gate.Key{Secret: testSecret}}
	for name, cfg := range map[string]gate.AuthConfig{
		"nil DB":              {Keys: keys},
		"negative access TTL": {DB: db, Keys: keys, AccessTTL: -time.Second},
		"negative refresh":    {DB: db, Keys: keys, RefreshTTL: -time.Second},
		"weak hash":           {DB: db, Keys: keys, Hash: gate.HashParams{Memory: 1, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}},
		"short key":           {DB: db, Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret(strings.Repeat("k", gate.MinKeyBytes-1))}}},
		"short previous key":  {DB: db, Keys: gate.Keys{Current: keys.Current, Previous: []gate.Key{{Secret: vault.NewSecret("short")}}}},
		"duplicate key":       {DB: db, Keys: gate.Keys{Current: keys.Current, Previous: []gate.Key{keys.Current}}},
	} {
		if _, err := gate.NewAuth(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret(strings.Repeat("k", gate.MinKeyBytes))}}}); err != nil {
		t.Errorf("a key of MinKeyBytes: %v", err)
	}

	// The defaults: argon2id at DefaultHashParams, 15-minute access and 30-day refresh
	// tokens, issuer and audience "engine".
	clock := newClock()
	a, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: keys, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.EnsureUser(ctx, gate.User{Email: "d@example.com", Password: pw}); err != nil {
		t.Fatal(err)
	}
	var hash string
	if err := db.QueryRowContext(ctx, "SELECT password_hash FROM engine_users WHERE email = 'd@example.com'").Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$", gate.DefaultHashParams.Memory, gate.DefaultHashParams.Time, gate.DefaultHashParams.Threads); !strings.HasPrefix(hash, want) {
		t.Errorf("default hash %s, want prefix %s", hash, want)
	}
	ts, err := a.SignIn(ctx, "d@example.com", pw)
	if err != nil {
		t.Fatal(err)
	}
	if ts.ExpiresIn != 900 || !ts.ExpiresAt.Equal(clock.Now().Add(15*time.Minute)) {
		t.Errorf("default access lifetime: %+v", ts)
	}
	claims := tokenClaims(t, ts.AccessToken)
	if claims["iss"] != "engine" || fmt.Sprint(claims["aud"]) != "[engine]" {
		t.Errorf("default issuer and audience: %v", claims)
	}
	clock.Advance(30*24*time.Hour - time.Second)
	next, err := a.Rotate(ctx, ts.RefreshToken)
	if err != nil {
		t.Fatalf("refresh just inside 30 days: %v", err)
	}
	clock.Advance(30 * 24 * time.Hour)
	if _, err := a.Rotate(ctx, next.RefreshToken); !engine.IsCode(err, engine.CodeUnauthorized) {
		t.Fatalf("refresh after 30 days: %v", err)
	}
}

// tokenClaims decodes a JWT's claims without checking anything.
func tokenClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Email and password bounds at sign-up: exactly at each limit passes, one past fails.
func TestSignUpBounds(t *testing.T) {
	t.Parallel()
	h := setup(t, noLimits)
	local := func(n int) string { return strings.Repeat("a", n) + "@example.com" }
	for _, tc := range []struct {
		name, email, password string
		ok                    bool
	}{
		{"254-byte email", local(254 - len("@example.com")), pw, true},
		{"255-byte email", local(255 - len("@example.com")), pw, false},
		{"shortest password", "p8@example.com", strings.Repeat("p", gate.MinPasswordLen), true},
		{"password too short", "p7@example.com", strings.Repeat("p", gate.MinPasswordLen-1), false},
		{"longest password", "pmax@example.com", strings.Repeat("p", gate.MaxPasswordLen), true},
		{"password too long", "ptoo@example.com", strings.Repeat("p", gate.MaxPasswordLen+1), false},
		{"display name", "Alice <x@example.com>", pw, false},
	} {
		_, err := h.auth.EnsureUser(context.Background(), gate.User{Email: tc.email, Password: tc.password})
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && !engine.IsCode(err, engine.CodeValidation) {
			t.Errorf("%s: %v, want a ValidationError", tc.name, err)
		}
	}
}

// The Authorization header: none is anonymous; the scheme is case-insensitive; anything
// but a bearer token is Unauthorized, with the RFC 6750 challenge that says why.
func TestAuthorizationHeader(t *testing.T) {
	t.Parallel()
	h := setup(t)
	tok := h.signIn(t, "alice@example.com").AccessToken
	for _, tc := range []struct{ header, want, challenge string }{
		{"", "anonymous", ""},
		{"Bearer " + tok, "alice@example.com", ""},
		{"bearer " + tok, "alice@example.com", ""},
		{"Bearer  " + tok + " ", "alice@example.com", ""},
		{"Basic " + tok, "Unauthorized", "Bearer"},
		{"Bearer", "Unauthorized", "Bearer"},
		{"Bearer ", "Unauthorized", `Bearer error="invalid_request"`},
		{"Bearer    ", "Unauthorized", `Bearer error="invalid_request"`},
		{"Bearer x" + tok, "Unauthorized", `Bearer error="invalid_token"`},
		{tok, "Unauthorized", "Bearer"},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		p, err := h.auth.Authenticate(r)
		got, challenge := "anonymous", ""
		switch {
		case err != nil:
			got, challenge = engine.AsError(err).Code, engine.AsError(err).Header().Get("WWW-Authenticate")
		case p != nil:
			got = p.Email
		}
		if got != tc.want || challenge != tc.challenge {
			t.Errorf("%q: %s (WWW-Authenticate %q), want %s (%q)", tc.header, got, challenge, tc.want, tc.challenge)
		}
	}
}

// An app that set a default limit to something invalid gets an error from NewAuth, not a
// nil limiter that fails later. Not parallel: it changes package variables, and parallel
// tests resume only after the serial ones have returned.
func TestNewAuthRefusesBadDefaultLimits(t *testing.T) {
	db := openSQLite(t)
	keys := gate.Keys{Current: gate.Key{Secret: testSecret}}
	for name, def := range map[string]*gate.Limit{"DefaultAttemptsPerIP": &gate.DefaultAttemptsPerIP, "DefaultFailuresPerEmail": &gate.DefaultFailuresPerEmail} {
		saved := *def
		*def = gate.Limit{Events: 1}
		_, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: keys})
		// With limiters of the app's own, the defaults are not used.
		_, errOwn := gate.NewAuth(gate.AuthConfig{DB: db, Keys: keys, AttemptsPerIP: gate.NoLimit, FailuresPerEmail: gate.NoLimit})
		*def = saved
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s invalid: %v", name, err)
		}
		if errOwn != nil {
			t.Errorf("%s invalid but unused: %v", name, errOwn)
		}
	}
}
