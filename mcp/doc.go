// Package mcp speaks the Model Context Protocol both ways, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): [Serve] makes the app's flows the tools (and
// its store resources the resources) of an MCP server, and [Remote] makes the tools of
// another MCP server tools an agent (package ai) can call. An app that does not import
// this package links none of it.
//
// # Flows as an MCP server
//
// [Serve] mounts the streamable HTTP transport at /_engine/mcp, stateless: no session is
// kept between requests, so any instance answers any request behind a plain load
// balancer. It negotiates the protocol revisions of [ProtocolVersions].
//
// The app chooses its tools ([Options.Tools]: [PublicFlows], [Units], [Flows]). A tool is
// named after its flow ("math.add") and carries the flow's description (followed by its
// declared error codes, which _meta "engine/errors" lists with their statuses), its
// input schema, and its output schema: the flow's when the output is an object, the
// output under "result" when it is another value (a list), none when the flow is
// durable (a call may answer with a parked run instead). Every request is authenticated
// like any route of the app (its bearer token), and a call runs the flow as that caller
// ([engine.App.Invoke]): gates, tenant and rate limits as over HTTP.
//
// A call's answer:
//   - success: the output as JSON text, and as structuredContent (under "result" when
//     it is not an object);
//   - failure: isError, with the envelope's error object as JSON text,
//     {"code":"DivideByZero","data":{"dividend":1}}, and no structuredContent (which a
//     client would check against the output schema); a gate denial reads the same
//     ({"code":"Unauthorized","data":{}}), as does a validation error with its issues;
//   - a durable flow that parks: not an error; the run's id in the text, in
//     structuredContent {parked: true, runId, state} and in _meta "engine/runId", and
//     where to read its state (GET /_engine/runs/<runId>, which holds the result once the
//     run completes). The Go SDK has no MCP tasks, so the run id is the handle.
//
// [Resource] serves a store resource's records read-only at engine://<name>/<id>,
// listed and read through its list and get flows as the caller: each tenant sees its
// own, an unknown or foreign id is resource-not-found (-32002), another refusal
// [CodeDenied].
//
// On a loopback address the endpoint refuses (403 Forbidden) a Host or Origin naming
// another host than localhost, 127.0.0.1 or [::1] ([Options.AllowedHosts] adds some):
// the DNS-rebinding protection MCP asks of local servers.
//
// # MCP servers' tools in agents
//
// See [Remote].
package mcp
