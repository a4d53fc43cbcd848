// Package clientsize holds the check that a client of an engine app links none of the
// server: a program calling one flow through clientx (testdata/client) must import no
// journal, no SQL, no ai, no gate or store and no net/http/httptest; its binary must hold
// no code of the TypeScript generator the engine package serves /_engine/client.d.ts with
// (imported, but unreached by a client and free of initialisation work); and it must
// stay within 5 % of the same call made by hand with the JSON Schema library the flow
// declarations publish their schemas with (the test logs the ratio to the bare call too). The package has no code of its
// own; the check is its test, run by go test ./... like any other.
package clientsize
