// Package store mounts a typed collection over a bun model as the five flows of a store
// resource: list (GET base), get (GET base/:id), create (POST base), update (PATCH
// base/:id, partial) and remove (DELETE base/:id, answered 204).
//
// Declaration and binding are separate, as in the root package: [resource.Define] (in
// store/resource, which links no database code) declares the flows on a unit (types,
// triggers, schemas — shareable with a client), and [Bind] binds them to a database with
// gates and tenant scoping on the server. [Define] and the input types here are aliases
// of store/resource's, for a server that declares and binds in one place.
//
// Lists are ordered by id (UUIDv7, so creation order) and paged by keyset: limit
// (default 20, at most 100) and an opaque cursor handed back in meta.nextCursor while
// more rows exist. Filters are equality tests on fields tagged filter, always passed to
// the database as parameters. A tenant-scoped resource stores the caller's tenant on
// create and treats other tenants' rows as missing (NotFound, never Forbidden).
package store
