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
// A streaming flow ([DefineStream], [BindStream]) answers with a text/event-stream: its
// handler writes typed events to a [Stream] the engine opened and returns a result, and
// the call is over when it returns. Agent runs (package ai) are streaming flows.
//
// Extensions build on one public seam, which the module's own (gate, store, vault, ai,
// durable) use exactly as yours can: [Option] values grouped with [Options], or refused
// with [InvalidOption]; [Interceptor]s around every call ([Intercept], outside the gates,
// seeing denials) or around every handler ([InterceptHandler], inside them: the durable
// runner is one); bind options ([Use] with [Middleware], [Tag], [BindOptions],
// [InvalidBindOption]); a typed [Key] for their own values on the app, a flow's binding or
// a call; [OnStart] and [OnClose] for background work; [Validate] for checks of the whole
// app; [Handle] for routes (under /_engine/ too) that get the app's authentication and a
// call context; [App.Invoke] to call a flow in process as a principal, [App.CheckGates] to
// check its gates without running it, and [App.NewCall] with [App.DecodeInput] for an
// extension that runs a handler itself.
//
// The typed client lives in package clientx. Gates live in package gate, store resources
// in package store, durable flows in package durable (on the journal of package
// journal), and AI agents in package ai. This package imports none of them, so a client
// binary that imports it for the flow declarations links no server machinery beyond
// its own.
package engine
