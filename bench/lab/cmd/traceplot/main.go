// Command traceplot draws the trace of one durable agent run as docs/telemetry.md shows
// it: the run parks on instance A for the approval of a tool call, an approver decides on
// instance B, which resumes the run. Both instances share one journal (in memory, as two
// processes share a database) and report through package telemetry to an in-memory span
// exporter each; the PNG has one bar per span on a common time axis, coloured by
// instance, and the span links drawn between bars.
//
//	go run ./cmd/traceplot -o ../../docs/telemetry-trace.png
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/clientx/traceparent"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/telemetry"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type (
	chatIn struct {
		Message string `json:"message"`
	}
	transferIn struct {
		To     string `json:"to"`
		Amount int    `json:"amount"`
	}
	transferOut struct {
		OK bool `json:"ok"`
	}
	decideIn struct {
		ID string `json:"id"`
	}
)

var (
	bank     = engine.NewUnit("bank")
	transfer = engine.Define[transferIn, transferOut](bank, "transfer", engine.Public(), engine.Describe("Move money."))
	desk     = engine.NewUnit("desk")
	chat     = engine.DefineStream[chatIn, agui.Event, ai.RunResult](desk, "chat", engine.POST("/desk/chat"), engine.Public(), engine.Durable())
	decide   = engine.Define[decideIn, ai.Decided](desk, "decide", engine.POST("/desk/decide"), engine.Public())
)

func main() {
	out := flag.String("o", "telemetry-trace.png", "the PNG to write")
	wait := flag.Duration("wait", 300*time.Millisecond, "how long the approver takes")
	flag.Parse()
	if err := run(*out, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "traceplot:", err)
		os.Exit(1)
	}
}

// instance is one app of the two, with its spans.
type instance struct {
	name  string
	url   string
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
}

