package main

import (
	"io"
	"os"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/telemetry"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// tracing prints every span to stdout, as JSON, when ENGINE_TRACE=stdout: a flow call's
// server span, an agent run's invoke_agent, chat and execute_tool spans, and the span
// of a run resumed after its approval, linked to the one that parked it. Without it
// the app reports to the global providers, which do nothing. It is given after
// durable.With, so it also wraps the runs the durable runner resumes.
func tracing() engine.Option {
	return tracingTo(os.Stdout)
}

// tracingTo is [tracing] printing to w.
func tracingTo(w io.Writer) engine.Option {
	if os.Getenv("ENGINE_TRACE") != "stdout" {
		return telemetry.New(telemetry.Options{})
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return engine.InvalidOption(err)
	}
	// A syncer writes each span as it ends: nothing to flush at exit.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return telemetry.New(telemetry.Options{TracerProvider: tp})
}
