package bench_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
)

// The stop benchmark's app: a durable agent chat and a plain RPC flow.
var (
	stopUnit = engine.NewUnit("stopbench")
	stopChat = engine.DefineStream[stopChatIn, agui.Event, ai.RunResult](stopUnit, "chat", engine.POST("/stopbench/chat"), engine.Public(), engine.Durable())
	stopPing = engine.Define[struct{}, string](stopUnit, "ping", engine.Public())
)

type stopChatIn struct {
	Message string `json:"message"`
}

// BenchmarkStopLatency measures a stop across instances on Postgres: a run streams on
// instance A (the fake model sends a word every 5 ms), the stop request goes to instance
// B, and the clock stops when the fake model sees A's request aborted. It is timed
// against one plain flow call to B, alternating in batches of 10 within the same run.
// stop-p50-ms, stop-p99-ms, plain-p50-ms, plain-p99-ms and x-p50, x-p99 (the ratios)
// are over 200 stops and 200 plain calls per iteration: run it with -benchtime=1x.
func BenchmarkStopLatency(b *testing.B) {
	dsn := testenv.PostgresDSN(b, "the stop latency benchmark")
	prefix := "stopb_" + testenv.RandomHex(5) + "_"
	words := strings.Repeat("word ", 2000)
	model := openaitest.NewServerFunc(func(openaitest.Request) openaitest.Turn {
		return openaitest.Turn{Text: words, Delay: 5 * time.Millisecond}
	})
	b.Cleanup(model.Close)
	a := stopApp(b, dsn, prefix, true, model)
	bb := stopApp(b, dsn, prefix, false, model)
	client := &http.Client{}
	ctx := context.Background()
	for range b.N {
		var stops, plains []time.Duration
		for len(stops) < 200 {
			for range 10 {
				stops = append(stops, oneStop(b, ctx, client, a, bb, model))
			}
			for range 10 {
				t0 := time.Now()
				res, err := client.Post(bb+"/_engine/stopbench/ping", "application/json", strings.NewReader(`{}`))
				if err != nil || res.StatusCode != http.StatusOK {
					b.Fatalf("ping: %v %v", err, res)
				}
				_ = res.Body.Close()
				plains = append(plains, time.Since(t0))
			}
		}
		sp50, sp99 := percentiles(stops)
		pp50, pp99 := percentiles(plains)
		b.ReportMetric(ms(sp50), "stop-p50-ms")
		b.ReportMetric(ms(sp99), "stop-p99-ms")
		b.ReportMetric(ms(pp50), "plain-p50-ms")
		b.ReportMetric(ms(pp99), "plain-p99-ms")
		b.ReportMetric(float64(sp50)/float64(pp50), "x-p50")
		b.ReportMetric(float64(sp99)/float64(pp99), "x-p99")
		b.Logf("stops: min %v median %v max %v; plain calls: min %v median %v max %v",
			slices.Min(stops), sp50, slices.Max(stops), slices.Min(plains), pp50, slices.Max(plains))
	}
}

// oneStop starts a run on a, waits for its first word, stops it through b and returns
// the time from sending the stop to the model request's abort.
func oneStop(tb testing.TB, ctx context.Context, client *http.Client, a, b string, model *openaitest.Server) time.Duration {
	res, err := client.Post(a+"/stopbench/chat", "application/json", strings.NewReader(`{"message":"talk"}`))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	var runID string
	var took time.Duration
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			tb.Fatal(err)
		}
		if s, ok := f.Event.(agui.RunStarted); ok {
			runID = s.RunID
		}
		if _, ok := f.Event.(agui.TextMessageContent); ok && took == 0 {
			t0 := time.Now()
			sres, err := client.Post(b+"/agent/runs/"+runID+"/stop", "application/json", strings.NewReader(`{}`))
			if err != nil || sres.StatusCode != http.StatusOK {
				tb.Fatalf("stop: %v %v", err, sres)
			}
			_ = sres.Body.Close()
			select {
			case <-model.Disconnected():
				took = time.Since(t0)
			case <-time.After(10 * time.Second):
				tb.Fatal("the model request was not aborted")
			}
		}
	}
	if took == 0 {
		tb.Fatal("the run ended before it was stopped")
	}
	return took
}

// stopApp serves the benchmark's app on the Postgres tables of prefix.
func stopApp(tb testing.TB, dsn, prefix string, owner bool, model *openaitest.Server) string {
	d, _ := testenv.PostgresJournal(tb, dsn, prefix, owner)
	j, err := journal.New(d, journal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	prov, err := openai.New(openai.Options{BaseURL: model.URL()})
	if err != nil {
		tb.Fatal(err)
	}
	talker := ai.Agent("talker", ai.Model("m", prov, "m-1"), ai.ToolNames(), 0)
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)), durable.With(j), ai.Install(ai.Options{}),
		engine.BindStream(stopChat, func(fx *engine.Fx, in stopChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, talker, in.Message, out, ai.RunOptions{})
		}),
		engine.Bind(stopPing, func(*engine.Fx, struct{}) (string, error) { return "pong", nil }))
	if err != nil {
		tb.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	tb.Cleanup(func() {
		srv.Close()
		_ = app.Close(context.Background())
	})
	return srv.URL
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
