package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/console"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
	"github.com/uptrace/bun"
)

// operatorConsole signs operators in (gate.Auth over the journal's database, with one
// user, ops@example.com, whose password is opsPassword) and mounts the console at
// /_engine/console/. The tokens' signing key is made at start, so signing in again after
// a restart is needed; a real app keeps its key in a vault.
func operatorConsole(db *bun.DB, opsPassword string) (engine.Option, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	auth, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret(base64.RawURLEncoding.EncodeToString(key))}}})
	if err != nil {
		return nil, err
	}
	return engine.Options(
		auth.Option(),
		engine.OnStart(func(ctx context.Context, _ *engine.App) error {
			_, err := auth.EnsureUser(ctx, gate.User{Email: "ops@example.com", Password: opsPassword, Operator: true})
			return err
		}),
		console.Serve(console.Options{}),
	), nil
}
