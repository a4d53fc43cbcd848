// Package console is an operator's console served by the app itself: a browser UI to see
// and steer a running app, with no Node, no build step and no third-party host. Its HTML,
// CSS and ES modules are embedded in the module; an app that does not import this
// package links none of it.
//
//	app, err := engine.New(
//		gate.Use(auth),
//		durable.With(j),
//		console.Serve(console.Options{}), // the console at /_engine/console/
//	)
//
// # Access
//
// The console signs in through the app's own sign-in flow ([Options.SignIn], by default
// auth.signInEmail of package gate) and sends the access token it gets as a bearer token,
// renewed with the refresh token ([Options.Refresh]) when it expires.
// Every data request goes to a route under /_engine/console/api/, mounted with
// [engine.Handle] behind the app's authentication: without credentials it is 401
// Unauthorized, a principal who is not an operator ([engine.Principal.Operator]) gets
// 403 Forbidden {gate: "operator"}, and neither sees any data, not even flow names.
// The page and its assets hold no data of the app.
//
// # Pages
//
//   - Flows: every unit and flow of the descriptor (trigger, gates, durable, declared
//     errors, input and output schemas), and a form generated from a flow's input schema
//     that calls the flow over its RPC route as the operator and shows the envelope and
//     the HTTP status.
//   - Runs: the journal's runs, newest first, filtered by status, flow and tenant, one
//     page at a time (the journal's keyset cursor), refreshed while open.
//   - Run: its event logs followed live as a transcript (messages, tool calls with their
//     arguments and results, subagents, usage and cost, stop reason), its recorded steps
//     and its parks with their deadlines.
//   - Approvals: the pending approvals of the operator's tenant; approve (with arguments
//     edited, checked against the tool's input schema first) or deny with a reason,
//     through [durable.Decide]. Conflict and JournalLeaseBusy are shown as they are;
//     the latter is retried after its Retry-After.
//   - Health: the instances and the leases they hold, the runs waiting for recovery, the
//     journal's retention and capabilities, the scheduled flows with their next tick.
//
// Operators see the runs of every tenant; they decide the approvals of their own
// tenant's runs, as [durable.Decide] allows. Being an operator of the run's tenant is what
// entitles the decision, as with durable.Decisions: the gates of the tool that waits
// (its scopes) are not asked of the operator, who may hold none of them.
//
// # Assets
//
// Asset names carry a hash of their content, computed when the package initialises, and
// are served with a year-long immutable cache; the page itself is never cached. Every
// response carries a Content-Security-Policy that allows scripts, styles and requests
// from the app's own origin only, with no inline script or style.
package console
