package telemetry_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/clientx/traceparent"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/telemetry"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type (
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
	bankUnit = engine.NewUnit("bank")
	transfer = engine.Define[transferIn, transferOut](bankUnit, "transfer", engine.Public(), engine.Describe("Move money."))
	deskUnit = engine.NewUnit("desk")
	deskChat = engine.DefineStream[chatIn, agui.Event, ai.RunResult](deskUnit, "chat", engine.POST("/desk/chat"), engine.Public(), engine.Durable())
	decide   = engine.Define[decideIn, ai.Decided](deskUnit, "decide", engine.POST("/desk/decide"), engine.Public())
)

// bankApp is one instance of a bank whose teller agent parks a transfer for approval,
// on the journal driver d, reporting to rec.
func bankApp(t *testing.T, rec *recorder, d journal.Driver, owner string, turns ...scripted.Turn) *httptest.Server {
	t.Helper()
	j, err := journal.New(d, journal.Options{Owner: owner, PollInterval: time.Hour, CleanupInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	teller := ai.Agent("teller", ai.Model("default", scripted.New(turns...), "scripted-1"), ai.Tools(transfer), 4)
	return testenv.Serve(t,
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		durable.With(j),
		ai.Install(ai.Options{}),
		telemetry.New(rec.options(false)), // after durable.With: it wraps resumed executions too
		engine.Bind(transfer, func(*engine.Fx, transferIn) (transferOut, error) { return transferOut{OK: true}, nil },
			ai.Approval(func(in transferIn) bool { return in.Amount > 100 })),
		engine.BindStream(deskChat, func(fx *engine.Fx, in chatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, teller, in.Message, out, ai.RunOptions{})
		}),
		engine.Bind(decide, func(fx *engine.Fx, in decideIn) (ai.Decided, error) {
			err := ai.Approve(fx, in.ID, nil)
			return ai.Decided{OK: err == nil}, err
		}),
	)
}

// A durable agent run parks on instance A for the approval of a tool call; the approval
// is decided on instance B (sharing A's Postgres journal), which resumes the run. The
// resumed run's spans are in the decision's trace, under a span linked to the span
// that parked the run, and the decision's span links to it too.
func TestParkOnOneInstanceResumeOnAnother(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t, "the trace of a run parked on one instance and resumed on another")
	prefix := "tel_" + testenv.RandomHex(5) + "_"
	da, _ := testenv.PostgresJournal(t, dsn, prefix, true)
	db, _ := testenv.PostgresJournal(t, dsn, prefix, false)
	recA, recB := newRecorder(t), newRecorder(t)
	turns := []scripted.Turn{
		{ToolCalls: []ai.ToolCall{{ID: "call_pay", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		{Text: "Sent."},
	}
	a := bankApp(t, recA, da, "a", turns...)
	b := bankApp(t, recB, db, "b", turns...)

	// Instance A: the run parks, answered by an interrupt.
	ctx, caller := recA.tp.Tracer("test").Start(t.Context(), "user asks")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/desk/chat", strings.NewReader(`{"message":"send bob 500"}`))
	req.Header.Set("traceparent", "00-"+caller.SpanContext().TraceID().String()+"-"+caller.SpanContext().SpanID().String()+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var interrupt string
	for ev, err := range agent.ReadAgentEventsResponse(resp) {
		if err != nil {
			t.Fatal(err)
		}
		if rf, ok := ev.(agui.RunFinished); ok && rf.Outcome != nil && len(rf.Outcome.Interrupts) == 1 {
			interrupt = rf.Outcome.Interrupts[0].ID
		}
	}
	caller.End()
	if interrupt == "" {
		t.Fatal("the run did not park")
	}
	chatA := recA.one(t, "POST /desk/chat")
	parking := recA.one(t, "invoke_agent teller")
	if chatA.SpanContext.TraceID() != caller.SpanContext().TraceID() || parking.Parent.SpanID() != chatA.SpanContext.SpanID() {
		t.Fatal("instance A's spans are not one trace under the caller's span")
	}
	wantAttr(t, parking, "engine.run.parked", true)

	// Instance B: an approver decides; B resumes the run.
	cb, err := clientx.New(b.URL, clientx.WithRoutes(engine.RoutesOf(deskUnit)), clientx.WithHeaderFunc(traceparent.Headers(nil)))
	if err != nil {
		t.Fatal(err)
	}
	actx, approver := recB.tp.Tracer("test").Start(t.Context(), "approver clicks")
	if res := clientx.Call(actx, cb, decide, decideIn{ID: interrupt}); res.Error != nil {
		t.Fatalf("decide: %v", res.Error)
	}
	approver.End()
	var runB tracetest.SpanStub
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got := recB.named("resume desk.chat"); len(got) == 1 {
			runB = got[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("instance B recorded no resumed run")
		}
		time.Sleep(20 * time.Millisecond)
	}

	decision := recB.one(t, "POST /desk/decide")
	if decision.SpanContext.TraceID() != approver.SpanContext().TraceID() {
		t.Fatal("the decision's span is not in the approver's trace")
	}
	wantLink(t, decision, parking.SpanContext)
	if runB.SpanContext.TraceID() != decision.SpanContext.TraceID() || runB.Parent.SpanID() != decision.SpanContext.SpanID() {
		t.Fatalf("the resumed run's span (parent %v) is not a child of the decision's span %v", runB.Parent, decision.SpanContext)
	}
	wantLink(t, runB, parking.SpanContext)
	if runB.SpanKind != trace.SpanKindConsumer {
		t.Fatalf("resume span kind %v", runB.SpanKind)
	}
	resumed := recB.one(t, "invoke_agent teller")
	wantAttr(t, resumed, "engine.run.resumed", true)
	if resumed.Status.Description != "" {
		t.Fatalf("the resumed run failed: %s", resumed.Status.Description)
	}
	wantAttr(t, resumed, "engine.run.stop_reason", "completed")
	tool := recB.one(t, "execute_tool bank.transfer")
	chatB := recB.one(t, "chat scripted-1")
	for _, s := range []tracetest.SpanStub{resumed, tool, chatB} {
		if s.SpanContext.TraceID() != decision.SpanContext.TraceID() {
			t.Fatalf("%s is not in the decision's trace", s.Name)
		}
	}
	if resumed.Parent.SpanID() != runB.SpanContext.SpanID() || tool.Parent.SpanID() != resumed.SpanContext.SpanID() {
		t.Fatal("the resumed run's spans are not nested under the resume span")
	}
	wantAttr(t, tool, "gen_ai.tool.call.id", "call_pay")

	// Metrics: one park counted on A, one approval decided on B with its wait.
	parks := recA.metric(t, "engine.durable.parks").(metricdata.Sum[int64])
	if len(parks.DataPoints) != 1 || parks.DataPoints[0].Value != 1 {
		t.Fatalf("parks %+v", parks.DataPoints)
	}
	decided := recB.metric(t, "engine.durable.decisions").(metricdata.Sum[int64])
	if len(decided.DataPoints) != 1 || decided.DataPoints[0].Value != 1 {
		t.Fatalf("decisions %+v", decided.DataPoints)
	}
	wait := recB.metric(t, "engine.durable.decision.wait").(metricdata.Histogram[float64])
	if len(wait.DataPoints) != 1 || wait.DataPoints[0].Count != 1 || wait.DataPoints[0].Sum <= 0 {
		t.Fatalf("decision wait %+v", wait.DataPoints)
	}
	// Journal writes: A began the run, wrote a step and parked; B wrote steps and ended it.
	writes := func(rec *recorder) map[string]uint64 {
		h := rec.metric(t, "engine.journal.write.duration").(metricdata.Histogram[float64])
		n := map[string]uint64{}
		for _, dp := range h.DataPoints {
			kind, _ := dp.Attributes.Value("engine.journal.write.kind")
			n[kind.AsString()] += dp.Count
		}
		return n
	}
	if wa, wb := writes(recA), writes(recB); wa["park"] != 1 || wa["step"] == 0 || wb["step"] == 0 || wb["end"] == 0 {
		t.Fatalf("journal writes on A %v, on B %v", wa, wb)
	}
	runs := recB.metric(t, "engine.agent.runs").(metricdata.Sum[int64])
	if b, _ := json.Marshal(runs.DataPoints); !strings.Contains(string(b), "completed") {
		t.Fatalf("runs %s", b)
	}
}

// wantLink fails unless s links to sc.
func wantLink(t *testing.T, s tracetest.SpanStub, sc trace.SpanContext) {
	t.Helper()
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return
		}
	}
	t.Fatalf("span %s has links %+v, none to %v", s.Name, s.Links, sc)
}

var ticker = engine.Define[durable.Tick, transferOut](engine.NewUnit("cron"), "tick", engine.Durable())

// A clock's tick, which no request starts, runs under a "run" span of its own.
func TestClockTickSpan(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	every, err := durable.Every(50 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)), durable.With(j), telemetry.New(rec.options(false)),
		durable.Clock(ticker, every, func(fx *engine.Fx, in durable.Tick) (transferOut, error) {
			_, err := durable.Step(fx, "work", func(context.Context) (int, error) { return 1, nil })
			return transferOut{OK: true}, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.named("run cron.tick")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no span of a tick")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := rec.named("run cron.tick")[0]
	if s.Parent.IsValid() || s.SpanKind != trace.SpanKindConsumer {
		t.Fatalf("tick span parent %v kind %v", s.Parent, s.SpanKind)
	}
	wantAttr(t, s, "engine.flow", "cron.tick")
}

var (
	signalUnit = engine.NewUnit("orders")
	awaitPaid  = engine.Define[decideIn, transferOut](signalUnit, "await", engine.Public(), engine.Durable())
	markPaid   = engine.Define[decideIn, transferOut](signalUnit, "pay", engine.Public())
	paid       = durable.NewSignal[bool]("paid")
)

// A run waiting for a signal resumes in the trace of the request that set it, linked to
// the span that parked it.
func TestSignalResumesInTheSettersTrace(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	j, err := journal.New(memory.New(), journal.Options{PollInterval: time.Hour, CleanupInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	resumed := make(chan struct{}, 1)
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)), durable.With(j), telemetry.New(rec.options(false)),
		engine.Bind(awaitPaid, func(fx *engine.Fx, in decideIn) (transferOut, error) {
			ok, err := paid.Wait(fx, in.ID, time.Time{})
			if err == nil {
				resumed <- struct{}{}
			}
			return transferOut{OK: ok}, err
		}),
		engine.Bind(markPaid, func(fx *engine.Fx, in decideIn) (transferOut, error) {
			return transferOut{OK: true}, paid.Set(fx, in.ID, true)
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	c, err := clientx.ForApp(app, "http://app", clientx.WithDoer(clientx.InProcess(app.Handler())),
		clientx.WithHeaderFunc(traceparent.Headers(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if res := clientx.Call(t.Context(), c, awaitPaid, decideIn{ID: "o1"}); res.Status != http.StatusAccepted {
		t.Fatalf("await: %+v", res)
	}
	ctx, setter := rec.tp.Tracer("test").Start(t.Context(), "payment arrives")
	if res := clientx.Call(ctx, c, markPaid, decideIn{ID: "o1"}); res.Error != nil {
		t.Fatalf("pay: %v", res.Error)
	}
	setter.End()
	select {
	case <-resumed:
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not resumed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rec.named("resume orders.await")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no resume span")
		}
		time.Sleep(10 * time.Millisecond)
	}
	run := rec.one(t, "resume orders.await")
	pay := rec.one(t, "POST /_engine/orders/pay")
	parking := rec.one(t, "POST /_engine/orders/await")
	if run.SpanContext.TraceID() != setter.SpanContext().TraceID() || run.Parent.SpanID() != pay.SpanContext.SpanID() {
		t.Fatalf("the resumed run (parent %v) is not under the setter's span %v", run.Parent, pay.SpanContext)
	}
	wantLink(t, run, parking.SpanContext)
}

// An event log that reaches its row cap is counted: its writer's context carries the
// journal tracer a traced call's context holds.
func TestLogTruncationCounted(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	j, err := journal.New(memory.New(), journal.Options{PollInterval: time.Hour, CleanupInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close(context.Background()) })
	var tracer journal.Tracer
	app, err := engine.New(telemetry.New(rec.options(false)), engine.Bind(add, func(fx *engine.Fx, in addIn) (addOut, error) {
		tracer = journal.TracerOf(fx.Context())
		return addOut{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := clientx.ForApp(app, "http://app", clientx.WithDoer(clientx.InProcess(app.Handler())))
	ctx, span := rec.tp.Tracer("test").Start(t.Context(), "traced")
	clientx.Call(ctx, c, add, addIn{})
	span.End()
	if tracer == nil {
		t.Fatal("a traced call's context carries no journal tracer")
	}
	w, err := j.CreateLog(journal.WithTracer(t.Context(), tracer), journal.Stream{ID: "s1"}, nil,
		journal.LogOptions{MaxRows: 2, Policy: &journal.LogPolicy{Deltas: []journal.DeltaType{{Type: "d", Key: "k", Text: "t"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := w.Write(t.Context(), json.RawMessage(`{"type":"d","k":"`+string(rune('a'+i))+`","t":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	sum := rec.metric(t, "engine.journal.log.truncated").(metricdata.Sum[int64])
	if len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 1 {
		t.Fatalf("truncations %+v, want 1", sum.DataPoints)
	}
}

func TestLogBatchSizesRecorded(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	j, err := journal.New(memory.New(), journal.Options{PollInterval: time.Hour, CleanupInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close(context.Background()) })
	if _, err := engine.New(durable.With(j), telemetry.New(rec.options(false))); err != nil {
		t.Fatal(err)
	}
	var writers []*journal.LogWriter
	for _, id := range []string{"s1", "s2", "s3"} {
		w, err := j.CreateLog(t.Context(), journal.Stream{ID: id}, nil, journal.LogOptions{CommitInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		writers = append(writers, w)
	}
	for _, w := range writers {
		if _, err := w.Write(t.Context(), json.RawMessage(`{"type":"e"}`)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // past the writers' commit interval: their rows go to the batch
	for _, w := range writers {
		if err := w.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	h := rec.metric(t, "engine.journal.log.batch.size").(metricdata.Histogram[int64])
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count == 0 || h.DataPoints[0].Sum < 3 {
		t.Fatalf("batch sizes %+v, want batches holding the three streams' appends", h.DataPoints)
	}
}
