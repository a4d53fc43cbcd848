package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/vault"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/uptrace/bun"
)

// AuthUnit is the unit of the auth flows. The flows are declared here, without handlers,
// so a client can import them; [Auth.Option] binds them.
var AuthUnit = engine.NewUnit("auth")

// Credentials is the input of sign-up and sign-in.
type Credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// RefreshInput is the input of auth.refresh.
type RefreshInput struct {
	RefreshToken string `json:"refreshToken"`
}

// SignOutInput is the input of auth.signOut: the refresh token of the session to end, or
// none to end every session of the caller.
type SignOutInput struct {
	RefreshToken string `json:"refreshToken,omitempty"`
}

// TokenSet is what sign-up, sign-in and refresh return; clientx/auth's MemorySession
// stores it as is.
type TokenSet struct {
	AccessToken  string    `json:"accessToken"`
	RefreshToken string    `json:"refreshToken"`
	TokenType    string    `json:"tokenType"` // always "Bearer"
	ExpiresIn    int64     `json:"expiresIn"` // seconds until the access token expires
	ExpiresAt    time.Time `json:"expiresAt"` // when it expires (RFC 3339)
}

// Me's input is empty.
type MeInput struct{}

func nonEmpty(fields ...string) engine.FlowOption {
	return engine.InputSchema(func(s *jsonschema.Schema) {
		one := 1
		for _, f := range fields {
			if p := s.Properties[f]; p != nil {
				p.MinLength = &one
			}
		}
	})
}

// The auth flows and their REST triggers (all under /auth).
var (
	// SignUpEmail creates a user and signs it in: POST /auth/sign-up/email.
	SignUpEmail = engine.Define[Credentials, TokenSet](AuthUnit, "signUpEmail",
		engine.POST("/auth/sign-up/email"), engine.Public(), nonEmpty("email", "password"))
	// SignInEmail checks an email and password: POST /auth/sign-in/email.
	SignInEmail = engine.Define[Credentials, TokenSet](AuthUnit, "signInEmail",
		engine.POST("/auth/sign-in/email"), engine.Public(), nonEmpty("email", "password"))
	// Refresh rotates a refresh token into a new token set: POST /auth/refresh.
	Refresh = engine.Define[RefreshInput, TokenSet](AuthUnit, "refresh",
		engine.POST("/auth/refresh"), engine.Public(), nonEmpty("refreshToken"))
	// Me returns the caller: GET /auth/me.
	Me = engine.Define[MeInput, engine.Principal](AuthUnit, "me", engine.GET("/auth/me"))
	// SignOut revokes a session's refresh tokens: POST /auth/sign-out (204).
	SignOut = engine.Define[SignOutInput, engine.NoContent](AuthUnit, "signOut", engine.POST("/auth/sign-out"))
)

// SignUpFunc decides the tenant and scopes of a user created by auth.signUpEmail. The
// default, and an empty tenant, give the new user a tenant of its own (its id); the default
// grants no scopes. An error refuses the sign-up (return [Deny] or a ValidationError).
type SignUpFunc func(ctx context.Context, email string) (tenant string, scopes []string, err error)

// AuthConfig configures [NewAuth].
type AuthConfig struct {
	// DB holds the users and refresh tokens (tables engine_users and
	// engine_refresh_tokens, created at start). SQLite or Postgres.
	DB *bun.DB
	// Keys sign and verify access tokens; see [KeysFromVault].
	Keys Keys
	// Issuer is the iss claim, checked on every token (default "engine").
	Issuer string
	// AccessTTL is the access-token lifetime (default 15 minutes). Access tokens are
	// not looked up per request, so a revoked session's access token lives this long.
	AccessTTL time.Duration
	// RefreshTTL is the refresh-token lifetime, renewed on every rotation (default 30
	// days).
	RefreshTTL time.Duration
	// Hash sets the argon2id cost of new password hashes (default DefaultHashParams).
	Hash HashParams
	// Now is the clock (default time.Now); tests pass a fake one.
	Now func() time.Time
	// SignUp decides new users' tenant and scopes; see [SignUpFunc].
	SignUp SignUpFunc
	// DisableSignUp leaves auth.signUpEmail unbound, for apps that create users only
	// with [Auth.EnsureUser].
	DisableSignUp bool
}

// Auth is bearer-token authentication with email sign-in: short-lived HS256 JWT access
// tokens carrying the principal, and opaque refresh tokens stored as SHA-256 hashes,
// rotated on every use. Presenting an already used refresh token revokes its whole
// family (every token descended from the same sign-in), which ends a stolen session the
// moment either party uses a stale token. Install it with [Auth.Option].
type Auth struct {
	cfg   AuthConfig
	codec *tokenCodec

	dummyOnce sync.Once
	dummy     string // a hash to verify against for unknown emails, so timing tells nothing
}

