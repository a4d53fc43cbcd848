package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/bench/internal/flowbench"
	"github.com/bbc28f59/engine/telemetry"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// sdkTelemetry is the telemetry option with a real SDK: spans through a batch span
// processor to an OTLP/HTTP exporter posting to a local receiver that reads and drops
// them, and metrics into a meter provider whose reader collects nothing until asked.
func sdkTelemetry(tb testing.TB) engine.Option {
	tb.Helper()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	tb.Cleanup(rcv.Close)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(rcv.URL+"/v1/traces"))
	if err != nil {
		tb.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tb.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp})
}

// BenchmarkTelemetryFlows measures flow calls (flowbench's RPC and REST GET, 32 callers, batches
// alternated) on the same app three ways: without telemetry ("plain", the baseline),
// with telemetry.New reporting to the global providers, which are no-ops as no SDK is
// installed ("noop"; target noop-x-plain ≥ 0.97), and with a real SDK exporting every
// span over OTLP/HTTP through a batch processor ("sdk"; reported, no target).
func BenchmarkTelemetryFlows(b *testing.B) {
	plain := flowbench.NewServer(b, nil)
	noop := flowbench.NewServerWith(b, nil, telemetry.New(telemetry.Options{}))
	sdk := flowbench.NewServerWith(b, nil, sdkTelemetry(b))
	for _, c := range flowbench.Shapes[:2] {
		b.Run(c.Name, func(b *testing.B) {
			flowbench.Measure(b, flowbench.Options{},
				flowbench.Subject{Name: "plain", Call: plain.Call(c.Method, c.EnginePath, c.Body, c.Want)},
				flowbench.Subject{Name: "noop", Call: noop.Call(c.Method, c.EnginePath, c.Body, c.Want)},
				flowbench.Subject{Name: "sdk", Call: sdk.Call(c.Method, c.EnginePath, c.Body, c.Want)},
			)
		})
	}
}

var (
	benchChatUnit = engine.NewUnit("benchchat")
	benchChat     = engine.DefineStream[struct {
		Message string `json:"message"`
	}, agui.Event, ai.RunResult](benchChatUnit, "ask", engine.POST("/bench/chat"), engine.Public())
)

// agentServer serves an agent whose scripted model streams deltas words, with opts.
func agentServer(tb testing.TB, deltas int, opts ...engine.Option) *httptest.Server {
	tb.Helper()
	text := strings.TrimSpace(strings.Repeat("word ", deltas))
	model := ai.Model("offline", scripted.New(scripted.Turn{Text: text}), "scripted-1")
	agent := ai.Agent("bench", model, ai.Tools(), 2)
	app, err := engine.New(engine.Options(opts...),
		engine.BindStream(benchChat, func(fx *engine.Fx, in struct {
			Message string `json:"message"`
		}, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, agent, in.Message, out, ai.RunOptions{})
		}),
		ai.Register(agent))
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	tb.Cleanup(srv.Close)
	return srv
}

// streamCall posts one chat to srv and reads its stream to the end.
func streamCall(client *http.Client, url string) func() error {
	return func() error {
		resp, err := client.Post(url+"/bench/chat", "application/json", strings.NewReader(`{"message":"go"}`))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("RUN_FINISHED")) {
			return fmt.Errorf("stream: HTTP %d, %d bytes (%v)", resp.StatusCode, len(b), err)
		}
		return nil
	}
}

// BenchmarkTelemetryStreams measures agent streams (a run of 50 text deltas, no
// journal, 16 callers, batches alternated) on the same app without telemetry ("plain"),
// with telemetry to the global no-op providers ("noop"; target noop-x-plain ≥ 0.97) and
// with a real SDK exporting over OTLP/HTTP ("sdk"; reported).
func BenchmarkTelemetryStreams(b *testing.B) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	plain := agentServer(b, 50)
	noop := agentServer(b, 50, telemetry.New(telemetry.Options{}))
	sdk := agentServer(b, 50, sdkTelemetry(b))
	flowbench.Measure(b, flowbench.Options{Callers: 16, Batch: 256},
		flowbench.Subject{Name: "plain", Call: streamCall(client, plain.URL)},
		flowbench.Subject{Name: "noop", Call: streamCall(client, noop.URL)},
		flowbench.Subject{Name: "sdk", Call: streamCall(client, sdk.URL)},
	)
}
