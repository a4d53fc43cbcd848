package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/auth"
)

// The fake auth contract: auth.refresh rotates opaque tokens; app.me needs a valid
// access token.
var (
	authUnit   = engine.NewUnit("auth")
	appUnit    = engine.NewUnit("app")
	tokenReuse = engine.NewCode[struct{}](auth.CodeTokenReuse, http.StatusUnauthorized)
	refresh    = engine.Define[refreshIn, auth.TokenSet](authUnit, "refresh", engine.POST("/auth/refresh"), engine.TokenEndpoint(), engine.Errors(tokenReuse))
	me         = engine.Define[struct{}, string](appUnit, "me")
)

type refreshIn struct {
	RefreshToken string `json:"refreshToken"`
}

// fakeAuth issues access tokens a-N and refresh tokens r-N; a refresh token works once.
type fakeAuth struct {
	mu        sync.Mutex
	n         int
	access    map[string]bool
	refresh   map[string]bool // token → still unused
	rotations int
	received  chan struct{} // signalled on every refresh request, when set
	hold      chan struct{} // refreshes wait for it, when set
}

func newFakeAuth() *fakeAuth {
	return &fakeAuth{access: map[string]bool{}, refresh: map[string]bool{"r-0": true}}
}

func (f *fakeAuth) Authenticate(r *http.Request) (*engine.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok && f.access[tok] {
		return &engine.Principal{ID: tok}, nil
	}
	return nil, engine.Unauthorized()
}

