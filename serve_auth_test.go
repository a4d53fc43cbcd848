package engine_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/internal/testenv"
)

// auIn is an input with no required field.
type auIn struct {
	Note string `json:"note,omitempty"`
}

// authRoutes serves one route of each kind behind the test authenticator (tokenAuth):
// a public flow (RPC and REST), a gated flow, a token endpoint, a route mounted with
// engine.Mount and a read route under /_engine/. Each answers who called it and counts
// its runs.
func authRoutes(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	u := engine.NewUnit("au")
	public := engine.Define[auIn, appOut](u, "public", engine.POST("/au/public"), engine.Public())
	gated := engine.Define[auIn, appOut](u, "gated")
	token := engine.Define[auIn, appOut](u, "token", engine.TokenEndpoint())
	var runs atomic.Int32
	who := func(fx *engine.Fx, _ auIn) (appOut, error) {
		runs.Add(1)
		if p := fx.Principal(); p != nil {
			return appOut{Said: p.ID}, nil
		}
		return appOut{Said: "anonymous"}, nil
	}
	route := func(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		engine.WriteData(fx, w, r, appOut{Said: "route"})
	}
	plain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = w.Write([]byte(`{"data":{"said":"route"},"error":null}`))
	})
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tokenAuth{}),
		engine.Bind(public, who), engine.Bind(gated, who), engine.Bind(token, who),
		engine.Handle(http.MethodGet, "/au/handled/:id", route),
		engine.Handle(http.MethodGet, "/_engine/aur/:id", route),
		engine.Mount(http.MethodGet, "/au/plain/:id", plain))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv, &runs
}

// A request that presents a token the authenticator refuses is 401 Unauthorized, with
// the authenticator's WWW-Authenticate challenge, on every flow, public ones included,
// and every route mounted with Handle, and nothing runs. A token endpoint does not read
// the token, nor does a plain handler mounted with Mount, which may take credentials of
// its own. The same requests without a token get each route's usual answer.
func TestARefusedTokenIsUnauthorizedOnEveryRoute(t *testing.T) {
	t.Parallel()
	srv, runs := authRoutes(t)
	cases := []struct {
		name, method, path string
		anonymous          int // the status without a token
		readsToken         bool
	}{
		{"public flow over RPC", "POST", "/_engine/au/public", 200, true},
		{"public flow over REST", "POST", "/au/public", 200, true},
		{"gated flow", "POST", "/_engine/au/gated", 401, true},
		{"Handle route", "GET", "/au/handled/1", 200, true},
		{"Handle route under /_engine/", "GET", "/_engine/aur/1", 200, true},
		{"token endpoint", "POST", "/_engine/au/token", 200, false},
		{"plain Mount route", "GET", "/au/plain/1", 200, false},
	}
	for _, c := range cases {
		for _, token := range []string{"", "Bearer expired", "Basic dXNlcjpwdw=="} {
			req, err := http.NewRequestWithContext(ctxT(t), c.method, srv.URL+c.path, strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				req.Header.Set("Authorization", token)
			}
			before := runs.Load()
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, res)
			ran := runs.Load() > before
			switch {
			case token == "" || !c.readsToken:
				if res.StatusCode != c.anonymous || (c.anonymous == 200) != ran {
					t.Errorf("%s with %q: HTTP %d (ran %v) %s, want %d", c.name, token, res.StatusCode, ran, body, c.anonymous)
				}
				if c.anonymous == 200 && !strings.Contains(body, `"said":"anonymous"`) && !strings.Contains(body, `"said":"route"`) {
					t.Errorf("%s with %q: %s, want an anonymous call", c.name, token, body)
				}
			default:
				if res.StatusCode != 401 || ran || body != `{"data":null,"error":{"code":"Unauthorized","data":{}}}` {
					t.Errorf("%s with %q: HTTP %d (ran %v) %s, want 401 Unauthorized before the route runs", c.name, token, res.StatusCode, ran, body)
				}
				if got := res.Header.Get("WWW-Authenticate"); got != `Bearer error="invalid_token"` {
					t.Errorf("%s with %q: WWW-Authenticate %q, want the authenticator's challenge", c.name, token, got)
				}
			}
		}
	}
}

// Through the client: a public call with an expired token gets the 401, the client
// refreshes once and the call lands as the refreshed principal, not anonymously.
func TestAnExpiredTokenIsRefreshedOnAPublicFlow(t *testing.T) {
	t.Parallel()
	srv, _ := authRoutes(t)
	for _, path := range []string{"au.public", "au.gated"} {
		tk := &testenv.Token{Value: "expired", FixTo: "good"}
		c, err := clientx.New(srv.URL, clientx.WithAuth(tk.Auth()))
		if err != nil {
			t.Fatal(err)
		}
		res := c.Call(context.Background(), path, map[string]any{})
		if res.Error != nil || string(res.Data) != `{"said":"u1"}` || tk.Refreshes() != 1 {
			t.Fatalf("%s: %s %v after %d refreshes, want the call as u1 after one", path, res.Data, res.Error, tk.Refreshes())
		}
	}
}
