package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/bbc28f59/engine"
)

type benchIn struct {
	A     float64  `json:"a"`
	B     float64  `json:"b"`
	Label string   `json:"label"`
	Tags  []string `json:"tags,omitempty"`
}

var (
	benchUnit = engine.NewUnit("vbench")
	benchFlow = engine.Define[benchIn, benchIn](benchUnit, "echo", engine.Public())
)

// BenchmarkInvokeValidate measures an in-process call whose cost is mostly decoding and
// validating the input: the part of a flow call that input validation adds to.
func BenchmarkInvokeValidate(b *testing.B) {
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(benchFlow, func(_ *engine.Fx, in benchIn) (benchIn, error) { return in, nil }))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ name, in string }{
		{"valid", `{"a":1.5,"b":2.25,"label":"total","tags":["x","y"]}`},
		{"invalid", `{"a":"x","b":true,"tags":[1]}`},
	} {
		in := json.RawMessage(c.in)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = app.Invoke(ctx, "vbench.echo", nil, in)
			}
		})
	}
}