func (f *fakeAuth) rotate(fx *engine.Fx, in refreshIn) (auth.TokenSet, error) {
	if f.received != nil {
		f.received <- struct{}{}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.refresh[in.RefreshToken] {
		return auth.TokenSet{}, tokenReuse.New(struct{}{})
	}
	f.refresh[in.RefreshToken] = false
	f.n++
	f.rotations++
	ts := auth.TokenSet{
		AccessToken: fmt.Sprintf("a-%d", f.n), RefreshToken: fmt.Sprintf("r-%d", f.n),
		TokenType: "Bearer", ExpiresIn: 900, ExpiresAt: time.Date(2030, 1, 1, 0, 15, 0, 0, time.UTC),
	}
	f.access[ts.AccessToken] = true
	f.refresh[ts.RefreshToken] = true
	return ts, nil
}

func serve(t *testing.T, f *fakeAuth) string {
	t.Helper()
	app, err := engine.New(
		engine.WithAuthenticator(f),
		engine.Bind(refresh, f.rotate),
		engine.Bind(me, func(fx *engine.Fx, _ struct{}) (string, error) { return fx.Principal().ID, nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, url string, s *auth.MemorySession) *clientx.Client {
	t.Helper()
	c, err := clientx.New(url, clientx.WithRoutes(engine.RoutesOf(authUnit)), s.Option())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSessionRefreshesOn401 is the whole loop: an expired access token is refused, the
// client refreshes the session once through auth.refresh and the call then succeeds.
func TestSessionRefreshesOn401(t *testing.T) {
	t.Parallel()
	f := newFakeAuth()
	s := auth.NewMemorySession()
	s.Set(auth.TokenSet{AccessToken: "expired", RefreshToken: "r-0", TokenType: "Bearer"})
	c := newClient(t, serve(t, f), s)

	res := clientx.Call(t.Context(), c, me, struct{}{})
	if res.Error != nil || res.Data != "a-1" {
		t.Fatalf("me = %q, %v", res.Data, res.Error)
	}
	got, ok := s.Tokens()
	if !ok || got.AccessToken != "a-1" || got.RefreshToken != "r-1" || got.ExpiresIn != 900 ||
		!got.ExpiresAt.Equal(time.Date(2030, 1, 1, 0, 15, 0, 0, time.UTC)) {
		t.Fatalf("session holds %+v", got)
	}
	if f.rotations != 1 {
		t.Fatalf("%d rotations, want 1", f.rotations)
	}
	// With a good token no refresh happens.
	if res := clientx.Call(t.Context(), c, me, struct{}{}); res.Error != nil || f.rotations != 1 {
		t.Fatalf("second call: %v after %d rotations", res.Error, f.rotations)
	}
}

// TestSessionSignInRequired checks the two ways a session ends: no refresh token, and a
// rotation the server refuses (here a reused token, itself answered with 401, which
// must not start a refresh of the refresh).
func TestSessionSignInRequired(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  *auth.TokenSet
	}{
		{"never signed in", nil},
		{"no refresh token", &auth.TokenSet{AccessToken: "expired"}},
		{"reused refresh token", &auth.TokenSet{AccessToken: "expired", RefreshToken: "r-used"}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAuth()
			url := serve(t, f)
			s := auth.NewMemorySession()
			if tt.set != nil {
				s.Set(*tt.set)
			}
			c := newClient(t, url, s)
			err := s.Refresh(t.Context(), c)
			if !errors.Is(err, auth.ErrSignInRequired) {
				t.Fatalf("Refresh = %v, want ErrSignInRequired", err)
			}
			if _, ok := s.Tokens(); ok {
				t.Fatal("the session was not cleared")
			}
			if tok, _ := s.GetToken(t.Context()); tok != "" {
				t.Fatalf("token %q after sign-out", tok)
			}
			// A gated call now fails as the server says, after one refresh attempt.
			res := clientx.Call(t.Context(), c, me, struct{}{})
			if !clientx.IsErrorCode(res.Error, auth.CodeUnauthorized) || res.Status != 401 {
				t.Fatalf("me = %v (%d)", res.Error, res.Status)
			}
			if f.rotations != 0 {
				t.Fatalf("%d rotations", f.rotations)
			}
		})
	}
}

// TestSessionKeepsTokensOnTransportFailure checks an unreachable server does not sign
// the user out.
func TestSessionKeepsTokensOnTransportFailure(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	s := auth.NewMemorySession()
	s.Set(auth.TokenSet{AccessToken: "a", RefreshToken: "r"})
	c, err := clientx.New(url, s.Option())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Refresh(t.Context(), c)
	if err == nil || errors.Is(err, auth.ErrSignInRequired) {
		t.Fatalf("Refresh = %v, want a transport error", err)
	}
	if got, ok := s.Tokens(); !ok || got.RefreshToken != "r" {
		t.Fatalf("session holds %+v, %v", got, ok)
	}
}

// TestSessionConcurrentRefresh checks refreshes that overlap share one rotation: a
// second rotation with the same refresh token would be refused as reuse.
func TestSessionConcurrentRefresh(t *testing.T) {
	t.Parallel()
	f := newFakeAuth()
	f.received = make(chan struct{}, 16)
	f.hold = make(chan struct{})
	url := serve(t, f)
	s := auth.NewMemorySession()
	s.Set(auth.TokenSet{AccessToken: "expired", RefreshToken: "r-0"})
	c := newClient(t, url, s)

	const n = 8
	errs := make(chan error, n)
	go func() { errs <- s.Refresh(t.Context(), c) }()
	<-f.received // the first rotation is in flight and held
	for range n - 1 {
		go func() { errs <- s.Refresh(t.Context(), c) }()
	}
	close(f.hold)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("a concurrent refresh failed: %v", err)
		}
	}
	if tok, _ := s.GetToken(t.Context()); !strings.HasPrefix(tok, "a-") {
		t.Fatalf("token %q", tok)
	}
}

// TestAuthHelper checks the explicit form, for a session shared by several clients.
func TestAuthHelper(t *testing.T) {
	t.Parallel()
	f := newFakeAuth()
	url := serve(t, f)
	s := auth.NewMemorySession()
	s.Set(auth.TokenSet{AccessToken: "expired", RefreshToken: "r-0"})
	refresher, err := clientx.New(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientx.New(url, clientx.WithAuth(auth.Auth(s, refresher)))
	if err != nil {
		t.Fatal(err)
	}
	if res := clientx.Call(context.Background(), c, me, struct{}{}); res.Error != nil || res.Data != "a-1" {
		t.Fatalf("me = %q, %v", res.Data, res.Error)
	}
}

// TestAuthErrorCodes checks the code list and its predicate.
func TestAuthErrorCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"Unauthorized", "Forbidden", "RateLimited", "InvalidCredentials", "EmailTaken", "TokenReuse"} {
		if !auth.IsAuthError(&engine.Error{Code: code}) {
			t.Errorf("%s is not an auth code", code)
		}
	}
	if auth.IsAuthError(&engine.Error{Code: engine.CodeNotFound}) || auth.IsAuthError(nil) {
		t.Error("NotFound or nil counted as an auth code")
	}
	seen := map[string]bool{}
	for _, c := range auth.AuthErrorCodes {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
	}
}
