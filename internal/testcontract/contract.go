// Package testcontract is a declarations-only contract for engine's end-to-end tests:
// units and flows with their types, triggers and error codes, and no handler. It holds
// what the tests need beyond the reference contract's math unit, which they take from
// examples/conformance/contract. The server side of the tests binds handlers to these
// flows; the contract-form client test imports only the contract packages and clientx,
// as a real client binary would.
package testcontract

import (
	"net/http"

	"github.com/bbc28f59/engine"
)

// Items exercises every REST mapping rule: typed path and query values, bodies on each
// method, HEAD, 204 and pagination meta.
var Items = engine.NewUnit("items")

// Filter is a nested object sent as JSON text in a query string.
type Filter struct {
	Color string `json:"color"`
	Min   int    `json:"min"`
}

// ItemQuery is the input (and output) of items.get: one field of each query type.
type ItemQuery struct {
	ID      int64    `json:"id"`
	Verbose bool     `json:"verbose,omitempty"`
	Tags    []string `json:"tags,omitempty"`
	Sizes   []int    `json:"sizes,omitempty"`
	Limit   int      `json:"limit,omitempty"`
	Ratio   float64  `json:"ratio,omitempty"`
	Filter  *Filter  `json:"filter,omitempty"`
	Note    *string  `json:"note,omitempty"`
}

// NameIn is the input (and output) of items.byName: a string path parameter.
type NameIn struct {
	Name string `json:"name"`
}

// Item is a stored item.
type Item struct {
	ID     int64    `json:"id"`
	Name   string   `json:"name"`
	Tags   []string `json:"tags,omitempty"`
	Price  float64  `json:"price"`
	Active bool     `json:"active"`
}

// RemoveIn is the input of items.remove.
type RemoveIn struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// ExistsIn is the input of items.exists.
type ExistsIn struct {
	ID int64 `json:"id"`
}

// ExistsOut is the output of items.exists.
type ExistsOut struct {
	Exists bool `json:"exists"`
}

// PageIn is the input of items.page.
type PageIn struct {
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// The items flows.
var (
	Get     = engine.Define[ItemQuery, ItemQuery](Items, "get", engine.GET("/items/:id"), engine.Public())
	ByName  = engine.Define[NameIn, NameIn](Items, "byName", engine.GET("/items/by-name/:name"), engine.Public())
	Create  = engine.Define[Item, Item](Items, "create", engine.POST("/items"), engine.Public())
	Update  = engine.Define[Item, Item](Items, "update", engine.PATCH("/items/:id"), engine.Public())
	Replace = engine.Define[Item, Item](Items, "replace", engine.PUT("/items/:id"), engine.Public())
	Remove  = engine.Define[RemoveIn, engine.NoContent](Items, "remove", engine.DELETE("/items/:id"), engine.Public())
	Exists  = engine.Define[ExistsIn, ExistsOut](Items, "exists", engine.Trigger(http.MethodHead, "/items/:id/exists"), engine.Public())
	Page    = engine.Define[PageIn, []Item](Items, "page", engine.GET("/items"), engine.Public())
)

// Faults fails in every way a server can: undeclared errors, undeclared codes, panics,
// slowness and gate denials.
var Faults = engine.NewUnit("faults")

// Empty is the input of flows that take nothing.
type Empty struct{}

// Whoami is the caller as a gated flow sees it.
type Whoami struct {
	ID string `json:"id"`
}

// The faults flows.
var (
	Boom       = engine.Define[Empty, Empty](Faults, "boom", engine.Public())
	Undeclared = engine.Define[Empty, Empty](Faults, "undeclared", engine.Public())
	Panic      = engine.Define[Empty, Empty](Faults, "panic", engine.Public())
	Slow       = engine.Define[Empty, Empty](Faults, "slow", engine.Public())
	Me         = engine.Define[Empty, Whoami](Faults, "me")
	Forbid     = engine.Define[Empty, Empty](Faults, "forbid")
	Limited    = engine.Define[Empty, Empty](Faults, "limited", engine.Public())
)
