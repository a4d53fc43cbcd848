package telemetry_test

import (
	"context"
	"fmt"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/traceparent"
	"github.com/bbc28f59/engine/telemetry"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Example traces an app's flow calls. A real app passes a tracer provider whose
// exporter sends spans to a collector (see docs/telemetry.md); this one keeps them in
// memory to print them.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	type in struct {
		A, B int
	}
	type out struct {
		Sum int `json:"sum"`
	}
	add := engine.Define[in, out](engine.NewUnit("math"), "add", engine.Public())
	app, err := engine.New(
		telemetry.New(telemetry.Options{TracerProvider: tp}),
		engine.Bind(add, func(fx *engine.Fx, in in) (out, error) { return out{Sum: in.A + in.B}, nil }),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := clientx.ForApp(app, "http://app", clientx.WithDoer(clientx.InProcess(app.Handler())),
		clientx.WithHeaderFunc(traceparent.Headers(nil))) // send the caller's traceparent

	// The caller's span: the client sends its traceparent, the server's span continues it.
	ctx, caller := tp.Tracer("example").Start(context.Background(), "caller")
	clientx.Call(ctx, c, add, in{A: 2, B: 3})
	caller.End()

	for _, s := range spans.GetSpans() {
		child := s.Parent.SpanID() == caller.SpanContext().SpanID()
		fmt.Println(s.Name, s.SpanKind, "child of the caller:", child)
		for _, kv := range s.Attributes {
			if kv.Key == "engine.flow" || kv.Key == "http.response.status_code" {
				fmt.Println(" ", kv.Key, kv.Value.String())
			}
		}
	}
	// Output:
	// POST /_engine/math/add server child of the caller: true
	//   engine.flow math.add
	//   http.response.status_code 200
	// caller internal child of the caller: false
}
