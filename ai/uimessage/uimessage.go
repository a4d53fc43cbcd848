// Package uimessage is the Vercel AI SDK's UI message stream protocol, as Go types: the
// chat request its DefaultChatTransport posts (what useChat sends), the chunks of the
// stream it reads back (text/event-stream, one JSON chunk per data: frame, ending with
// data: [DONE], under the response header x-vercel-ai-ui-message-stream: v1), and an
// [Encoder] that turns an agent run's AG-UI events into those chunks.
//
// It is a second encoding of the same run: the engine's own wire stays AG-UI (package
// agui), the run's log stays AG-UI, and ai.StreamUI serves a run on this one for an AI
// SDK frontend. Like agui, the package links no server code.
//
// The mapping, event by event:
//
//	RUN_STARTED                    start {messageId}: the run id, or the id of the
//	                               assistant message the request continues
//	STEP_STARTED / STEP_FINISHED   start-step / finish-step
//	TEXT_MESSAGE_*                 text-start, text-delta, text-end (id: the messageId)
//	REASONING_MESSAGE_*            reasoning-start, reasoning-delta, reasoning-end
//	TOOL_CALL_START/ARGS/END       tool-input-start, tool-input-delta, tool-input-available
//	                               (toolName: the tool flow's id, so parts are tool-<flow>)
//	TOOL_CALL_RESULT               tool-output-available (output: the result's JSON), or
//	                               tool-output-denied for a call the request denied
//	RUN_FINISHED (interrupt)       tool-approval-request per interrupt (approvalId: the
//	                               interrupt id), then finish {finishReason: tool-calls}
//	RUN_FINISHED                   finish {finishReason}
//	RUN_ERROR                      error {errorText}
//	CUSTOM                         data-<name> {data, transient: true}
//
// Reasoning spans, encrypted reasoning values (the server keeps them with the run) and
// AG-UI state events have no chunk and are left out.
package uimessage

import (
	"encoding/json"

	"github.com/bbc28f59/engine/internal/openschema"
	"github.com/google/jsonschema-go/jsonschema"
)

// Header is the response header by which the AI SDK's clients know a UI message stream,
// and HeaderValue the protocol version this package speaks.
const (
	Header      = "x-vercel-ai-ui-message-stream"
	HeaderValue = "v1"
)

// Request is the body of a chat request as the AI SDK's DefaultChatTransport posts it.
// Members the transport's body option adds are accepted and not read.
type Request struct {
	// ID is the chat's id: the thread of the conversation.
	ID string `json:"id"`
	// Messages is the whole conversation, the client's copy, oldest first.
	Messages []Message `json:"messages"`
	// Trigger is "submit-message" or "regenerate-message".
	Trigger string `json:"trigger,omitempty"`
	// MessageID names the message the request regenerates or continues.
	MessageID string `json:"messageId,omitempty"`
}

// Message is a UI message: who wrote it and its parts, in order.
type Message struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Parts    []Part          `json:"parts"`
}

// The roles of a [Message].
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Part is one part of a UI message, with the members the engine reads; the rest of a
// part (provider metadata, a file's url…) is accepted and ignored. Text parts carry
// Text; tool parts ("tool-<name>", or "dynamic-tool" with ToolName) carry ToolCallID,
// State, Input, Output, ErrorText and Approval.
type Part struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	State      string          `json:"state,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
	Approval   *Approval       `json:"approval,omitempty"`
}

// Part types and tool part states the engine reads.
const (
	PartText      = "text"
	PartStepStart = "step-start"
	PartReasoning = "reasoning"
	PartDynamic   = "dynamic-tool"
	// PartToolPrefix prefixes the type of a static tool part: "tool-" and the tool's name.
	PartToolPrefix = "tool-"

	StateApprovalRequested = "approval-requested"
	StateApprovalResponded = "approval-responded"
	StateOutputAvailable   = "output-available"
	StateOutputError       = "output-error"
	StateOutputDenied      = "output-denied"
)

// IsTool reports whether p is a tool part, and the tool's name.
func (p Part) IsTool() (name string, ok bool) {
	switch {
	case p.Type == PartDynamic:
		return p.ToolName, true
	case len(p.Type) > len(PartToolPrefix) && p.Type[:len(PartToolPrefix)] == PartToolPrefix:
		return p.Type[len(PartToolPrefix):], true
	}
	return "", false
}

// Approval is a tool part's approval: requested (ID), then answered (Approved, Reason)
// as the AI SDK's addToolApprovalResponse records it.
type Approval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// JSONSchema describes [Request] for flows that take it: the AI SDK's chat request,
// whose objects (the request, its messages, their parts) carry members beyond those the
// engine reads, all let through; input, output and metadata are any JSON value, and
// trigger and messageId may be null.
func (Request) JSONSchema() *jsonschema.Schema {
	type fields Request
	s := openschema.For[fields]()
	for _, k := range []string{"trigger", "messageId"} {
		s.Properties[k].Type, s.Properties[k].Types = "", []string{"string", "null"}
	}
	return s
}
