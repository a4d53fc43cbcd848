package agui

import "encoding/json"

// Each event's MarshalJSON is [AppendJSON], so the wire object opens with "type" and the
// Go structs need no Type field a caller could get wrong. The json tags document the
// wire names and drive decoding.

// RunStarted opens a run. ThreadID is the thread option, or else the run id.
type RunStarted struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
}

// Type reports [TypeRunStarted].
func (RunStarted) Type() Type { return TypeRunStarted }
func (RunStarted) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e RunStarted) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// StepStarted opens a model step; names run step-1, step-2, ….
type StepStarted struct {
	StepName string `json:"stepName"`
}

// Type reports [TypeStepStarted].
func (StepStarted) Type() Type { return TypeStepStarted }
func (StepStarted) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e StepStarted) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// StepFinished closes a model step, tool calls included.
type StepFinished struct {
	StepName string `json:"stepName"`
}

// Type reports [TypeStepFinished].
func (StepFinished) Type() Type { return TypeStepFinished }
func (StepFinished) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e StepFinished) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// TextMessageStart announces assistant text. Role is [RoleAssistant] for the engine's
// own messages; it is left out of the JSON when empty, as AG-UI allows.
type TextMessageStart struct {
	MessageID string `json:"messageId"`
	Role      string `json:"role,omitempty"`
}

// Type reports [TypeTextMessageStart].
func (TextMessageStart) Type() Type { return TypeTextMessageStart }
func (TextMessageStart) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e TextMessageStart) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// TextMessageContent carries one piece of assistant text. Delta is always sent, even
// when empty, because AG-UI requires it.
type TextMessageContent struct {
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// Type reports [TypeTextMessageContent].
func (TextMessageContent) Type() Type { return TypeTextMessageContent }
func (TextMessageContent) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e TextMessageContent) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// TextMessageEnd closes a text message.
type TextMessageEnd struct {
	MessageID string `json:"messageId"`
}

// Type reports [TypeTextMessageEnd].
func (TextMessageEnd) Type() Type { return TypeTextMessageEnd }
func (TextMessageEnd) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e TextMessageEnd) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ToolCallStart says the model named a tool. ParentMessageID is set when the same step
// emitted assistant text.
type ToolCallStart struct {
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
}

// Type reports [TypeToolCallStart].
func (ToolCallStart) Type() Type { return TypeToolCallStart }
func (ToolCallStart) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ToolCallStart) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ToolCallArgs carries one piece of a tool call's JSON arguments, as text.
type ToolCallArgs struct {
	ToolCallID string `json:"toolCallId"`
	Delta      string `json:"delta"`
}

// Type reports [TypeToolCallArgs].
func (ToolCallArgs) Type() Type { return TypeToolCallArgs }
func (ToolCallArgs) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ToolCallArgs) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ToolCallEnd says the arguments are complete; the tool has not run yet.
type ToolCallEnd struct {
	ToolCallID string `json:"toolCallId"`
}

// Type reports [TypeToolCallEnd].
func (ToolCallEnd) Type() Type { return TypeToolCallEnd }
func (ToolCallEnd) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ToolCallEnd) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// ToolCallResult carries what a tool returned, as a string. Role is [RoleTool] (the only
// value AG-UI accepts); it is left out when empty.
type ToolCallResult struct {
	MessageID  string `json:"messageId"`
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
	Role       string `json:"role,omitempty"`
}

// Type reports [TypeToolCallResult].
func (ToolCallResult) Type() Type { return TypeToolCallResult }
func (ToolCallResult) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e ToolCallResult) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// RunFinished closes a run that stopped or parked for approval. Result, Usage and
// Outcome are left out when nil; see [RunResult], [Usage] and [Outcome].
type RunFinished struct {
	ThreadID string     `json:"threadId"`
	RunID    string     `json:"runId"`
	Result   *RunResult `json:"result,omitempty"`
	Usage    []Usage    `json:"usage,omitempty"`
	Outcome  *Outcome   `json:"outcome,omitempty"`
}

// Type reports [TypeRunFinished].
func (RunFinished) Type() Type { return TypeRunFinished }
func (RunFinished) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e RunFinished) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// RunError ends a run that failed. Code is the error name when it is not plain Error
// (AgentLoopHalt, AbortError…) and is left out when empty.
type RunError struct {
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

// Type reports [TypeRunError].
func (RunError) Type() Type { return TypeRunError }
func (RunError) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e RunError) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// Custom is an application or engine event outside the core vocabulary, such as
// [CustomSubagentStarted]. Value is raw JSON so it round-trips exactly; a nil Value is
// sent as null because AG-UI requires the member to be present.
type Custom struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// NewCustom builds a [Custom] event, encoding value as its JSON payload.
func NewCustom(name string, value any) (Custom, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return Custom{}, err
	}
	return Custom{Name: name, Value: raw}, nil
}

// Type reports [TypeCustom].
func (Custom) Type() Type { return TypeCustom }
func (Custom) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e Custom) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// StateSnapshot carries the whole AG-UI state of the run (any JSON value; nil is sent as
// null).
type StateSnapshot struct {
	Snapshot json.RawMessage `json:"snapshot"`
}

// Type reports [TypeStateSnapshot].
func (StateSnapshot) Type() Type { return TypeStateSnapshot }
func (StateSnapshot) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e StateSnapshot) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }

// StateDelta carries a change of the run's AG-UI state as a JSON Patch (RFC 6902): a
// JSON array of operations.
type StateDelta struct {
	Delta json.RawMessage `json:"delta"`
}

// Type reports [TypeStateDelta].
func (StateDelta) Type() Type { return TypeStateDelta }
func (StateDelta) isEvent()   {}

// MarshalJSON encodes the event with its type first; see [AppendJSON].
func (e StateDelta) MarshalJSON() ([]byte, error) { return AppendJSON(nil, e) }
