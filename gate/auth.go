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
	"github.com/bbc28f59/engine/clientx/auth"
	"github.com/bbc28f59/engine/vault"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/uptrace/bun"
)

// AuthUnit is the unit of the auth flows. The flows are declared here, without handlers,
// so a client can import them; [Auth.Option] binds them.
var AuthUnit = engine.NewUnit("auth")

// Credentials is the input of sign-up and sign-in.
type Credentials struct {
	Email    string `json:"email"`    // case and surrounding spaces do not matter
	Password string `json:"password"` // checked as given
}

// RefreshInput is the input of auth.refresh.
type RefreshInput struct {
	RefreshToken string `json:"refreshToken"` // from the latest token set; spent by the call
}

// SignOutInput is the input of auth.signOut: the refresh token of the session to end, or
// none to end every session of the caller.
type SignOutInput struct {
	RefreshToken string `json:"refreshToken,omitempty"` // a token of the session to end
}

// TokenSet is what sign-up, sign-in and refresh return. It is clientx/auth's TokenSet
// (an alias, so the type lives on the client side, which links no server code):
// a session stores the flows' output as it is.
type TokenSet = auth.TokenSet

// MeInput is the input of auth.me: empty, since the caller is the token's principal.
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
		engine.POST("/auth/sign-up/email"), engine.TokenEndpoint(), nonEmpty("email", "password"))
	// SignInEmail checks an email and password: POST /auth/sign-in/email.
	SignInEmail = engine.Define[Credentials, TokenSet](AuthUnit, "signInEmail",
		engine.POST("/auth/sign-in/email"), engine.TokenEndpoint(), nonEmpty("email", "password"))
	// Refresh rotates a refresh token into a new token set: POST /auth/refresh.
	Refresh = engine.Define[RefreshInput, TokenSet](AuthUnit, "refresh",
		engine.POST("/auth/refresh"), engine.TokenEndpoint(), nonEmpty("refreshToken"))
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
	// Audience is the aud claim, checked on every token (default "engine"). Give apps
	// that share signing keys different audiences, so that one's tokens are refused by
	// the other.
	Audience string
	// AccessTTL is the access-token lifetime (default 15 minutes). Access tokens are
	// not looked up per request, so a revoked session's access token lives this long.
	AccessTTL time.Duration
	// RefreshTTL is the refresh-token lifetime, renewed on every rotation (default 30
	// days).
	RefreshTTL time.Duration
	// RefreshReuseGrace is how long after a refresh token was rotated another use of it
	// is taken for the same client racing itself (two tabs refreshing at once, a retry
	// whose reply was lost) rather than for theft: that use is refused with Unauthorized
	// as always, but the token's family is not revoked, so the tokens the winner got stay
	// good and the user stays signed in. A use after the grace revokes the family
	// (theft detection). Default 10 seconds, the kind of window Auth0 and Okta offer; a
	// negative value turns the grace off, so that every reuse revokes.
	RefreshReuseGrace time.Duration
	// Hash sets the argon2id cost of new password hashes (default DefaultHashParams).
	Hash HashParams
	// Hashing bounds how many password hashes run at once; see [HashBound].
	Hashing HashBound
	// Now is the clock (default time.Now); tests pass a fake one. The default limiters
	// below read it too.
	Now func() time.Time
	// PublicSignUp binds auth.signUpEmail, so that anyone can create an account. It is
	// off by default: an app opts in to strangers creating accounts, and until then
	// POST /auth/sign-up/email answers 404 NotFound and users come from
	// [Auth.EnsureUser]. Sign-up draws from the same per-IP attempts and hashing bound
	// as sign-in.
	PublicSignUp bool
	// SignUp decides new users' tenant and scopes; see [SignUpFunc].
	SignUp SignUpFunc
	// IPSource reads the client IP that sign-in and sign-up attempts are counted under
	// (default [RemoteAddr]; behind a proxy, [TrustedProxy]).
	IPSource IPSource
	// AttemptsPerIP takes one token for every sign-in and sign-up attempt that reaches
	// the auth flows, from the client's bucket, and refuses the attempt with
	// RateLimited when it is empty; it caps how fast one source can guess passwords
	// across all emails. IPv6 clients are counted by their /64, the block one
	// subscriber is given, so rotating addresses within it gains nothing. Default: a
	// [MemoryLimiter] of [DefaultAttemptsPerIP]. Pass an [SQLLimiter] so that instances
	// on one database share the count, or [NoLimit] to turn it off (for example when a
	// proxy in front limits already). The limit sits on the flows' bindings: calling
	// [Auth.SignIn] from Go skips it, and in-process calls of the flows (no request,
	// no IP) share one bucket.
	AttemptsPerIP Limiter
	// FailuresPerEmail counts failed sign-ins per email (trimmed and lowercased, so
	// case and spaces make no new bucket; keyed by its SHA-256, so the limiter stores
	// no address). Before each password check the email's bucket is peeked; when it is
	// empty the attempt is refused with RateLimited without hashing, right password or
	// not, and only a wrong password takes a token. Unknown emails are counted like
	// known ones, so a refusal tells nothing about which emails exist.
	//
	// The default, a [MemoryLimiter] of [DefaultFailuresPerEmail], allows 5 failures;
	// after 5 failures within 15 minutes every attempt is refused until 15 minutes
	// after the first of them (longer when failures before it still count), and then
	// one failure is forgiven every 15 minutes. Refused attempts take nothing, so
	// hammering a locked email does not extend its lock, and a correct sign-in does not
	// reset the count.
	//
	// Lock-out is the price: anyone can lock an email's password sign-in by failing on
	// purpose, and keep it locked with about four wrong guesses an hour, from anywhere.
	// The alternative, counting per email and IP, would give an attacker with many
	// addresses five guesses per address. Being locked out ends no session: refresh
	// tokens keep rotating and access tokens stay valid, so a signed-in user does not
	// notice. The check is made again holding a hashing slot, and the failure counted
	// before the slot is given back, so parallel guesses overshoot the count by at most
	// the other slots ([HashBound] Concurrent − 1).
	//
	// Pass an [SQLLimiter] (with its own table) to share the count between instances,
	// or [NoLimit] to turn it off. A [Limiter] that is not a [Peeker] cannot be looked
	// at without drawing from it, so it takes a token on every attempt, successful or
	// not; give it a limit that allows for successful sign-ins.
	FailuresPerEmail Limiter
}

