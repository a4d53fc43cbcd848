package main

import (
	"context"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
)

// PingOut is limited.ping's output.
type PingOut struct {
	Pong bool `json:"pong"`
}

// The limited unit: a public flow rate limited to 5 calls a minute per client IP.
var (
	LimitedUnit = engine.NewUnit("limited")
	Ping        = engine.Define[struct{}, PingOut](LimitedUnit, "ping", engine.Public())
)

func init() {
	register("limited", func(_ context.Context, e *env) (engine.Option, error) {
		// Buckets live in the app database, so instances sharing one Postgres share
		// the limit. The client IP is the TCP peer: put a gate.TrustedProxy here when
		// serving behind a proxy.
		lim, err := gate.NewSQLLimiter(e.DB, gate.Limit{Events: 5, Per: time.Minute}, gate.WithTable("engine_rate_limits"))
		if err != nil {
			return nil, err
		}
		return engine.Options(
			engine.OnStart(func(ctx context.Context, _ *engine.App) error { return lim.CreateTable(ctx) }),
			engine.Bind(Ping, func(*engine.Fx, struct{}) (PingOut, error) { return PingOut{Pong: true}, nil },
				gate.RateLimit(lim, gate.ByClientIP(gate.RemoteAddr))),
		), nil
	})
}
