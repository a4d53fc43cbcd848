package main

import (
	"context"
	"os"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/console"
)

// The console (ENGINE_CONSOLE=1): the operator's console at /_engine/console/, signed in
// through auth.signInEmail; only ops@example.com gets past it.
func init() {
	register("console", func(context.Context, *env) (engine.Option, error) {
		if os.Getenv("ENGINE_CONSOLE") != "1" {
			return engine.Options(), nil
		}
		return console.Serve(console.Options{}), nil
	})
}
