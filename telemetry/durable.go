package telemetry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the links and spans of durable runs.
const (
	keyLink    = attribute.Key("engine.link")
	keyParkKey = attribute.Key("engine.park.key")
	keyKind    = attribute.Key("engine.decision.kind")
)

var (
	_ journal.Tracer             = (*telemetry)(nil)
	_ journal.WriteObserver      = (*telemetry)(nil)
	_ journal.TruncationObserver = (*telemetry)(nil)
)

// LogTruncated implements [journal.TruncationObserver]: counted.
func (t *telemetry) LogTruncated(ctx context.Context, _ string, _ int64) {
	t.m.truncated.Add(ctx, 1)
}

// keyWrite is the kind of a journal write.
const keyWrite = attribute.Key("engine.journal.write.kind")

// JournalWrite implements [journal.WriteObserver]: the write-latency metric.
func (t *telemetry) JournalWrite(ctx context.Context, kind string, d time.Duration, err error) {
	if !t.m.journalWrite.Enabled(ctx) {
		return
	}
	attrs := []attribute.KeyValue{keyWrite.String(kind)}
	if err != nil {
		attrs = append(attrs, keyError.String("_OTHER"))
	}
	t.m.journalWrite.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
}

// TraceContext implements [journal.Tracer]: the W3C traceparent of the span in ctx.
func (t *telemetry) TraceContext(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// Decided implements [journal.Tracer]: the decider's span links to the span that parked
// the run, and the decision is counted with its wait.
func (t *telemetry) Decided(ctx context.Context, park journal.ParkRecord, d journal.Decision) {
	kind := keyKind.String(string(d.Kind))
	t.m.decisions.Add(ctx, 1, metric.WithAttributes(kind))
	if !park.CreatedAt.IsZero() {
		at := d.DecidedAt
		if at.IsZero() {
			at = time.Now() // stored just now, at the journal's time
		}
		t.m.decisionWait.Record(ctx, at.Sub(park.CreatedAt).Seconds(), metric.WithAttributes(kind))
	}
	span := trace.SpanFromContext(ctx)
	if sc := spanContextOf(park.Trace); sc.IsValid() && span.IsRecording() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{keyLink.String("parked"), keyParkKey.String(park.Key)}})
	}
}

// spanContextOf parses a stored traceparent; the zero span context when there is none.
func spanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// resumeSpan starts the span of an execution of durable run run that the runner started
// itself, outside any request: "resume <flow>" for one that continues the run (after a
// decision, a signal or a crash), a child of the latest decision's maker, so the resumed
// run is in the trace of the request that decided it, with a link to each span that
// parked the run; "run <flow>" for a first execution (a clock's tick). It returns a nil
// span when ctx holds a span already (an execution inside a traced call).
func (t *telemetry) resumeSpan(ctx context.Context, def *engine.FlowDef, run *journal.Run) (context.Context, trace.Span) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil
	}
	parks := run.Parks()
	name := "resume " + def.ID()
	if len(parks) == 0 && !run.Replaying() {
		name = "run " + def.ID()
	}
	var links []trace.Link
	var latest *journal.Decision
	for i := range parks {
		p := &parks[i]
		if sc := spanContextOf(p.Trace); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{keyLink.String("parked"), keyParkKey.String(p.Key)}})
		}
		if d := p.Decision; d != nil && spanContextOf(d.Trace).IsValid() && (latest == nil || d.DecidedAt.After(latest.DecidedAt)) {
			latest = d
		}
	}
	slices.SortFunc(links, func(a, b trace.Link) int {
		return strings.Compare(a.SpanContext.SpanID().String(), b.SpanContext.SpanID().String())
	})
	if latest != nil {
		ctx = trace.ContextWithRemoteSpanContext(ctx, spanContextOf(latest.Trace))
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(keyFlow.String(def.ID()), keyRunID.String(run.ID)))
}

// handlerScope is the inner interceptor, around every execution of a handler: it hands
// the agent loop the observer that makes its spans and the journal the tracer that keeps
// trace contexts with parks and decisions, and gives an execution that resumes a durable
// run its span in the decision's trace. Given after [durable.With], it wraps the
// executions the durable runner resumes too.
func (t *telemetry) handlerScope(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
	obs := &agentObserver{t: t}
	flow := keyFlow.String(def.ID())
	return func(fx *engine.Fx, in any) (any, error) {
		ctx := fx.Context()
		if fx.Request() != nil && !trace.SpanFromContext(ctx).IsRecording() && !t.m.enabled(ctx) {
			return next(fx, in) // nothing records: the call pays for nothing more
		}
		ctx = journal.WithTracer(ai.WithObserver(ctx, obs), t)
		var span trace.Span
		if fx.Request() == nil {
			if run := durable.RunOf(fx); run != nil {
				ctx, span = t.resumeSpan(ctx, def, run)
			}
		}
		fx = fx.WithContext(ctx)
		if span != nil && span.SpanContext().IsValid() {
			fx = fx.WithLogger(logWithTrace(fx.Logger(), span.SpanContext()))
		}
		out, err := next(fx, in)
		parked := errors.Is(err, engine.ErrParked)
		if parked && t.m.parks.Enabled(ctx) {
			t.m.parks.Add(ctx, 1, metric.WithAttributes(flow))
		}
		if span != nil {
			span.SetAttributes(keyParked.Bool(parked))
			if _, code, _ := outcome(err); code != "" {
				span.SetAttributes(keyError.String(code))
			}
			span.End()
		}
		return out, err
	}
}
