// Package resource declares store resources: a typed collection's five flows (list, get,
// create, update, remove) on a unit, with their triggers and schemas and no server code.
// A contract package shared with clients declares its resources here; the server binds
// them to a database with store.Bind.
//
// A contract that declares a resource links no database code as long as its record type
// does not import one: bun's struct tags need no import, and without bun.BaseModel bun
// names the table after the type (Note → notes). A record type that embeds
// bun.BaseModel links bun into every client of the contract.
package resource

import (
	"reflect"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/store/internal/record"
	"github.com/google/jsonschema-go/jsonschema"
)

// List limits.
const (
	// DefaultLimit is the page size of a list called without a limit.
	DefaultLimit = 20
	// MaxLimit is the largest limit a list accepts; a larger one is a ValidationError.
	MaxLimit = 100
)

// Query is the input of list: limit, cursor and filter fields. Over REST they are query
// parameters; in Go, for example, store.Query{"limit": 50, "title": "groceries"}.
type Query map[string]any

// Fields is the input of create and update: the record's writable fields by JSON name
// (update also carries the id). Update changes only the fields present.
type Fields map[string]any

// ID is the input of get and remove.
type ID struct {
	// ID is the record's id, the :id of the path over REST.
	ID string `json:"id"`
}

// Resource is a declared store resource over record type T: its five flows.
type Resource[T any] struct {
	// Unit is the unit the flows are declared on.
	Unit *engine.Unit
	// Base is the HTTP base path, without a trailing slash.
	Base string

	// List is GET Base: a page of records, paged by meta.nextCursor.
	List *engine.Flow[Query, []T]
	// Get is GET Base/:id: one record, or NotFound.
	Get *engine.Flow[ID, T]
	// Create is POST Base: a new record from its writable fields.
	Create *engine.Flow[Fields, T]
	// Update is PATCH Base/:id: the fields given are changed, the others kept.
	Update *engine.Flow[Fields, T]
	// Remove is DELETE Base/:id, answered 204.
	Remove *engine.Flow[ID, engine.NoContent]
}

// Define declares the store resource of record type T on unit u at HTTP base path base
// (such as "/notes"). Problems with T's tags or the path are reported by [engine.New]
// when the resource is bound.
func Define[T any](u *engine.Unit, base string) *Resource[T] {
	r := &Resource[T]{Unit: u, Base: strings.TrimRight(base, "/")}
	m, rec, _ := record.Declare(reflect.TypeFor[T]()) // store.Bind reports the error
	if rec == nil {
		rec = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	}
	one := 1
	idSchema := func() *jsonschema.Schema { return &jsonschema.Schema{Type: "string", MinLength: &one} }
	prop := func(name string) *jsonschema.Schema {
		if p := rec.Properties[name]; p != nil {
			return p.CloneSchemas()
		}
		return &jsonschema.Schema{}
	}
	writable := func(s *jsonschema.Schema, required bool) {
		s.Type, s.Types = "object", nil
		s.AdditionalProperties = nil
		s.Properties = map[string]*jsonschema.Schema{}
		s.Required = nil
		if m == nil {
			return
		}
		for _, f := range m.Fields {
			if f.Writable() && f.JSONName != "-" {
				s.Properties[f.JSONName] = prop(f.JSONName)
			}
		}
		if required {
			for _, name := range rec.Required {
				if f := m.ByJSON[name]; f != nil && f.Writable() {
					s.Required = append(s.Required, name)
				}
			}
		}
	}
	minLimit, maxLimit := float64(1), float64(MaxLimit)
	r.List = engine.Define[Query, []T](u, "list", engine.GET(r.Base),
		engine.Describe("A page of the records at "+r.Base+", oldest first: limit (default 20, at most 100), the cursor of the previous page (meta.nextCursor), and filters by field."),
		engine.InputSchema(func(s *jsonschema.Schema) {
			s.Type, s.Types = "object", nil
			s.AdditionalProperties = nil
			s.Properties = map[string]*jsonschema.Schema{
				"limit":  {Type: "integer", Minimum: &minLimit, Maximum: &maxLimit},
				"cursor": {Type: "string"},
			}
			if m != nil {
				for _, f := range m.Fields {
					if f.Filter {
						s.Properties[f.JSONName] = prop(f.JSONName)
					}
				}
			}
		}))
	r.Get = engine.Define[ID, T](u, "get", engine.GET(r.Base+"/:id"),
		engine.Describe("The record at "+r.Base+" with this id, or NotFound."), engine.InputSchema(func(s *jsonschema.Schema) {
			s.Properties["id"] = idSchema()
		}))
	r.Create = engine.Define[Fields, T](u, "create", engine.POST(r.Base),
		engine.Describe("Create a record at "+r.Base+" from its fields."), engine.InputSchema(func(s *jsonschema.Schema) {
			writable(s, true)
		}))
	r.Update = engine.Define[Fields, T](u, "update", engine.PATCH(r.Base+"/:id"),
		engine.Describe("Change the fields given of the record at "+r.Base+" with this id."), engine.InputSchema(func(s *jsonschema.Schema) {
			writable(s, false)
			s.Properties["id"] = idSchema()
			s.Required = []string{"id"}
		}))
	r.Remove = engine.Define[ID, engine.NoContent](u, "remove", engine.DELETE(r.Base+"/:id"),
		engine.Describe("Remove the record at "+r.Base+" with this id."), engine.InputSchema(func(s *jsonschema.Schema) {
			s.Properties["id"] = idSchema()
		}))
	return r
}
