package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/traceparent"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/telemetry"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recorder is a tracer provider writing to memory and a manual metric reader.
type recorder struct {
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = r.mp.Shutdown(context.Background())
	})
	return r
}

func (r *recorder) options(capture bool) telemetry.Options {
	return telemetry.Options{TracerProvider: r.tp, MeterProvider: r.mp, CaptureContent: capture}
}

// named returns the ended spans called name.
func (r *recorder) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range r.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the one ended span called name.
func (r *recorder) one(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	got := r.named(name)
	if len(got) != 1 {
		var names []string
		for _, s := range r.spans.GetSpans() {
			names = append(names, s.Name)
		}
		t.Fatalf("spans named %q: %d, want 1 (all: %v)", name, len(got), names)
	}
	return got[0]
}

// metric returns the data of the instrument called name.
func (r *recorder) metric(t *testing.T, name string) metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func attrOf(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := attrOf(s, key)
	if !ok {
		t.Fatalf("span %s: no attribute %s (has %v)", s.Name, key, s.Attributes)
	}
	if got := v.AsInterface(); got != want {
		t.Fatalf("span %s: %s = %v (%T), want %v (%T)", s.Name, key, got, got, want, want)
	}
}

type (
	addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	addOut struct {
		Sum int `json:"sum"`
	}
	priceIn struct {
		SKU string `json:"sku"`
	}
)

var (
	mathUnit = engine.NewUnit("math")
	add      = engine.Define[addIn, addOut](mathUnit, "add", engine.Public())
	price    = engine.Define[priceIn, addOut](mathUnit, "price", engine.GET("/price/:sku"), engine.Public())
	secret   = engine.Define[addIn, addOut](mathUnit, "secret", engine.Public())
)

