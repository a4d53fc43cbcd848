package agui

import (
	"encoding/json"
	"time"
)

// StopReason says why an agent loop stopped; it travels in [RunResult].StopReason.
type StopReason string

// The stop reasons delivered in RUN_FINISHED. Aborted and denied runs end with
// [RunError] instead, so they have no constant here. A run that was stopped ends with
// [StopCancelled] and the outcome [OutcomeCancelled].
const (
	StopCompleted StopReason = "completed"
	StopMaxSteps  StopReason = "max_steps"
	StopBudget    StopReason = "budget"
	StopError     StopReason = "error"
	StopCancelled StopReason = "cancelled"
)

// RunResult is RUN_FINISHED.result. Cost is the model-reported spend summed over the
// run; Output is the last tool result (or the raw provider payload of a text reply) and
// is left out when nil. AG-UI takes any non-null value here, so the members are the
// engine's own.
type RunResult struct {
	Cost       float64         `json:"cost"`
	StopReason StopReason      `json:"stopReason"`
	Output     json.RawMessage `json:"output,omitempty"`
}

// Usage is one element of RUN_FINISHED.usage. The counts are pointers because a count
// the model did not report must be absent, never an invented zero; in Go 1.26 write
// new(int64(n)) to set one. AG-UI requires counts to be non-negative integers.
// ReasoningTokens, AG-UI's own field, is the part of OutputTokens the model spent on
// reasoning, where the provider reports it.
type Usage struct {
	InputTokens     *int64 `json:"inputTokens,omitempty"`
	OutputTokens    *int64 `json:"outputTokens,omitempty"`
	ReasoningTokens *int64 `json:"reasoningTokens,omitempty"`
}

// OutcomeType is the discriminator of RUN_FINISHED.outcome.
type OutcomeType string

// The outcome types AG-UI 1.0 defines. The engine sends [OutcomeInterrupt] for a park and
// [OutcomeSuccess] only to name pending client tool calls; an absent outcome means success.
const (
	OutcomeSuccess   OutcomeType = "success"
	OutcomeInterrupt OutcomeType = "interrupt"
	OutcomeCancelled OutcomeType = "cancelled"
)

// Outcome is RUN_FINISHED.outcome. For [OutcomeInterrupt] AG-UI requires at least one
// interrupt. PendingToolCallIDs, on [OutcomeSuccess] only, names the client tool calls
// the run streamed and left for the client to run, in the order they were made.
type Outcome struct {
	Type               OutcomeType `json:"type"`
	Interrupts         []Interrupt `json:"interrupts,omitempty"`
	PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"`
}

// InterruptOutcome is the outcome of a run parked for approval.
func InterruptOutcome(interrupts ...Interrupt) *Outcome {
	return &Outcome{Type: OutcomeInterrupt, Interrupts: interrupts}
}

// ReasonApproval is the reason of a tool-approval interrupt.
const ReasonApproval = "approval"

// Interrupt is one approval interrupt record. ID, Reason and Payload are the service
// contract's; Message, ToolCallID, ExpiresAt and ResponseSchema are AG-UI's own
// interrupt fields, sent too so stock AG-UI clients understand the park and can answer
// it with RunAgentInput.resume (ResponseSchema describes the payload they may send). ID
// is the only handle for the decision (see [NewInterruptID]).
type Interrupt struct {
	ID             string           `json:"id"`
	Reason         string           `json:"reason"`
	Payload        InterruptPayload `json:"payload"`
	Message        string           `json:"message,omitempty"`
	ToolCallID     string           `json:"toolCallId,omitempty"`
	ExpiresAt      time.Time        `json:"expiresAt,omitzero"`
	ResponseSchema json.RawMessage  `json:"responseSchema,omitempty"`
}

// InterruptPayload names the tool waiting for approval and the arguments it would get.
type InterruptPayload struct {
	Tool string `json:"tool"`
	// Args is the tool input as a JSON object; nil is sent as {}.
	Args json.RawMessage `json:"args"`
}

// MarshalJSON sends nil Args as an empty object, since the contract types it as one.
func (p InterruptPayload) MarshalJSON() ([]byte, error) {
	type fields InterruptPayload
	if len(p.Args) == 0 {
		p.Args = json.RawMessage(`{}`)
	}
	return json.Marshal(fields(p))
}
