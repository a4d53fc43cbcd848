package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

var orders = engine.NewUnit("orders")

type PlaceIn struct {
	Item string `json:"item"`
}

type PlaceOut struct {
	Item    string `json:"item"`
	Charged int64  `json:"charged"`
	Verdict string `json:"verdict"`
}

var (
	placeFlow = engine.Define[PlaceIn, PlaceOut](orders, "place", engine.POST("/orders"), engine.Public(), engine.Durable())
	quickFlow = engine.Define[PlaceIn, PlaceOut](orders, "quick", engine.POST("/orders/quick"), engine.Public())
)

type durableSetup struct {
	srv     *httptest.Server
	j       *journal.Journal
	charges atomic.Int64
	runs    atomic.Int64
	logs    *bytes.Buffer
	stepFor func(n int64) string
	// dropParkErr makes the handler return a value instead of Park's pending error.
	dropParkErr atomic.Bool
	mu          sync.Mutex
}

func newDurable(t *testing.T) *durableSetup {
	t.Helper()
	d := &durableSetup{logs: &bytes.Buffer{}, stepFor: func(int64) string { return "charge" }}
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.j = j
	place := func(fx *engine.Fx, in PlaceIn) (PlaceOut, error) {
		n := d.runs.Add(1)
		charged, err := durable.Step(fx, d.stepFor(n), func(context.Context) (int64, error) {
			return d.charges.Add(1), nil
		})
		if err != nil {
			return PlaceOut{}, err
		}
		dec, err := durable.Park(fx, "confirm", time.Time{}, map[string]string{"item": in.Item})
		if d.dropParkErr.Load() && errors.Is(err, engine.ErrParked) {
			return PlaceOut{Item: in.Item, Charged: charged, Verdict: "none"}, nil // the mistake Park guards against
		}
		if err != nil {
			return PlaceOut{}, err
		}
		return PlaceOut{Item: in.Item, Charged: charged, Verdict: string(dec.Kind)}, nil
	}
	d.srv = testenv.Serve(t,
		engine.WithLogger(slog.New(slog.NewTextHandler(syncWriter{d}, nil))),
		durable.With(j),
		engine.Bind(placeFlow, place),
		engine.Bind(quickFlow, place),
	)
	return d
}

type syncWriter struct{ d *durableSetup }

func (w syncWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	return w.d.logs.Write(p)
}

func (d *durableSetup) post(t *testing.T, path, body string) (int, map[string]json.RawMessage) {
	t.Helper()
	res, err := http.Post(d.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("reply is not an envelope: %s", raw)
	}
	return res.StatusCode, env
}

// waitRun waits until the run reaches a final status.
func (d *durableSetup) waitRun(t *testing.T, id string) journal.RunRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rec, err := d.j.GetRun(context.Background(), id)
		if err == nil && rec.Status.Final() {
			return rec
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("run %s did not finish", id)
	return journal.RunRecord{}
}

func TestDurableFlowParksThenResumesWithoutRepeatingSteps(t *testing.T) {
	t.Parallel()
	d := newDurable(t)
	status, env := d.post(t, "/orders", `{"item":"tea"}`)
	if status != http.StatusAccepted || string(env["data"]) != "null" || string(env["error"]) != "null" {
		t.Fatalf("a parked call answers 202 with no data and no error, got %d %v", status, env)
	}
	meta := parkedMeta(t, env)
	rec, err := d.j.GetRun(context.Background(), meta.RunID)
	if err != nil || rec.Status != journal.StatusParked || rec.Flow != "orders.place" || !strings.Contains(string(rec.Input), "tea") {
		t.Fatalf("the run record: %+v, %v", rec, err)
	}
	if err := d.j.Decide(context.Background(), meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	rec = d.waitRun(t, meta.RunID)
	var out PlaceOut
	if err := json.Unmarshal(rec.Output, &out); err != nil {
		t.Fatalf("output %s: %v", rec.Output, err)
	}
	if rec.Status != journal.StatusCompleted || out.Verdict != "approve" || out.Charged != 1 {
		t.Fatalf("resumed run: status %s output %+v", rec.Status, out)
	}
	if got := d.charges.Load(); got != 1 {
		t.Fatalf("the recorded step ran %d times; a replay must not run it again", got)
	}
	if got := d.runs.Load(); got != 2 {
		t.Fatalf("the handler ran %d times, want 2 (the first execution and the resumption)", got)
	}
	err = d.j.Decide(context.Background(), meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionDeny})
	if !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("a second decision must be a conflict, got %v", err)
	}
	if e := engine.AsError(durable.MapError(err)); e == nil || e.Code != engine.CodeConflict || e.HTTPStatus() != http.StatusConflict {
		t.Fatalf("MapError maps a conflict to Conflict 409, got %v", e)
	}
}