// syncBuffer is a log destination handlers may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestServerSpans(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	logs := &syncBuffer{}
	app, err := engine.New(telemetry.New(rec.options(false)),
		engine.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
		engine.Bind(add, func(fx *engine.Fx, in addIn) (addOut, error) {
			fx.Logger().Info("adding", "a", in.A)
			return addOut{Sum: in.A + in.B}, nil
		}),
		engine.Bind(price, func(fx *engine.Fx, in priceIn) (addOut, error) { return addOut{Sum: len(in.SKU)}, nil }),
		engine.Bind(secret, func(fx *engine.Fx, in addIn) (addOut, error) { return addOut{}, nil },
			gate.Policy(func(fx *engine.Fx, in addIn) error { return gate.Deny("never") })),
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	c, err := clientx.ForApp(app, srv.URL, clientx.WithHeaderFunc(traceparent.Headers(nil)))
	if err != nil {
		t.Fatal(err)
	}

	// The Go client, given traceparent.Headers, sends the caller's span: the server span is its child.
	ctx, parent := rec.tp.Tracer("test").Start(t.Context(), "caller")
	if res := clientx.Call(ctx, c, add, addIn{A: 2, B: 3}); res.Error != nil || res.Data.Sum != 5 {
		t.Fatalf("add: %+v", res)
	}
	parent.End()
	s := rec.one(t, "POST /_engine/math/add")
	if s.SpanKind != trace.SpanKindServer {
		t.Fatalf("kind %v", s.SpanKind)
	}
	if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
		t.Fatalf("server span %v is not the child of the caller's %v", s.Parent, parent.SpanContext())
	}
	wantAttr(t, s, "engine.flow", "math.add")
	wantAttr(t, s, "http.route", "/_engine/math/add")
	wantAttr(t, s, "http.request.method", "POST")
	wantAttr(t, s, "http.response.status_code", int64(200))
	if _, ok := attrOf(s, "error.type"); ok {
		t.Fatal("error.type on a success")
	}
	// The handler's log record carries the span's ids.
	var line struct {
		Msg     string `json:"msg"`
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	}
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, `"adding"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line.TraceID != s.SpanContext.TraceID().String() || line.SpanID != s.SpanContext.SpanID().String() {
		t.Fatalf("log record %+v, want the ids of span %v", line, s.SpanContext)
	}

	// A route template, and a W3C traceparent sent by hand.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/price/tea", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	s = rec.one(t, "GET /price/:sku")
	if got := s.SpanContext.TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("trace id %s: the incoming traceparent was not continued", got)
	}
	if got := s.Parent.SpanID().String(); got != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
		t.Fatalf("parent %v, want the remote 00f067aa0ba902b7", s.Parent)
	}
	wantAttr(t, s, "engine.flow", "math.price")
	wantAttr(t, s, "http.route", "/price/:sku")

	// A gate's denial: the envelope code and the gate.
	if res := clientx.Call(t.Context(), c, secret, addIn{}); res.Status != http.StatusForbidden {
		t.Fatalf("secret: %+v", res)
	}
	s = rec.one(t, "POST /_engine/math/secret")
	wantAttr(t, s, "error.type", "Forbidden")
	wantAttr(t, s, "engine.gate", gate.GatePolicy)
	wantAttr(t, s, "http.response.status_code", int64(403))

	// The request-duration histogram has the three calls, one per route and status.
	h, ok := rec.metric(t, "http.server.request.duration").(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("http.server.request.duration is not a float histogram")
	}
	counts := map[string]uint64{}
	for _, dp := range h.DataPoints {
		route, _ := dp.Attributes.Value("http.route")
		status, _ := dp.Attributes.Value("http.response.status_code")
		counts[route.AsString()+" "+status.String()] += dp.Count
	}
	want := map[string]uint64{"/_engine/math/add 200": 1, "/price/:sku 200": 1, "/_engine/math/secret 403": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Fatalf("request durations %v, want %v", counts, want)
		}
	}
}

// A call without a span in its context sends no traceparent, and the server starts a
// trace of its own.
func TestServerSpanWithoutCaller(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	var got string
	app, err := engine.New(telemetry.New(rec.options(false)),
		engine.Bind(add, func(fx *engine.Fx, in addIn) (addOut, error) {
			got = fx.Header("traceparent")
			return addOut{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientx.ForApp(app, "http://app", clientx.WithDoer(clientx.InProcess(app.Handler())),
		clientx.WithHeaderFunc(traceparent.Headers(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if res := clientx.Call(context.Background(), c, add, addIn{}); res.Error != nil {
		t.Fatal(res.Error)
	}
	if got != "" {
		t.Fatalf("traceparent %q sent without a span", got)
	}
	s := rec.one(t, "POST /_engine/math/add")
	if s.Parent.IsValid() {
		t.Fatalf("parent %v, want a root span", s.Parent)
	}
}

var limited = engine.Define[addIn, addOut](mathUnit, "limited", engine.Public())

// Rate-limit denials are counted, and a denial's span carries RateLimited.
func TestRateLimitDenialsCounted(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	limiter, err := gate.NewMemoryLimiter(gate.Limit{Events: 2, Per: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	app, err := engine.New(telemetry.New(rec.options(false)),
		engine.Bind(limited, func(*engine.Fx, addIn) (addOut, error) { return addOut{}, nil },
			gate.RateLimit(limiter, gate.ByClientIP(gate.RemoteAddr))))
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientx.ForApp(app, "http://app", clientx.WithDoer(clientx.InProcess(app.Handler())))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		clientx.Call(t.Context(), c, limited, addIn{})
	}
	sum := rec.metric(t, "engine.rate_limit.denials").(metricdata.Sum[int64])
	if len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 3 {
		t.Fatalf("denials %+v, want 3", sum.DataPoints)
	}
	denied := 0
	for _, s := range rec.named("POST /_engine/math/limited") {
		if v, ok := attrOf(s, "error.type"); ok && v.AsString() == engine.CodeRateLimited {
			denied++
		}
	}
	if denied != 3 {
		t.Fatalf("%d spans say RateLimited, want 3", denied)
	}
}

// A malformed traceparent is ignored: the call is answered and its span starts a trace.
func TestMalformedTraceparentIgnored(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	app, err := engine.New(telemetry.New(rec.options(false)),
		engine.Bind(add, func(fx *engine.Fx, in addIn) (addOut, error) { return addOut{Sum: in.A + in.B}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	for _, tp := range []string{"garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-zz-01", strings.Repeat("0", 4096)} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/_engine/math/add", strings.NewReader(`{"a":1,"b":2}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", tp)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("traceparent %.20q: status %d", tp, resp.StatusCode)
		}
	}
	for _, s := range rec.named("POST /_engine/math/add") {
		if s.Parent.IsValid() {
			t.Fatalf("a malformed traceparent became parent %v", s.Parent)
		}
	}
	if n := len(rec.named("POST /_engine/math/add")); n != 4 {
		t.Fatalf("%d spans, want 4", n)
	}
}
