// Package telemetry reports what an engine app does to OpenTelemetry: a server span per
// flow call (the HTTP semantic conventions, with the flow's name and the envelope's error
// code), agent runs as the GenAI conventions' invoke_agent, chat and execute_tool spans,
// a durable run resumed after a decision linked to the request that parked it, and the
// conventions' metrics beside engine's own.
//
// An app adds it with one option:
//
//	app, err := engine.New(telemetry.New(telemetry.Options{}), …)
//
// It uses only the OpenTelemetry API: spans and metrics go to the providers the
// application passes in, or to the global ones (no-ops until the application installs an
// SDK), so a binary pays for an exporter only when it links one.
package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of every span and instrument the package makes.
const scope = "github.com/bbc28f59/engine/telemetry"

// Options configures [New]. The zero value reports to the global providers.
type Options struct {
	// TracerProvider makes the spans; nil takes otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; nil takes otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator reads the caller's trace context from a request's headers; nil takes
	// the W3C Trace Context (traceparent, tracestate).
	Propagator propagation.TextMapPropagator
	// CaptureContent records prompts, completions, tool arguments and tool results in
	// the spans (the GenAI conventions' content capture). Off by default: they may hold
	// personal data. Secrets from the vault are never recorded, whatever this says.
	CaptureContent bool
}

// New returns the option that reports the app's calls, agent runs and durable runs
// through OpenTelemetry. Give it after durable.With: the durable runner re-executes a
// resumed run through the handler interceptors given after its own, so only then are the
// runs it resumes (after a decision, a signal, a crash) and its clocks' ticks reported.
func New(o Options) engine.Option {
	t, err := newTelemetry(o)
	if err != nil {
		return engine.InvalidOption(err)
	}
	return engine.Options(engine.Intercept(t.serverSpan), engine.InterceptHandler(t.handlerScope),
		engine.Validate(t.observeJournal))
}

// observeJournal has the app's journal, when it has one, report its event-log batches.
func (t *telemetry) observeJournal(app *engine.App) error {
	if j := durable.JournalOf(app); j != nil && t.m.logBatch.Enabled(context.Background()) {
		m := t.m.logBatch
		j.ObserveLogBatches(func(appends int, _ time.Duration) { m.Record(context.Background(), int64(appends)) })
	}
	return nil
}

// telemetry is one app's reporter: its tracer, its instruments and its settings.
type telemetry struct {
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	w3c     bool // prop is the W3C Trace Context: no traceparent header, nothing to extract
	capture bool
	m       *instruments
}

func newTelemetry(o Options) (*telemetry, error) {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	prop := o.Propagator
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	m, err := newInstruments(mp.Meter(scope))
	if err != nil {
		return nil, err
	}
	return &telemetry{tracer: tp.Tracer(scope), prop: prop, w3c: o.Propagator == nil, capture: o.CaptureContent, m: m}, nil
}

// logWithTrace returns l annotated with sc's trace and span ids, the attribute names the
// OpenTelemetry log data model uses.
func logWithTrace(l *slog.Logger, sc trace.SpanContext) *slog.Logger {
	return l.With(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
}
