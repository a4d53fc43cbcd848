package traceparent_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine/clientx/traceparent"
	"go.opentelemetry.io/otel/trace"
)

func TestHeaders(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, _ := trace.ParseTraceState("vendor=x")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)

	h, err := traceparent.Headers(func(context.Context) (http.Header, error) {
		return http.Header{"x-request-id": {"r1"}}, nil
	})(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("Traceparent"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("traceparent %q", got)
	}
	if h.Get("Tracestate") != "vendor=x" || h.Get("X-Request-Id") != "r1" {
		t.Fatalf("headers %v", h)
	}
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
	if got := traceparent.Of(unsampled); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" {
		t.Fatalf("unsampled traceparent %q", got)
	}

	// No span, no header; next's error is the call's.
	h, err = traceparent.Headers(nil)(context.Background())
	if err != nil || len(h) != 0 {
		t.Fatalf("without a span: %v %v", h, err)
	}
	boom := errors.New("boom")
	if _, err := traceparent.Headers(func(context.Context) (http.Header, error) { return nil, boom })(ctx); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}