// DefaultRefreshReuseGrace is the default of [AuthConfig.RefreshReuseGrace].
const DefaultRefreshReuseGrace = 10 * time.Second

// Default sign-in limits of [AuthConfig].
var (
	// DefaultAttemptsPerIP is 30 sign-in or sign-up attempts a minute per client IP.
	DefaultAttemptsPerIP = Limit{Events: 30, Per: time.Minute}
	// DefaultFailuresPerEmail is 5 failed sign-ins per email, then one more every 15
	// minutes: a bucket of 5 refilled with one token every 15 minutes.
	DefaultFailuresPerEmail = Limit{Events: 1, Per: 15 * time.Minute, Burst: 5}
)

// Auth is bearer-token authentication with email sign-in: short-lived HS256 JWT access
// tokens carrying the principal, and opaque refresh tokens stored as SHA-256 hashes,
// rotated on every use. Presenting an already used refresh token is refused, and once
// [AuthConfig.RefreshReuseGrace] has passed since its rotation it revokes the token's
// whole family (every token descended from the same sign-in), which ends a stolen session
// the moment either party uses a stale token. Install it with [Auth.Option].
type Auth struct {
	cfg      AuthConfig
	codec    *tokenCodec
	hasher   *hasher
	failures failures

	dummyOnce sync.Once
	dummy     string // a hash to verify against for unknown emails, so timing tells nothing

	rotateHook func() // tests: runs in Rotate between reading the token and spending it
}

