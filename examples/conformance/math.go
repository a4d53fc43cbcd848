package main

import (
	"context"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// Math is the math unit: public flows over RPC and REST, a declared error code, path,
// query and body mapping.
var Math = engine.NewUnit("math")

type AddIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}
type AddOut struct {
	Sum float64 `json:"sum"`
}

type SquareIn struct {
	N float64 `json:"n"`
}
type SquareOut struct {
	N      float64 `json:"n"`
	Square float64 `json:"square"`
}

type DivideIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}
type DivideOut struct {
	Quotient float64 `json:"quotient"`
}

// DivideByZeroData is the payload of DivideByZero.
type DivideByZeroData struct {
	Dividend float64 `json:"dividend"`
}

type SearchIn struct {
	Q     string  `json:"q"`
	Limit float64 `json:"limit"`
}
type SearchOut struct {
	Q     string  `json:"q"`
	Limit float64 `json:"limit"`
}

// DivideByZero is math.divide's declared error.
var DivideByZero = engine.NewCode[DivideByZeroData]("DivideByZero", http.StatusBadRequest)

var (
	Add    = engine.Define[AddIn, AddOut](Math, "add", engine.Public(), engine.Describe("Add two numbers."))
	Square = engine.Define[SquareIn, SquareOut](Math, "square", engine.GET("/math/square/:n"), engine.Public(), engine.Describe("Square a number."))
	Divide = engine.Define[DivideIn, DivideOut](Math, "divide", engine.Public(), engine.Errors(DivideByZero),
		engine.Describe("Divide a by b."))
	Echo = engine.Define[map[string]any, map[string]any](Math, "echo", engine.POST("/math/echo/:id"), engine.Public(),
		engine.Describe("Answer with the object received, which has an id."),
		engine.InputSchema(func(s *jsonschema.Schema) { s.Required = []string{"id"} }))
	Search = engine.Define[SearchIn, SearchOut](Math, "search", engine.GET("/math/search"), engine.Public(), engine.Describe("Answer with the query and limit received."))
)

func init() {
	register("math", func(context.Context, *env) (engine.Option, error) { return mathFlows(), nil })
}

func mathFlows() engine.Option {
	return engine.Options(
		engine.Bind(Add, func(_ *engine.Fx, in AddIn) (AddOut, error) { return AddOut{Sum: in.A + in.B}, nil }),
		engine.Bind(Square, func(_ *engine.Fx, in SquareIn) (SquareOut, error) {
			return SquareOut{N: in.N, Square: in.N * in.N}, nil
		}),
		engine.Bind(Divide, func(_ *engine.Fx, in DivideIn) (DivideOut, error) {
			if in.B == 0 {
				return DivideOut{}, DivideByZero.New(DivideByZeroData{Dividend: in.A})
			}
			return DivideOut{Quotient: in.A / in.B}, nil
		}),
		engine.Bind(Echo, func(_ *engine.Fx, in map[string]any) (map[string]any, error) { return in, nil }),
		engine.Bind(Search, func(_ *engine.Fx, in SearchIn) (SearchOut, error) { return SearchOut(in), nil }),
	)
}