// parkedMeta returns the meta of a parked call's reply: parked, and the run's id.
func parkedMeta(t *testing.T, env map[string]json.RawMessage) (meta struct {
	Parked bool   `json:"parked"`
	RunID  string `json:"runId"`
}) {
	t.Helper()
	if err := json.Unmarshal(env["meta"], &meta); err != nil || !meta.Parked || meta.RunID == "" {
		t.Fatalf("meta must carry parked and the run id: %s", env["meta"])
	}
	return meta
}

func TestAHandlerThatDropsParksPendingErrorStillParks(t *testing.T) {
	t.Parallel()
	d := newDurable(t)
	d.dropParkErr.Store(true)
	status, env := d.post(t, "/orders", `{"item":"tea"}`)
	if status != http.StatusAccepted || string(env["data"]) != "null" {
		t.Fatalf("a run whose park is pending answers 202 whatever its handler returned, got %d %v", status, env)
	}
	meta := parkedMeta(t, env)
	if rec, err := d.j.GetRun(context.Background(), meta.RunID); err != nil || rec.Status != journal.StatusParked {
		t.Fatalf("the run must be parked, not completed with no decision: %+v, %v", rec, err)
	}
	d.mu.Lock()
	logs := d.logs.String()
	d.mu.Unlock()
	if !strings.Contains(logs, "return the error of durable.Park") {
		t.Fatalf("the mistake must be logged: %s", logs)
	}
	if err := d.j.Decide(context.Background(), meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	rec := d.waitRun(t, meta.RunID)
	var out PlaceOut
	if err := json.Unmarshal(rec.Output, &out); err != nil || rec.Status != journal.StatusCompleted || out.Verdict != "approve" {
		t.Fatalf("once decided the run completes with the decision: %s %s %v", rec.Status, rec.Output, err)
	}
}

func TestParkSaysPendingWithAnErrorAndDecidedWithTheDecision(t *testing.T) {
	t.Parallel()
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	flow := engine.Define[struct{}, string](engine.NewUnit("parks"), "wait", engine.Public(), engine.Durable())
	var errs []error
	app, err := engine.New(durable.With(j), engine.Bind(flow, func(fx *engine.Fx, _ struct{}) (string, error) {
		d, err := durable.Park(fx, "k", time.Time{}, nil)
		errs = append(errs, err)
		if err != nil {
			return "", err
		}
		return string(d.Kind), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	if _, err := app.Invoke(t.Context(), flow.ID(), nil, json.RawMessage(`{}`)); err == nil {
		t.Fatal("a parked in-process call returned no error")
	}
	if len(errs) != 1 || !errors.Is(errs[0], engine.ErrParked) || !strings.Contains(errs[0].Error(), `"k"`) {
		t.Fatalf("Park's error while pending: %v, want engine.ErrParked naming the key", errs)
	}
}

func TestNonDurableFlowCannotPark(t *testing.T) {
	t.Parallel()
	d := newDurable(t)
	status, env := d.post(t, "/orders/quick", `{"item":"tea"}`)
	if status != http.StatusInternalServerError || !strings.Contains(string(env["error"]), `"InternalError"`) {
		t.Fatalf("got %d %v", status, env)
	}
	d.mu.Lock()
	logs := d.logs.String()
	d.mu.Unlock()
	if !strings.Contains(logs, "flow orders.quick cannot park: it is not durable") {
		t.Fatalf("the log must name the flow and say why: %s", logs)
	}
}

func TestReplayAskingForAnotherStepFailsLoudly(t *testing.T) {
	t.Parallel()
	d := newDurable(t)
	d.stepFor = func(n int64) string {
		if n == 1 {
			return "charge"
		}
		return "refund" // a code change between executions
	}
	_, env := d.post(t, "/orders", `{"item":"tea"}`)
	meta := parkedMeta(t, env)
	if err := d.j.Decide(context.Background(), meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	rec := d.waitRun(t, meta.RunID)
	if rec.Status != journal.StatusFailed || !strings.Contains(rec.Error, "non-deterministic") ||
		!strings.Contains(rec.Error, `"charge"`) || !strings.Contains(rec.Error, `"refund"`) {
		t.Fatalf("want a failed run naming both steps, got %s: %s", rec.Status, rec.Error)
	}
	if got := d.charges.Load(); got != 1 {
		t.Fatalf("the step ran %d times", got)
	}
}