// NewAuth validates cfg and returns the authenticator and auth unit.
func NewAuth(cfg AuthConfig) (*Auth, error) {
	if cfg.DB == nil {
		return nil, errors.New("gate.NewAuth: nil DB")
	}
	if cfg.AccessTTL < 0 || cfg.RefreshTTL < 0 {
		return nil, errors.New("gate.NewAuth: negative token lifetime")
	}
	if cfg.Issuer == "" {
		cfg.Issuer = "engine"
	}
	if cfg.Audience == "" {
		cfg.Audience = "engine"
	}
	if cfg.AccessTTL == 0 {
		cfg.AccessTTL = 15 * time.Minute
	}
	if cfg.RefreshTTL == 0 {
		cfg.RefreshTTL = 30 * 24 * time.Hour
	}
	switch {
	case cfg.RefreshReuseGrace == 0:
		cfg.RefreshReuseGrace = DefaultRefreshReuseGrace
	case cfg.RefreshReuseGrace < 0:
		cfg.RefreshReuseGrace = 0
	}
	if cfg.Hash == (HashParams{}) {
		cfg.Hash = DefaultHashParams
	}
	if err := cfg.Hash.validate(); err != nil {
		return nil, err
	}
	h, err := newHasher(cfg.Hashing, cfg.Hash)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IPSource == nil {
		cfg.IPSource = RemoteAddr
	}
	if cfg.AttemptsPerIP, err = orDefault(cfg.AttemptsPerIP, DefaultAttemptsPerIP, cfg.Now); err != nil {
		return nil, fmt.Errorf("gate.NewAuth: DefaultAttemptsPerIP: %w", err)
	}
	if cfg.FailuresPerEmail, err = orDefault(cfg.FailuresPerEmail, DefaultFailuresPerEmail, cfg.Now); err != nil {
		return nil, fmt.Errorf("gate.NewAuth: DefaultFailuresPerEmail: %w", err)
	}
	codec, err := newTokenCodec(cfg.Keys, cfg.Issuer, cfg.Audience, cfg.Now)
	if err != nil {
		return nil, err
	}
	return &Auth{cfg: cfg, codec: codec, hasher: h, failures: newFailures(cfg.FailuresPerEmail)}, nil
}

// orDefault returns l, or when it is nil a [MemoryLimiter] of def on the clock now. def
// is one of the exported defaults, which an app may have changed to something invalid.
func orDefault(l Limiter, def Limit, now func() time.Time) (Limiter, error) {
	if l != nil {
		return l, nil
	}
	m, err := NewMemoryLimiter(def, WithNow(now))
	if err != nil {
		return nil, err
	}
	return m, nil
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
// flows: auth.signUpEmail only with [AuthConfig.PublicSignUp]. Sign-in and sign-up draw
// from [AuthConfig.AttemptsPerIP] first. opts are added to every auth flow's binding
// (for example a rate limit on refresh).
func (a *Auth) Option(opts ...engine.BindOption) engine.Option {
	attempts := opts
	if a.cfg.AttemptsPerIP != NoLimit {
		attempts = append([]engine.BindOption{tagged("rateLimit", true, limitBy(a.cfg.AttemptsPerIP, a.attemptKey))}, opts...)
	}
	o := []engine.Option{
		engine.WithAuthenticator(a),
		engine.OnStart(func(ctx context.Context, _ *engine.App) error { return a.Migrate(ctx) }),
		engine.Bind(SignInEmail, func(fx *engine.Fx, in Credentials) (TokenSet, error) {
			return a.SignIn(fx.Context(), in.Email, in.Password)
		}, attempts...),
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
	if a.cfg.PublicSignUp {
		o = append(o, engine.Bind(SignUpEmail, func(fx *engine.Fx, in Credentials) (TokenSet, error) {
			return a.SignUp(fx.Context(), in.Email, in.Password)
		}, attempts...))
	}
	return engine.Options(o...)
}

// Authenticate implements [engine.Authenticator]: it verifies the bearer access token
// (signature with the key named by kid, HS256 only, issuer, audience, and the times exp,
// iat and nbf, each of which must be a JSON number) and returns the
// principal its claims carry, without touching the database.
//
// A request without an Authorization header is anonymous. Any other Authorization is
// refused with Unauthorized and a WWW-Authenticate challenge as RFC 6750 words it:
// Bearer error="invalid_token" for a token that fails verification (expired, tampered,
// signed with an unknown key), Bearer error="invalid_request" for an empty one, and a
// bare Bearer for another scheme. The app answers that refusal on every flow, public
// ones included, and every engine.Handle route (see [engine.Authenticator]), so a client
// with an expired token refreshes it and retries.
func (a *Auth) Authenticate(r *http.Request) (*engine.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, challenge("Bearer")
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return nil, challenge(`Bearer error="invalid_request"`)
	}
	p, err := a.codec.parse(tok)
	if err != nil {
		return nil, challenge(`Bearer error="invalid_token"`).WithCause(err)
	}
	return p, nil
}

// challenge is the Unauthorized answer to refused credentials, with the
// WWW-Authenticate header that tells the client what was wrong.
func challenge(wwwAuthenticate string) *engine.Error {
	return engine.Unauthorized().WithHeader("WWW-Authenticate", wwwAuthenticate)
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
