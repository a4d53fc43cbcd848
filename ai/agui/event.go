package agui

import "encoding/json"

// Type is the discriminator every event carries in its "type" member.
type Type string

// The event types of the service contract, and AG-UI's state and reasoning events. AG-UI
// defines more (activity, messages snapshots…); those decode as [Unknown].
const (
	TypeRunStarted         Type = "RUN_STARTED"
	TypeRunFinished        Type = "RUN_FINISHED"
	TypeRunError           Type = "RUN_ERROR"
	TypeStepStarted        Type = "STEP_STARTED"
	TypeStepFinished       Type = "STEP_FINISHED"
	TypeTextMessageStart   Type = "TEXT_MESSAGE_START"
	TypeTextMessageContent Type = "TEXT_MESSAGE_CONTENT"
	TypeTextMessageEnd     Type = "TEXT_MESSAGE_END"
	TypeToolCallStart      Type = "TOOL_CALL_START"
	TypeToolCallArgs       Type = "TOOL_CALL_ARGS"
	TypeToolCallEnd        Type = "TOOL_CALL_END"
	TypeToolCallResult     Type = "TOOL_CALL_RESULT"
	TypeCustom             Type = "CUSTOM"
	TypeStateSnapshot      Type = "STATE_SNAPSHOT"
	TypeStateDelta         Type = "STATE_DELTA"

	TypeReasoningStart          Type = "REASONING_START"
	TypeReasoningMessageStart   Type = "REASONING_MESSAGE_START"
	TypeReasoningMessageContent Type = "REASONING_MESSAGE_CONTENT"
	TypeReasoningMessageEnd     Type = "REASONING_MESSAGE_END"
	TypeReasoningEnd            Type = "REASONING_END"
	TypeReasoningEncryptedValue Type = "REASONING_ENCRYPTED_VALUE"
)

// Roles carried by text messages and tool results. AG-UI accepts only "tool" on
// TOOL_CALL_RESULT; the engine's assistant text always uses "assistant".
const (
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Names of the engine's own CUSTOM events as they travel on the wire. Client readers
// present the subagent ones without the "engine." prefix.
const (
	CustomSubagentStarted  = "engine.subagent.started"
	CustomSubagentFinished = "engine.subagent.finished"
	CustomSubagentError    = "engine.subagent.error"
	CustomEventsTruncated  = "engine.events.truncated"
)

// Event is one AG-UI event. The interface is sealed: the set of event types is the
// protocol's, and an application's own events travel as [Custom]. Every implementation
// encodes to its exact wire JSON with encoding/json.
type Event interface {
	// Type reports the wire discriminator of the event.
	Type() Type
	isEvent()
}

// Unknown is an event whose type this package does not model, kept byte for byte so it
// can be passed on or inspected. It encodes back to exactly JSON.
type Unknown struct {
	// TypeName is the event's "type" member.
	TypeName Type
	// JSON is the whole event object as received.
	JSON json.RawMessage
}

// Type reports the event's own type name.
func (e Unknown) Type() Type { return e.TypeName }

func (Unknown) isEvent() {}

// MarshalJSON returns the event as it was received.
func (e Unknown) MarshalJSON() ([]byte, error) {
	if len(e.JSON) == 0 {
		return json.Marshal(struct {
			Type Type `json:"type"`
		}{e.TypeName})
	}
	return e.JSON, nil
}