// NewAuth validates cfg and returns the authenticator and auth unit.
func NewAuth(cfg AuthConfig) (*Auth, error) {
	if cfg.DB == nil {
		return nil, errors.New("gate.NewAuth: nil DB")
	}
	if cfg.Issuer == "" {
		cfg.Issuer = "engine"
	}
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = 15 * time.Minute
	}
	if cfg.RefreshTTL == 0 {
		cfg.RefreshTTL = 30 * 24 * time.Hour
	}
	if cfg.AccessTTL < 0 || cfg.RefreshTTL < 0 {
		return nil, errors.New("gate.NewAuth: negative token lifetime")
	}
	if cfg.Hash == (HashParams{}) {
		cfg.Hash = DefaultHashParams
	}
	if err := cfg.Hash.validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	codec, err := newTokenCodec(cfg.Keys, cfg.Issuer, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Auth{cfg: cfg, codec: codec}, nil
}

// KeysFromVault reads the current signing key and any previous ones from the vault by
// name; each key's id is derived from its value.
func KeysFromVault(ctx context.Context, v *vault.Vault, current string, previous ...string) (Keys, error) {
	if v == nil {
		return Keys{}, errors.New("gate.KeysFromVault: nil vault")
	}
	cur, err := v.Get(ctx, current)
	if err != nil {
		return Keys{}, err
	}
	ks := Keys{Current: Key{Secret: cur}}
	for _, name := range previous {
		s, err := v.Get(ctx, name)
		if err != nil {
			return Keys{}, err
		}
		ks.Previous = append(ks.Previous, Key{Secret: s})
	}
	return ks, nil
}

// Option installs the authenticator, creates the tables at start, and binds the auth
// flows. opts are added to every auth flow's binding (for example a rate limit on
// sign-in).
func (a *Auth) Option(opts ...engine.BindOption) engine.Option {
	o := []engine.Option{
		engine.WithAuthenticator(a),
		engine.OnStart(func(ctx context.Context, _ *engine.App) error { return a.Migrate(ctx) }),
		engine.Bind(SignInEmail, func(fx *engine.Fx, in Credentials) (TokenSet, error) {
			return a.SignIn(fx.Context(), in.Email, in.Password)
		}, opts...),
		engine.Bind(Refresh, func(fx *engine.Fx, in RefreshInput) (TokenSet, error) {
			return a.Rotate(fx.Context(), in.RefreshToken)
		}, opts...),
		engine.Bind(Me, func(fx *engine.Fx, _ MeInput) (engine.Principal, error) {
			return *fx.Principal(), nil
		}, opts...),
		engine.Bind(SignOut, func(fx *engine.Fx, in SignOutInput) (engine.NoContent, error) {
			return engine.NoContent{}, a.signOut(fx.Context(), fx.Principal(), in.RefreshToken)
		}, opts...),
	}
	if !a.cfg.DisableSignUp {
		o = append(o, engine.Bind(SignUpEmail, func(fx *engine.Fx, in Credentials) (TokenSet, error) {
			return a.SignUp(fx.Context(), in.Email, in.Password)
		}, opts...))
	}
	return engine.Options(o...)
}

// Authenticate implements [engine.Authenticator]: it verifies the bearer access token
// (signature with the key named by kid, HS256 only, issuer, expiry) and returns the
// principal its claims carry, without touching the database.
func (a *Auth) Authenticate(r *http.Request) (*engine.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return nil, engine.Unauthorized()
	}
	p, err := a.codec.parse(strings.TrimSpace(tok))
	if err != nil {
		return nil, engine.Unauthorized().WithCause(err)
	}
	return p, nil
}

// AccessToken issues an access token for p, for tests and for services acting as a user.
func (a *Auth) AccessToken(p engine.Principal) (string, error) {
	tok, _, err := a.codec.issue(p, a.cfg.AccessTTL)
	return tok, err
}

func (a *Auth) tokenSet(ctx context.Context, u *userRow, family string) (TokenSet, error) {
	access, exp, err := a.codec.issue(u.principal(), a.cfg.AccessTTL)
	if err != nil {
		return TokenSet{}, fmt.Errorf("gate: signing access token: %w", err)
	}
	refresh, err := a.newRefresh(ctx, u.ID, family)
	if err != nil {
		return TokenSet{}, err
	}
	return TokenSet{
		AccessToken: access, RefreshToken: refresh, TokenType: "Bearer",
		ExpiresIn: int64(a.cfg.AccessTTL / time.Second), ExpiresAt: exp.UTC(),
	}, nil
}
