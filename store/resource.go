package store

import (
	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/store/resource"
)

// List limits, the same as [resource.DefaultLimit] and [resource.MaxLimit].
const (
	// DefaultLimit is the page size of a list called without a limit.
	DefaultLimit = resource.DefaultLimit
	// MaxLimit is the largest limit a list accepts; a larger one is a ValidationError.
	MaxLimit = resource.MaxLimit
)

// Query is [resource.Query], the input of list.
type Query = resource.Query

// Fields is [resource.Fields], the input of create and update.
type Fields = resource.Fields

// ID is [resource.ID], the input of get and remove.
type ID = resource.ID

// Resource is [resource.Resource], a declared store resource over record type T.
type Resource[T any] = resource.Resource[T]

// Define is [resource.Define]. A contract package shared with clients calls
// resource.Define instead: importing store links the database code into the client.
func Define[T any](u *engine.Unit, base string) *Resource[T] {
	return resource.Define[T](u, base)
}
