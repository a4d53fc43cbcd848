package testenv

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

// BearerAuth is an [engine.Authenticator] that signs in the caller whose bearer token is
// "good" (as the principal u1) and refuses any other token, as gate.Auth does (with
// WWW-Authenticate: Bearer error="invalid_token"); no header is anonymous.
type BearerAuth struct{}

// Authenticate implements [engine.Authenticator].
func (BearerAuth) Authenticate(r *http.Request) (*engine.Principal, error) {
	switch r.Header.Get("Authorization") {
	case "":
		return nil, nil
	case "Bearer good":
		return &engine.Principal{ID: "u1"}, nil
	}
	return nil, engine.Unauthorized().WithHeader("WWW-Authenticate", `Bearer error="invalid_token"`)
}

// Token is a [clientx.Auth] whose token and refresh a test controls: it sends Value;
// Refresh installs FixTo, or fails when Fail is set, and counts its calls. Set the
// fields before the first call.
type Token struct {
	Value string
	FixTo string
	Fail  bool

	mu        sync.Mutex
	refreshes int
}

// Auth returns the client auth that reads and refreshes tk.
func (tk *Token) Auth() clientx.Auth {
	return clientx.Auth{
		GetToken: func(context.Context) (string, error) {
			tk.mu.Lock()
			defer tk.mu.Unlock()
			return tk.Value, nil
		},
		Refresh: func(context.Context) error {
			tk.mu.Lock()
			defer tk.mu.Unlock()
			tk.refreshes++
			if tk.Fail {
				return errors.New("refresh token revoked")
			}
			tk.Value = tk.FixTo
			return nil
		},
	}
}

// Refreshes returns how often Refresh was called.
func (tk *Token) Refreshes() int {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return tk.refreshes
}
