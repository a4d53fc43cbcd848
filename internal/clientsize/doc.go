// Package clientsize holds the check that a client of an engine app links none of the
// server. Two programs are checked: one calling a flow through clientx (testdata/client),
// and one using a contract that declares a durable agent flow and a store resource
// (testdata/contract, testdata/contractclient). They must import no journal, no SQL, no
// bun, no cron, no provider SDK, no gate, no ai but its protocol vocabularies (ai/agui,
// ai/uimessage), no store but store/resource, and no net/http/httptest; their binaries
// must hold no code of the TypeScript generator the engine package serves
// /_engine/client.d.ts with (imported, but unreached by a client and free of
// initialisation work); and the first must stay within 5 % of the same call made by hand
// with the JSON Schema library the flow declarations publish their schemas with (the test
// logs the ratio to the bare call too). The package has no code of its own; the check is
// its test, run by go test ./... like any other.
package clientsize
