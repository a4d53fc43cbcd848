// Package engine builds application servers from units of typed flows and serves them as
// an [http.Handler] on your own mux.
//
// A flow is a named operation with a typed input, a typed output and declared error
// codes. Declarations carry no handler, so a contract package can declare flows and be
// imported by both the server and a client:
//
//	var Math = engine.NewUnit("math")
//	var Square = engine.Define[SquareIn, SquareOut](Math, "square", engine.GET("/math/square/:n"), engine.Public())
//
// The server binds handlers when it builds the app:
//
//	app, err := engine.New(
//		engine.Bind(Square, func(fx *engine.Fx, in SquareIn) (SquareOut, error) {
//			return SquareOut{N: in.N, Square: in.N * in.N}, nil
//		}),
//	)
//	mux.Handle("/api/", http.StripPrefix("/api", app.Handler()))
//
// Every reply is the result envelope {data, error, meta?}. Flows with an HTTP trigger are
// served over REST (path parameters from same-named input fields, the rest from the query
// string on GET and HEAD or from the JSON body); every flow is also served over RPC at
// POST /_engine/{unit}/{flow}; GET /_engine/client.json serves the descriptor.
//
// Handlers return Go errors. A declared code ([NewCode], [Errors]) or a framework code
// ([NotFound], [Conflict], gate denials) is answered as such; any other error or a panic
// is logged through the app's *slog.Logger and answered as InternalError without detail.
//
// Extensions (gate, store, vault, ai and durable are written this way) build on a few
// hooks: [Option] values grouped with [Options], or refused with [InvalidOption]; bind
// options ([Use] with [Middleware], [Tag], [BindOptions], [InvalidBindOption]); a typed
// [Key] for their own values on the app, a flow's binding or a call; [OnStart] and
// [OnClose] for background work; [Validate] for checks of the whole app; [Mount] for
// plain routes beside the flows; and [Responder] with [WriteData] and [WriteError] for
// outputs that write their own response. Within this module, durable and ai also reach
// a few internals (the seam durable flows run through, a flow's gates checked for
// another caller) that no other package can.
//
// The typed client lives in package clientx. Gates live in package gate, store resources
// in package store, durable flows in package durable (on the journal of package
// journal), and AI agents in package ai. This package imports none of them, so a client
// binary that imports it for the flow declarations links no server machinery beyond
// its own.
package engine
