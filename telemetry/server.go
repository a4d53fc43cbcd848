package telemetry

import (
	"errors"
	"net/http"
	"time"

	"github.com/bbc28f59/engine"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of the HTTP semantic conventions and engine's own.
const (
	keyMethod = attribute.Key("http.request.method")
	keyRoute  = attribute.Key("http.route")
	keyStatus = attribute.Key("http.response.status_code")
	keyPath   = attribute.Key("url.path")
	keyError  = attribute.Key("error.type")
	keyFlow   = attribute.Key("engine.flow")
	keyGate   = attribute.Key("engine.gate")
)

// serverSpan is the outer interceptor: one span per flow call, a server span that
// continues the caller's trace when the call came over HTTP, an internal one for a call
// made by server code (an agent's tool, a step), and the request-duration metric.
func (t *telemetry) serverSpan(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
	flow := keyFlow.String(def.ID())
	streaming := def.Streaming()
	return func(fx *engine.Fx, in any) (any, error) {
		start := time.Now()
		ctx := fx.Context()
		r := fx.Request()
		var name, route string
		kind := trace.SpanKindInternal
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, flow)
		if r != nil {
			ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			route = routeOf(def, r)
			name = r.Method + " " + route
			kind = trace.SpanKindServer
			attrs = append(attrs, keyMethod.String(r.Method), keyRoute.String(route), keyPath.String(r.URL.Path))
		} else {
			name = def.ID()
		}
		ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
		fx = fx.WithContext(ctx)
		if sc := span.SpanContext(); sc.IsValid() {
			fx = fx.WithLogger(logWithTrace(fx.Logger(), sc))
		}
		if streaming && r != nil {
			t.m.openStreams.Add(ctx, 1, metric.WithAttributes(flow))
		}
		out, err := next(fx, in)
		if streaming && r != nil {
			t.m.openStreams.Add(ctx, -1, metric.WithAttributes(flow))
		}
		status, code, gate := outcome(err)
		if span.IsRecording() {
			if r != nil {
				span.SetAttributes(keyStatus.Int(status))
			}
			if code != "" {
				span.SetAttributes(keyError.String(code))
				if status >= 500 {
					span.SetStatus(codes.Error, code)
				}
			}
			if gate != "" {
				span.SetAttributes(keyGate.String(gate))
			}
		}
		span.End()
		if code == engine.CodeRateLimited {
			t.m.rateLimited.Add(ctx, 1, metric.WithAttributes(flow))
		}
		if r != nil {
			mattrs := []attribute.KeyValue{keyMethod.String(r.Method), keyRoute.String(route), keyStatus.Int(status), flow}
			if code != "" {
				mattrs = append(mattrs, keyError.String(code))
			}
			t.m.httpDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(mattrs...))
		}
		return out, err
	}
}

// outcome returns the HTTP status a call's result is answered with, the envelope's
// error code ("" on success) and the gate that denied it ("" for none).
func outcome(err error) (status int, code, gate string) {
	if err == nil {
		return http.StatusOK, "", ""
	}
	if errors.Is(err, engine.ErrParked) {
		return http.StatusAccepted, "", ""
	}
	e := engine.AsError(err)
	if e == nil {
		return http.StatusInternalServerError, engine.CodeInternal, ""
	}
	switch d := e.Data.(type) {
	case engine.ForbiddenData:
		gate = d.Gate
	case *engine.ForbiddenData:
		gate = d.Gate
	}
	return e.HTTPStatus(), e.Code, gate
}

// routeOf returns the route template the request came in by: the flow's trigger, or its
// RPC path.
func routeOf(def *engine.FlowDef, r *http.Request) string {
	rpc := "/_engine/" + def.Unit() + "/" + def.Name()
	if tr, ok := def.Trigger(); ok && r.URL.Path != rpc {
		return tr.Path
	}
	return rpc
}
