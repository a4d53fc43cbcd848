// Package seamcheck holds the check that the module's own extensions use only the public
// seam of package engine: a package that imports engine (durable, ai, gate, store, vault,
// and every other one) may not import an internal package that engine itself imports,
// which would be a private door into the root that a user's extension does not have. It
// also checks that the root package's tests link no database driver, which `go mod tidy`
// would make every module importing the root download.
package seamcheck
