// Package clientx is the typed Go client of an engine app (the Go form of the reference
// contract's createClient), speaking the wire protocol described in docs/protocol.md.
//
// Types come from the flow declarations themselves, so there is no code generation. A
// client built with [ForApp] takes its REST routes from the app value; one built with
// [New] posts every call to RPC (POST {base}/_engine/{unit}/{flow}) unless it is given
// routes with [WithRoutes] or [WithRouteTable] — which a declarations-only contract
// package can supply through [engine.RoutesOf], so a client binary links no handler
// code.
//
//	c, err := clientx.New("https://api.example.com", clientx.WithRoutes(engine.RoutesOf(contract.Math)))
//	res := clientx.Call(ctx, c, contract.Square, contract.SquareIn{N: 3})
//	if res.Failed() { … res.Error.Code … }
//
// A call never returns a Go error for a flow failure: every outcome is a [Result] whose
// Error is the envelope's error object, or TransportError for network and protocol
// trouble (with data.message and, when there was an HTTP status, data.status).
//
// A flow that answers with an event stream (a streamed agent run) is not read by Call,
// which fails with a TransportError saying so: read it with Stream in clientx/agent, or
// with [Client.OpenStream] for other streams.
//
// Timeouts, retries, static and per-request headers and bearer authentication with a
// single refresh on 401 are options shared by the client and the low-level [Transport].
package clientx
