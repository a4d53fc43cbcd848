package main

import (
	"context"
	"os"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The telemetry part reports traces and metrics over OTLP/HTTP (protobuf) when
// OTEL_EXPORTER_OTLP_ENDPOINT is set, and nothing otherwise. The exporters and the SDK
// read the other OTEL_* variables themselves (OTEL_BSP_SCHEDULE_DELAY,
// OTEL_METRIC_EXPORT_INTERVAL, OTEL_RESOURCE_ATTRIBUTES...). Its name sorts after
// "journal", so its handler interceptor wraps the runs the durable runner resumes.
func init() {
	register("telemetry", telemetryPart)
}

func telemetryPart(ctx context.Context, e *env) (engine.Option, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return engine.Options(), nil
	}
	name := os.Getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "engine-conformance"
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", name)))
	if err != nil {
		return nil, err
	}
	spans, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	metrics, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	e.closers = append(e.closers, tp.Shutdown, mp.Shutdown)
	return telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp,
		CaptureContent: os.Getenv("ENGINE_TRACE_CONTENT") == "1"}), nil
}
