// Package traceparent makes the Go client send the W3C trace context of the caller's
// span, so the server's span of each call continues the caller's trace. It is a package
// of its own, opted into, so that a client that does not trace links none of
// OpenTelemetry:
//
//	c, err := clientx.New(url, clientx.WithHeaderFunc(traceparent.Headers(nil)))
package traceparent

import (
	"context"
	"encoding/hex"
	"net/http"

	"go.opentelemetry.io/otel/trace"
)

// Headers returns a header function for clientx.WithHeaderFunc that adds the traceparent
// (and tracestate) of the span in the call's context, none when it holds no valid span,
// to the headers next returns (next may be nil).
func Headers(next func(ctx context.Context) (http.Header, error)) func(ctx context.Context) (http.Header, error) {
	return func(ctx context.Context) (http.Header, error) {
		h := http.Header{}
		if next != nil {
			got, err := next(ctx)
			if err != nil {
				return nil, err
			}
			for k, vs := range got {
				h[http.CanonicalHeaderKey(k)] = vs
			}
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			h.Set("Traceparent", Of(sc))
			if ts := sc.TraceState().String(); ts != "" {
				h.Set("Tracestate", ts)
			}
		}
		return h, nil
	}
}

// Of returns the W3C traceparent header of sc (version 00).
func Of(sc trace.SpanContext) string {
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	if sc.IsSampled() {
		return string(append(b, "-01"...))
	}
	return string(append(b, "-00"...))
}
