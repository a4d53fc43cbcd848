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

// The start options of the spans of flow calls, made once.
var (
	serverOpts   = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	internalOpts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
)

// serverSpan is the outer interceptor: one span per flow call, a server span that
// continues the caller's trace when the call came over HTTP, an internal one for a call
// made by server code (an agent's tool, a step), and the request-duration metric.
func (t *telemetry) serverSpan(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
	id := def.ID()
	flow := keyFlow.String(id)
	streaming := def.Streaming()
	rpc := "/_engine/" + def.Unit() + "/" + def.Name()
	tr, hasTrigger := def.Trigger()
	rpcName, trName := http.MethodPost+" "+rpc, tr.Method+" "+tr.Path // the usual span names, made once
	return func(fx *engine.Fx, in any) (any, error) {
		start := time.Now()
		ctx := fx.Context()
		r := fx.Request()
		var name, route string
		if r != nil {
			if _, sent := r.Header["Traceparent"]; sent || !t.w3c {
				ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
			}
			method := http.MethodPost
			route, name = rpc, rpcName
			if hasTrigger && r.URL.Path != rpc {
				route, name, method = tr.Path, trName, tr.Method
			}
			if r.Method != method {
				name = r.Method + " " + route // HEAD for a GET trigger
			}
		} else {
			name = id
		}
		opts := internalOpts
		if r != nil {
			opts = serverOpts
		}
		sctx, span := t.tracer.Start(ctx, name, opts...)
		recording := span.IsRecording()
		if recording {
			span.SetAttributes(flow)
			if r != nil {
				span.SetAttributes(keyMethod.String(r.Method), keyRoute.String(route), keyPath.String(r.URL.Path))
			}
		}
		// Nothing to carry when nothing records and no caller's trace came in: the
		// call goes on in its own context, for free.
		if sc := span.SpanContext(); recording || sc.IsValid() {
			fx = fx.WithContext(sctx)
			if sc.IsValid() {
				fx = fx.WithLogger(logWithTrace(fx.Logger(), sc))
			}
		}
		streams := streaming && r != nil && t.m.openStreams.Enabled(ctx)
		if streams {
			t.m.openStreams.Add(ctx, 1, metric.WithAttributes(flow))
		}
		out, err := next(fx, in)
		if streams {
			t.m.openStreams.Add(ctx, -1, metric.WithAttributes(flow))
		}
		status, code, gate := outcome(err)
		if recording {
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
		if code == engine.CodeRateLimited && t.m.rateLimited.Enabled(ctx) {
			t.m.rateLimited.Add(ctx, 1, metric.WithAttributes(flow))
		}
		if r != nil && t.m.httpDuration.Enabled(ctx) {
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
