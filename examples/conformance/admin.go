package main

import (
	"context"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
)

// StatsOut is admin.stats's output.
type StatsOut struct {
	Flows int `json:"flows"`
}

// The admin unit: a flow only holders of the admin scope may call (none of the seeded
// principals do, so it shows the Forbidden denial).
var (
	AdminUnit = engine.NewUnit("admin")
	Stats     = engine.Define[struct{}, StatsOut](AdminUnit, "stats")
)

func init() {
	register("admin", func(context.Context, *env) (engine.Option, error) {
		return engine.Bind(Stats, func(fx *engine.Fx, _ struct{}) (StatsOut, error) {
			return StatsOut{Flows: len(fx.App().Flows())}, nil
		}, gate.Scopes("admin")), nil
	})
}
