package journal

import (
	"context"
	"strings"
	"time"
)

// Tracer carries trace context through the journal, for a tracer that ties the
// executions of a run together (package telemetry is one). A park stored in a context
// carrying a Tracer keeps the trace context of the execution that parked
// ([ParkRecord.Trace]), a decision the one of its maker ([Decision.Trace]): the execution
// that resumes the run, on whichever instance, finds both among its [Run.Parks]. The
// journal treats trace contexts as opaque text.
type Tracer interface {
	// TraceContext returns the trace context of the work ctx belongs to (for example a
	// W3C traceparent), or "" for none.
	TraceContext(ctx context.Context) string
	// Decided is called in the decider's context once decision d of park is stored, so
	// the decider's span can link to the span that parked.
	Decided(ctx context.Context, park ParkRecord, d Decision)
}

type tracerKey struct{}

// WithTracer returns ctx carrying t.
func WithTracer(ctx context.Context, t Tracer) context.Context {
	return context.WithValue(ctx, tracerKey{}, t)
}

// TraceContextOf returns the trace context of the work ctx belongs to, from the [Tracer]
// ctx carries ("" without one): what a driver stores as [Decision.Trace] when setting a
// signal or publishing a message decides the parks waiting for it.
func TraceContextOf(ctx context.Context) string {
	if t := TracerOf(ctx); t != nil {
		return t.TraceContext(ctx)
	}
	return ""
}

// TracerOf returns the tracer ctx carries, or nil.
func TracerOf(ctx context.Context) Tracer {
	t, _ := ctx.Value(tracerKey{}).(Tracer)
	return t
}

// WriteObserver is told of every journal write made in a context whose [Tracer] also
// implements it: its kind, how long it took (retries after a transient failure
// included) and how it ended, for a write-latency metric.
type WriteObserver interface {
	// JournalWrite reports one write: kind is "begin", "step", "park", "log", "end",
	// "release", "create" (a stream), "open" or "read" (a stream's log).
	JournalWrite(ctx context.Context, kind string, d time.Duration, err error)
}

// writeKind is the kind of a write, from the description persist logs.
func writeKind(what string) string {
	kind, _, _ := strings.Cut(what, " ")
	return kind
}

// TruncationObserver is told when an event log written in a context whose [Tracer] also
// implements it reaches its row cap ([LogOptions.MaxRows]) and starts dropping deltas.
type TruncationObserver interface {
	LogTruncated(ctx context.Context, streamID string, maxRows int64)
}
