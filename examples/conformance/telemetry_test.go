package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP (protobuf) receiver: it keeps the spans and the metric
// names it is sent.
type otlpReceiver struct {
	mu      sync.Mutex
	spans   []string // "name trace-id engine.flow"
	metrics map[string]bool
	bad     []string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.bad = append(r.bad, req.URL.Path+" "+req.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	switch req.URL.Path {
	case "/v1/traces":
		var m colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			r.bad = append(r.bad, "traces: "+err.Error())
			break
		}
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					flow := ""
					for _, kv := range s.Attributes {
						if kv.Key == "engine.flow" {
							flow = kv.Value.GetStringValue()
						}
					}
					r.spans = append(r.spans, s.Name+" "+hexOf(s.TraceId)+" "+flow)
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	case "/v1/metrics":
		var m collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			r.bad = append(r.bad, "metrics: "+err.Error())
			break
		}
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, mt := range sm.Metrics {
					r.metrics[mt.Name] = true
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collmetrics.ExportMetricsServiceResponse{})
		_, _ = w.Write(b)
	default:
		r.bad = append(r.bad, req.URL.Path)
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// The app exports over real OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set: a flow
// call's server span, continuing the caller's traceparent, and the request-duration
// metric reach the receiver.
func TestTelemetryExportsOverOTLP(t *testing.T) {
	t.Parallel()
	rcv := &otlpReceiver{metrics: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	in := startInstance(t, testenv.Build(t, "."), "otel", []string{"ENGINE_JOURNAL=memory",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_BSP_SCHEDULE_DELAY=200", "OTEL_METRIC_EXPORT_INTERVAL=500"})

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest(http.MethodPost, in.URL+"/_engine/math/add", strings.NewReader(`{"a":2,"b":3}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("math.add: %d", resp.StatusCode)
	}
	want := "POST /_engine/math/add " + traceID + " math.add"
	deadline := time.Now().Add(20 * time.Second)
	for {
		rcv.mu.Lock()
		got := strings.Join(rcv.spans, "\n")
		metric := rcv.metrics["http.server.request.duration"]
		bad := rcv.bad
		rcv.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("the receiver got requests it could not read: %v", bad)
		}
		if strings.Contains(got, want) && metric {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s the receiver has spans %q (want %q) and metric http.server.request.duration %v", got, want, metric)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
