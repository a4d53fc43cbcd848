// Package contract holds the reference contract's declarations: the math unit of the
// reference app (examples/conformance), with its types, triggers and declared error, and
// no handler. The app binds its handlers to these flows; a client or a test imports this
// package, and clientx, to call them, so it links none of the server. It imports only
// engine, the standard library and the schema package.
//
// The engine's own tests use it as their reference contract too, so the flows they test
// are the ones the spec's reference app serves.
package contract

import (
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// Math is the math unit: public flows over RPC and REST, a declared error code, path,
// query and body mapping.
var Math = engine.NewUnit("math")

// AddIn is the input of math.add.
type AddIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// AddOut is the output of math.add.
type AddOut struct {
	Sum float64 `json:"sum"`
}

// SquareIn is the input of math.square.
type SquareIn struct {
	N float64 `json:"n"`
}

// SquareOut is the output of math.square.
type SquareOut struct {
	N      float64 `json:"n"`
	Square float64 `json:"square"`
}

// DivideIn is the input of math.divide.
type DivideIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// DivideOut is the output of math.divide.
type DivideOut struct {
	Quotient float64 `json:"quotient"`
}

// DivideByZeroData is the payload of [DivideByZero].
type DivideByZeroData struct {
	Dividend float64 `json:"dividend"`
}

// SearchIn is the input of math.search.
type SearchIn struct {
	Q     string  `json:"q"`
	Limit float64 `json:"limit"`
}

// SearchOut is the output of math.search: the query and limit received.
type SearchOut struct {
	Q     string  `json:"q"`
	Limit float64 `json:"limit"`
}

// DivideByZero is math.divide's declared error. Its status is 400, like a framework
// validation error's: a client tells them apart by the code, never by the status.
var DivideByZero = engine.NewCode[DivideByZeroData]("DivideByZero", http.StatusBadRequest)

// The math flows.
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
