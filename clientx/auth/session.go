// Package auth holds the client side of engine's bearer authentication: a
// [MemorySession] that keeps the token set in memory and refreshes it through the
// auth.refresh flow, and the common auth codes a caller narrows on.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bbc28f59/engine/clientx"
)

// ErrSignInRequired reports that the session holds no usable refresh token, or that
// rotating it failed: the user must sign in again. The session is cleared.
var ErrSignInRequired = errors.New("auth: sign-in required")

// RefreshFlow is the flow a session calls to rotate its tokens.
const RefreshFlow = "auth.refresh"

// TokenSet is what the sign-up, sign-in and refresh flows return and a session holds.
// It is the one token-set type of the module: gate.TokenSet, the output type the server's
// auth flows are declared with, is an alias of it, so the server's value is the client's
// without a conversion, and this package links no server code.
type TokenSet struct {
	// AccessToken is the bearer token of every call.
	AccessToken string `json:"accessToken"`
	// RefreshToken is for auth.refresh, once: the call spends it.
	RefreshToken string `json:"refreshToken"`
	// TokenType is "Bearer".
	TokenType string `json:"tokenType"`
	// ExpiresIn is the access token's lifetime in seconds when it was issued.
	ExpiresIn int64 `json:"expiresIn"`
	// ExpiresAt is when the access token expires (RFC 3339 on the wire).
	ExpiresAt time.Time `json:"expiresAt"`
}

// MemorySession keeps a token set in memory (the reference contract's memorySession). It is safe for
// concurrent use; concurrent refreshes are coalesced into one call of auth.refresh, so
// a burst of 401s does not spend the rotating refresh token twice.
type MemorySession struct {
	mu     sync.Mutex
	tokens TokenSet
	has    bool
	flight *refreshFlight
}

type refreshFlight struct {
	done chan struct{}
	err  error
}

// NewMemorySession returns an empty session.
func NewMemorySession() *MemorySession { return &MemorySession{} }

// Set stores a token set, such as the output of auth.signInEmail.
func (s *MemorySession) Set(t TokenSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens, s.has = t, true
}

// Clear forgets the tokens (sign out).
func (s *MemorySession) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens, s.has = TokenSet{}, false
}

// Tokens returns the held token set and whether there is one.
func (s *MemorySession) Tokens() (TokenSet, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens, s.has
}

// GetToken returns the access token, or "" when signed out; it fits
// [clientx.Auth].GetToken.
func (s *MemorySession) GetToken(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens.AccessToken, nil
}

// Refresh rotates the tokens by calling auth.refresh through c with the held refresh
// token and stores the new set. Without a refresh token, or when the flow fails with a
// code (the token was expired, reused or revoked), the session is cleared and the error
// wraps [ErrSignInRequired]. A transport failure keeps the session, since the tokens may
// still be good, and is returned as is.
func (s *MemorySession) Refresh(ctx context.Context, c *clientx.Client) error {
	if c == nil {
		return errors.New("auth: Refresh: nil client")
	}
	s.mu.Lock()
	if f := s.flight; f != nil {
		s.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rt := s.tokens.RefreshToken
	if rt == "" {
		s.tokens, s.has = TokenSet{}, false
		s.mu.Unlock()
		return ErrSignInRequired
	}
	f := &refreshFlight{done: make(chan struct{})}
	s.flight = f
	s.mu.Unlock()

	next, err := rotate(ctx, c, rt)

	s.mu.Lock()
	switch {
	case err == nil:
		s.tokens, s.has = next, true
	case errors.Is(err, ErrSignInRequired):
		s.tokens, s.has = TokenSet{}, false
	}
	s.flight = nil
	f.err = err
	s.mu.Unlock()
	close(f.done)
	return err
}

func rotate(ctx context.Context, c *clientx.Client, refreshToken string) (TokenSet, error) {
	res := c.Call(clientx.SkipRefresh(ctx), RefreshFlow, map[string]string{"refreshToken": refreshToken})
	if res.Error != nil {
		if clientx.IsTransportError(res.Error) {
			return TokenSet{}, fmt.Errorf("auth: refreshing the session: %w", res.Error)
		}
		return TokenSet{}, fmt.Errorf("%w: %s answered %w", ErrSignInRequired, RefreshFlow, res.Error)
	}
	var next TokenSet
	if err := json.Unmarshal(res.Data, &next); err != nil || next.AccessToken == "" {
		return TokenSet{}, fmt.Errorf("%w: %s returned no usable token set", ErrSignInRequired, RefreshFlow)
	}
	return next, nil
}

// Auth builds the client's auth option from the session and c: GetToken reads the
// session and Refresh rotates it through c. Prefer [MemorySession.Option], which binds
// the client under construction.
func Auth(s *MemorySession, c *clientx.Client) clientx.Auth {
	return clientx.Auth{
		GetToken: s.GetToken,
		Refresh:  func(ctx context.Context) error { return s.Refresh(ctx, c) },
	}
}

// Option is the client option that authenticates with the session and refreshes it
// through the very client being built:
//
//	s := auth.NewMemorySession()
//	c, err := clientx.New(url, s.Option())
func (s *MemorySession) Option() clientx.Option {
	return clientx.WithClientAuth(func(c *clientx.Client) clientx.Auth { return Auth(s, c) })
}