func run(out string, wait time.Duration) error {
	ctx := context.Background()
	shared := memory.New()
	turns := []scripted.Turn{
		{ToolCalls: []ai.ToolCall{{ID: "call_pay", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}, Delay: 3 * time.Millisecond},
		{Text: "Sent 500 to bob.", Delay: 3 * time.Millisecond},
	}
	a, err := start(ctx, "A", shared, turns)
	if err != nil {
		return err
	}
	b, err := start(ctx, "B", shared, turns)
	if err != nil {
		return err
	}

	// A user asks instance A; the run parks for the approval.
	uctx, user := a.tp.Tracer("traceplot").Start(ctx, "user asks")
	req, _ := http.NewRequestWithContext(uctx, http.MethodPost, a.url+"/desk/chat", strings.NewReader(`{"message":"send bob 500"}`))
	req.Header.Set("traceparent", "00-"+user.SpanContext().TraceID().String()+"-"+user.SpanContext().SpanID().String()+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	var interrupt string
	for ev, err := range agent.ReadAgentEventsResponse(resp) {
		if err != nil {
			return err
		}
		if rf, ok := ev.(agui.RunFinished); ok && rf.Outcome != nil && len(rf.Outcome.Interrupts) == 1 {
			interrupt = rf.Outcome.Interrupts[0].ID
		}
	}
	user.End()
	if interrupt == "" {
		return errors.New("the run did not park")
	}

	// An approver decides on instance B, which resumes the run.
	time.Sleep(wait)
	c, err := clientx.New(b.url, clientx.WithRoutes(engine.RoutesOf(desk)), clientx.WithHeaderFunc(traceparent.Headers(nil)))
	if err != nil {
		return err
	}
	actx, approver := b.tp.Tracer("traceplot").Start(ctx, "approver clicks")
	if res := clientx.Call(actx, c, decide, decideIn{ID: interrupt}); res.Error != nil {
		return fmt.Errorf("decide: %v", res.Error)
	}
	approver.End()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(b.spans.GetSpans(), func(s tracetest.SpanStub) bool { return strings.HasPrefix(s.Name, "resume ") }) {
		if time.Now().After(deadline) {
			return errors.New("instance B did not resume the run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p := draw1([]*instance{a, b})
	if err := p.Save(11*vg.Inch, 6*vg.Inch, out); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}

// start serves one instance of the bank app on driver d.
func start(ctx context.Context, name string, d journal.Driver, turns []scripted.Turn) (*instance, error) {
	j, err := journal.New(d, journal.Options{Owner: name, PollInterval: time.Hour, CleanupInterval: time.Hour})
	if err != nil {
		return nil, err
	}
	in := &instance{name: name, spans: tracetest.NewInMemoryExporter()}
	in.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(in.spans))
	teller := ai.Agent("teller", ai.Model("default", scripted.New(turns...), "scripted-1"), ai.Tools(transfer), 4)
	app, err := engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		durable.With(j),
		ai.Install(ai.Options{}),
		telemetry.New(telemetry.Options{TracerProvider: in.tp}),
		engine.Bind(transfer, func(*engine.Fx, transferIn) (transferOut, error) {
			time.Sleep(2 * time.Millisecond)
			return transferOut{OK: true}, nil
		}, ai.Approval(func(in transferIn) bool { return in.Amount > 100 })),
		engine.BindStream(chat, func(fx *engine.Fx, in chatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, teller, in.Message, out, ai.RunOptions{})
		}),
		engine.Bind(decide, func(fx *engine.Fx, in decideIn) (ai.Decided, error) {
			err := ai.Approve(fx, in.ID, nil)
			return ai.Decided{OK: err == nil}, err
		}),
	)
	if err != nil {
		return nil, err
	}
	if err := app.Start(ctx); err != nil {
		return nil, err
	}
	in.url = httptest.NewServer(app.Handler()).URL
	return in, nil
}

// row is one span of the drawing.
type row struct {
	inst  string
	s     tracetest.SpanStub
	y     float64
	depth int
}

// draw1 draws the spans of the instances: a bar each, one row each, the links as
// dashed lines from the linked span to the one that links.
func draw1(insts []*instance) *plot.Plot {
	var rows []*row
	for _, in := range insts {
		for _, s := range in.spans.GetSpans() {
			rows = append(rows, &row{inst: in.name, s: s})
		}
	}
	slices.SortStableFunc(rows, func(a, b *row) int {
		return cmp.Or(a.s.StartTime.Compare(b.s.StartTime), strings.Compare(a.s.Name, b.s.Name))
	})
	t0 := rows[0].s.StartTime
	ms := func(t time.Time) float64 { return float64(t.Sub(t0).Microseconds()) / 1000 }
	byID := map[trace.SpanID]*row{}
	for i, r := range rows {
		r.y = float64(len(rows) - i)
		byID[r.s.SpanContext.SpanID()] = r
	}
	for _, r := range rows {
		for p := byID[r.s.Parent.SpanID()]; p != nil; p = byID[p.s.Parent.SpanID()] {
			r.depth++
		}
	}
	colours := map[string]color.Color{"A": color.RGBA{R: 31, G: 119, B: 180, A: 255}, "B": color.RGBA{R: 255, G: 127, B: 14, A: 255}}

	p := plot.New()
	p.Title.Text = "One agent run: parked on instance A, approved and resumed on instance B (two traces, linked)"
	p.X.Label.Text = "ms since the user's request"
	p.Y.Tick.Marker = plot.ConstantTicks(nil)
	var labels plotter.XYLabels
	for _, r := range rows {
		x0, x1 := ms(r.s.StartTime), ms(r.s.EndTime)
		if x1-x0 < 0.3 {
			x1 = x0 + 0.3 // visible however short
		}
		bar, _ := plotter.NewLine(plotter.XYs{{X: x0, Y: r.y}, {X: x1, Y: r.y}})
		bar.Color = colours[r.inst]
		bar.Width = vg.Points(9)
		p.Add(bar)
		trace := r.s.SpanContext.TraceID().String()[:6]
		labels.XYs = append(labels.XYs, plotter.XY{X: x1, Y: r.y})
		labels.Labels = append(labels.Labels, fmt.Sprintf(" %s%s  [%s, trace %s…]", strings.Repeat("· ", r.depth), r.s.Name, r.inst, trace))
		for _, l := range r.s.Links {
			if to := byID[l.SpanContext.SpanID()]; to != nil {
				ln, _ := plotter.NewLine(plotter.XYs{{X: ms(to.s.EndTime), Y: to.y}, {X: ms(r.s.StartTime), Y: r.y}})
				ln.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
				ln.Color = color.Gray{Y: 90}
				p.Add(ln)
			}
		}
	}
	lab, _ := plotter.NewLabels(labels)
	for i := range lab.TextStyle {
		lab.TextStyle[i].YAlign = draw.YCenter
		lab.TextStyle[i].Font.Size = vg.Points(8)
	}
	p.Add(lab)
	p.X.Max = ms(rows[len(rows)-1].s.EndTime) * 1.45 // room for the labels
	p.Y.Min, p.Y.Max = 0, float64(len(rows))+1
	for _, in := range insts {
		l, _ := plotter.NewLine(plotter.XYs{})
		l.Color, l.Width = colours[in.name], vg.Points(6)
		p.Legend.Add("instance "+in.name, l)
	}
	dash, _ := plotter.NewLine(plotter.XYs{})
	dash.Dashes, dash.Color = []vg.Length{vg.Points(3), vg.Points(3)}, color.Gray{Y: 90}
	p.Legend.Add("span link", dash)
	p.Legend.Top, p.Legend.Left = false, true
	return p
}
