package clientx

import (
	"encoding/json"

	"github.com/bbc28f59/engine"
)

// Result is the outcome of a call: the decoded envelope. Exactly one of Data (on
// success) and Error (on failure) is meaningful; a flow failure is never a Go error.
type Result[T any] struct {
	// Data is the flow's output; the zero value on failure and on a 204 reply.
	Data T
	// Error is the envelope's error object, or a client-side TransportError,
	// IncompletePath or ValidationError. Its Data is the raw JSON payload
	// (json.RawMessage); read it with [engine.CodeDef.DataOf] or [engine.Error.DecodeData].
	Error *engine.Error
	// Meta is the envelope's top-level meta object, present on some successes.
	Meta Meta
	// Status is the HTTP status of the reply, or 0 when there was none (a network
	// failure, or an error found before sending).
	Status int
}

// Meta is the envelope's meta object: pagination, parking, and whatever else a flow
// sets.
type Meta struct {
	// NextCursor is meta.nextCursor, the cursor of the next page of a list, or "".
	NextCursor string
	// Parked is meta.parked: the flow is durable and its run parked awaiting a decision
	// (durable.Park). The reply is then 202 Accepted with no data and no error, so the
	// result is OK with a zero Data. The run resumes once decided, and its output is not
	// sent to this caller: an application that parks exposes the decision and the
	// outcome through flows of its own, keyed by RunID. (A streamed agent run that parks
	// on an approval ends its stream with the interrupts instead.)
	Parked bool
	// RunID is meta.runId: the journal's id of the durable run that parked (not an agent
	// run id), or "".
	RunID string
	// Raw is the whole meta object as received, or nil when the reply had none.
	Raw json.RawMessage
}

// OK reports whether the call succeeded (the reference contract's isOk).
func (r Result[T]) OK() bool { return r.Error == nil }

// Failed reports whether the call failed (the reference contract's isFail).
func (r Result[T]) Failed() bool { return r.Error != nil }

// IsOk reports whether r succeeded; the function form of [Result.OK].
func IsOk[T any](r Result[T]) bool { return r.Error == nil }

// IsFail reports whether r failed; the function form of [Result.Failed].
func IsFail[T any](r Result[T]) bool { return r.Error != nil }

// IsErrorCode reports whether err is non-nil and carries code.
func IsErrorCode(err *engine.Error, code string) bool { return err != nil && err.Code == code }

// IsTransportError reports whether err is a TransportError: a network failure, a
// timeout, or a reply that is not a result envelope. Declared and framework codes never
// are.
func IsTransportError(err *engine.Error) bool {
	return IsErrorCode(err, engine.CodeTransportError)
}
