// Package ai runs AI agents inside flows: a model calls the app's own flows as tools, and
// the run streams to the caller as AG-UI events over server-sent events.
//
// # Models and providers
//
// A [Provider] streams one model turn; it is the only seam between the agent loop and a
// vendor, so the loop never imports a vendor SDK. The providers live in their own
// packages, and an app links only the ones it imports: ai/providers/openai (any
// OpenAI-compatible server), ai/providers/anthropic, and ai/providers/scripted, which
// plays a script for tests and offline demos. [Model] names a provider's model under an
// application-chosen name, with prices ([WithPricing]) that turn reported token counts
// into spend; switching vendor is then a one-line change. One reply of a model holds at
// most [MaxReplyBytes] ([DefaultMaxReplyBytes], 1 MiB, unless set): past it the model
// call is closed and an agent run ends with RUN_ERROR code ReplyTooLarge, so a run's
// memory, stored log and recorded output stay bounded whatever the model sends.
//
// # Agents and tools
//
// [Agent] declares an agent: a model, the flows it may call as tools ([Tools] of their
// declarations, so a tool that does not exist does not compile), and a limit on tool
// calls (maxSteps, [DefaultMaxSteps] by default), optionally a system prompt ([System])
// and a spending limit per run ([Budget]). [Register] has engine.New check that every
// tool is bound. Tools are ordinary flows: the model sees each flow's input JSON Schema
// and description, its arguments are validated like a request, and the tool runs as the
// flow with the run's principal, so the flow's gates apply. A gate denial or a declared
// error is fed back to the model as the tool's result; a tool that fails with an internal
// error ends the run with stop reason "error".
//
//	model := ai.Model("default", provider, "gpt-4o-mini", ai.WithPricing(0.15, 0.60))
//	assistant := ai.Agent("assistant", model, ai.Tools(Weather), 6)
//
//	var Ask = engine.DefineStream[agui.Input, agui.Event, agui.RunOutput](Chat, "ask", engine.POST("/chat"), engine.Durable())
//
//	engine.BindStream(Ask, func(fx *engine.Fx, in agui.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
//		return ai.Stream(fx, assistant, in, out, ai.RunOptions{})
//	}),
//	ai.Register(assistant),
//
// The declaration's types come from ai/agui, which links no server code, so a contract
// package shared with clients can declare agent flows.
//
// # Running
//
// [Stream], in the handler of a streaming flow (engine.BindStream), runs the agent and
// writes its events to the flow's stream as they happen: one AG-UI event per
// text/event-stream frame (package ai/agui), ending with data: [DONE]. It returns when the
// run is over, with its [RunResult]: the run lives inside its handler. [Run] runs an agent
// to its end without streaming (a tool that asks a subagent, a job). [Ask] sends one
// prompt and returns the text, failing with [*BudgetExceededError] past its cost limit;
// [StreamText] streams a plain text reply. In Go, clientx/agent reads the events, and
// clientx.CallResult asks a streaming flow for its result alone.
//
// Inside a durable flow (engine.Durable, in an app with a journal) every model call and
// tool call is a journal step: a run resumed after an approval or a crash replays what it
// recorded instead of calling the model or the tools again, and its events are stored in
// a log under the run's id.
//
// # Approvals and following
//
// [Approval] makes a tool flow wait for a human's decision when a predicate of its input
// holds. The durable run parks: the stream ends with RUN_FINISHED carrying an interrupt
// whose id is the only handle for the decision. [Install] adds the routes that decide it
// (POST /agent/approvals/approve and /deny, checked against the tool's gates and the
// run's tenant) and the follow route GET /agent/runs/:runId/events, which serves the
// stored log with resume by Last-Event-ID and stays open across the interrupt until the
// resumed run ends. In handlers, [Approve] and [Deny] decide as the caller.
//
//	engine.Bind(Transfer, transfer, gate.Scopes("tools:transfer"),
//		ai.Approval(func(in TransferIn) bool { return in.Amount > 100 }))
//
// # Reasoning and other clients
//
// A model declared [WithReasoning] streams its reasoning as AG-UI reasoning messages
// before the text and tool calls it led to; the run keeps it, with the provider's
// signatures, and sends it back where the provider requires (Anthropic, with a turn's
// tool results). [StreamUI] serves the same run to the Vercel AI SDK's useChat as its UI
// message stream (package ai/uimessage), approvals included.
//
// The repository's docs/protocol.md describes every event, status and route on the wire,
// and docs/ai-sdk-ui.md the AI SDK's.
package ai
