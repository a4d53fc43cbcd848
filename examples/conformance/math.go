package main

import (
	"context"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/examples/conformance/contract"
)

func init() {
	register("math", func(context.Context, *env) (engine.Option, error) { return mathFlows(), nil })
}

// mathFlows binds the handlers of the math unit, declared in the contract package.
func mathFlows() engine.Option {
	return engine.Options(
		engine.Bind(contract.Add, func(_ *engine.Fx, in contract.AddIn) (contract.AddOut, error) {
			return contract.AddOut{Sum: in.A + in.B}, nil
		}),
		engine.Bind(contract.Square, func(_ *engine.Fx, in contract.SquareIn) (contract.SquareOut, error) {
			return contract.SquareOut{N: in.N, Square: in.N * in.N}, nil
		}),
		engine.Bind(contract.Divide, func(_ *engine.Fx, in contract.DivideIn) (contract.DivideOut, error) {
			if in.B == 0 {
				return contract.DivideOut{}, contract.DivideByZero.New(contract.DivideByZeroData{Dividend: in.A})
			}
			return contract.DivideOut{Quotient: in.A / in.B}, nil
		}),
		engine.Bind(contract.Echo, func(_ *engine.Fx, in map[string]any) (map[string]any, error) { return in, nil }),
		engine.Bind(contract.Search, func(_ *engine.Fx, in contract.SearchIn) (contract.SearchOut, error) {
			return contract.SearchOut(in), nil
		}),
	)
}
