package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
	"github.com/uptrace/bun"
)

// The auth part: gate.Auth over the app database with the seeded principals of APP.md,
// all with the password ENGINE_DEMO_PASSWORD. The JWT signing key is ENGINE_JWT_KEY
// (through the vault) when set. ENGINE_ACCESS_TTL (a Go duration, default gate's 15m) is
// the access tokens' lifetime, so a test can see one expire.
//
// The sign-in edge of APP.md ("The HTTP edge"): sign-up stays off (gate's default, so
// POST /auth/sign-up/email is 404); sign-in attempts are limited to 30 a minute per
// client IP, and an email with 5 failures within 15 minutes is refused until the window
// passes; both counts live in the app database, so every instance on one Postgres draws
// from the same buckets; password hashing keeps gate's default bound (a hash a core, 3 at
// most, and callers beyond a short queue answered 503 Unavailable with Retry-After).
func init() {
	register("auth", authPart)
}

// seeded are the principals of APP.md.
var seeded = []gate.User{
	{Email: "alice@example.com", Tenant: "t1", Scopes: []string{"notes:read", "notes:write", "tools:transfer"}},
	{Email: "bob@example.com", Tenant: "t1", Scopes: []string{"notes:read"}},
	{Email: "carol@example.com", Tenant: "t2", Scopes: []string{"notes:read", "notes:write", "tools:transfer"}},
	{Email: "ops@example.com", Tenant: "t1", Scopes: []string{}, Operator: true},
}

func authPart(ctx context.Context, e *env) (engine.Option, error) {
	v, err := vault.New(vault.Env("ENGINE_"))
	if err != nil {
		return nil, err
	}
	key, ok, err := v.Lookup(ctx, "JWT_KEY")
	if err != nil {
		return nil, err
	}
	if !ok {
		e.Logger.Warn("conformance: ENGINE_JWT_KEY is not set; using a demo key stored in the app database (demo only: anyone who can read the database can mint tokens)")
		if key, err = demoKey(ctx, e.DB); err != nil {
			return nil, err
		}
	}
	// Each limit has its own table: a table's Prune assumes one refill rate. The client
	// IP is the TCP peer; put a gate.TrustedProxy in IPSource when serving behind one.
	perIP, err := gate.NewSQLLimiter(e.DB, gate.DefaultAttemptsPerIP, gate.WithTable("engine_signin_attempts"))
	if err != nil {
		return nil, err
	}
	failures, err := gate.NewSQLLimiter(e.DB, gate.DefaultFailuresPerEmail, gate.WithTable("engine_signin_failures"))
	if err != nil {
		return nil, err
	}
	var accessTTL time.Duration
	if v := os.Getenv("ENGINE_ACCESS_TTL"); v != "" {
		if accessTTL, err = time.ParseDuration(v); err != nil || accessTTL <= 0 {
			return nil, fmt.Errorf("ENGINE_ACCESS_TTL: want a positive Go duration such as 15m, got %q", v)
		}
	}
	auth, err := gate.NewAuth(gate.AuthConfig{
		DB: e.DB, Keys: gate.Keys{Current: gate.Key{Secret: key}}, AccessTTL: accessTTL,
		IPSource: gate.RemoteAddr, AttemptsPerIP: perIP, FailuresPerEmail: failures,
	})
	if err != nil {
		return nil, err
	}
	return engine.Options(
		vault.With(v),
		auth.Option(),
		engine.OnStart(func(ctx context.Context, _ *engine.App) error {
			for _, l := range []*gate.SQLLimiter{perIP, failures} {
				if err := l.CreateTable(ctx); err != nil {
					return err
				}
			}
			for _, u := range seeded {
				u.Password = e.Password
				if _, err := auth.EnsureUser(ctx, u); err != nil {
					return fmt.Errorf("seeding %s: %w", u.Email, err)
				}
			}
			return nil
		}),
	), nil
}

// demoKeyRow holds the signing key generated on first start. DEMO ONLY: a real
// deployment keeps signing keys out of the database it protects (ENGINE_JWT_KEY, or a
// vault.Files mount).
type demoKeyRow struct {
	bun.BaseModel `bun:"table:engine_demo_keys"`
	Name          string `bun:"name,pk"`
	Value         string `bun:"value,notnull"`
}

// demoKey returns the demo signing key, generating it once; several instances on one
// Postgres race to insert and all read back the winner's key, so their tokens agree.
func demoKey(ctx context.Context, db *bun.DB) (vault.Secret, error) {
	if _, err := db.NewCreateTable().Model((*demoKeyRow)(nil)).IfNotExists().Exec(ctx); err != nil {
		return vault.Secret{}, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return vault.Secret{}, err
	}
	row := &demoKeyRow{Name: "jwt", Value: base64.RawURLEncoding.EncodeToString(b)}
	if _, err := db.NewInsert().Model(row).On("CONFLICT (name) DO NOTHING").Exec(ctx); err != nil {
		return vault.Secret{}, err
	}
	got := new(demoKeyRow)
	if err := db.NewSelect().Model(got).Where("name = ?", "jwt").Scan(ctx); err != nil {
		return vault.Secret{}, err
	}
	return vault.NewSecret(got.Value), nil
}
