package durable_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// headerAuth reads "X-As: id,tenant[,operator]".
type headerAuth struct{}

func (headerAuth) Authenticate(r *http.Request) (*engine.Principal, error) {
	v := r.Header.Get("X-As")
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	return &engine.Principal{ID: parts[0], Tenant: parts[1], Operator: len(parts) > 2 && parts[2] == "operator"}, nil
}

var (
	holdFlow = engine.Define[PlaceIn, PlaceOut](orders, "hold", engine.Durable())
	// holdPaid is what a hold of item "wait for payment" waits for, under key "o1".
	holdPaid = durable.NewSignal[string]("hold.paid")
)

type decideSetup struct {
	srv *httptest.Server
	j   *journal.Journal
}

func newDecideSetup(t *testing.T) *decideSetup {
	t.Helper()
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.Serve(t, durable.With(j), durable.Decisions(), engine.WithAuthenticator(headerAuth{}),
		engine.Bind(holdFlow, func(fx *engine.Fx, in PlaceIn) (PlaceOut, error) {
			if in.Item == "wait for payment" {
				by, err := holdPaid.Wait(fx, "o1", time.Time{})
				return PlaceOut{Item: "paid by " + by}, err
			}
			dec, err := durable.Park(fx, "confirm", time.Time{}, in)
			if err != nil {
				return PlaceOut{}, err
			}
			if in.Item == "refused" && dec.Kind == journal.DecisionDeny {
				return PlaceOut{}, engine.Forbidden("stock", "refused")
			}
			var note string
			_ = json.Unmarshal(dec.Payload, &note)
			return PlaceOut{Item: in.Item + note, Verdict: string(dec.Kind)}, nil
		}))
	return &decideSetup{srv: srv, j: j}
}

func (d *decideSetup) client(t *testing.T, as string) *clientx.Client {
	t.Helper()
	h := http.Header{}
	if as != "" {
		h.Set("X-As", as)
	}
	c, err := clientx.New(d.srv.URL, clientx.WithHeaders(h))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// park starts a hold as a user of tenant acme and returns the parked run's id.
func (d *decideSetup) park(t *testing.T) string {
	t.Helper()
	res := clientx.Call(t.Context(), d.client(t, "u1,acme"), holdFlow, PlaceIn{Item: "tea"})
	if !res.OK() || !res.Meta.Parked || res.Meta.RunID == "" {
		t.Fatalf("hold did not park: %+v %v", res.Meta, res.Error)
	}
	return res.Meta.RunID
}

func (d *decideSetup) waitRun(t *testing.T, id string) journal.RunRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if rec, err := d.j.GetRun(t.Context(), id); err == nil && rec.Status.Final() {
			return rec
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("run %s did not finish", id)
	return journal.RunRecord{}
}

// An operator of the run's tenant decides a plain park over HTTP with the typed client;
// the run resumes with the decision and its payload, and a second decision is Conflict.
func TestDecisionsDecideAPlainParkOverHTTP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		decision, note, want string
	}{{"approve", `" with milk"`, "tea with milk"}, {"deny", "", "tea"}} {
		t.Run(c.decision, func(t *testing.T) {
			t.Parallel()
			d := newDecideSetup(t)
			runID := d.park(t)
			ops := d.client(t, "op,acme,operator")
			in := durable.DecideIn{RunID: runID, Key: "confirm", Decision: c.decision}
			if c.note != "" {
				in.Payload = json.RawMessage(c.note)
			}
			if res := clientx.Call(t.Context(), ops, durable.DecideFlow, in); !res.OK() || !res.Data.OK {
				t.Fatalf("decide: %+v %v", res.Data, res.Error)
			}
			rec := d.waitRun(t, runID)
			var out PlaceOut
			if rec.Status != journal.StatusCompleted || json.Unmarshal(rec.Output, &out) != nil || out.Verdict != c.decision || out.Item != c.want {
				t.Fatalf("run after the decision: %s %s", rec.Status, rec.Output)
			}
			res := clientx.Call(t.Context(), ops, durable.DecideFlow, in)
			if !engine.IsCode(res.Error, engine.CodeConflict) || res.Status != http.StatusConflict {
				t.Fatalf("a second decision: %d %v", res.Status, res.Error)
			}
		})
	}
}

// A wait for a signal is not a decision: an operator's approve (which the wait would
// take for the signal's value) is NotFound, and the run goes on waiting for the signal.
func TestDecisionsDoNotDecideAWaitForASignal(t *testing.T) {
	t.Parallel()
	d := newDecideSetup(t)
	res := clientx.Call(t.Context(), d.client(t, "u1,acme"), holdFlow, PlaceIn{Item: "wait for payment"})
	if !res.OK() || !res.Meta.Parked {
		t.Fatalf("hold did not park: %+v %v", res.Meta, res.Error)
	}
	id := res.Meta.RunID
	in := durable.DecideIn{RunID: id, Key: journal.SignalTopic("hold.paid", "o1"), Decision: "approve", Payload: json.RawMessage(`"an operator"`)}
	dec := clientx.Call(t.Context(), d.client(t, "op,acme,operator"), durable.DecideFlow, in)
	if !engine.IsCode(dec.Error, engine.CodeNotFound) || dec.Status != http.StatusNotFound {
		t.Fatalf("deciding a signal's wait: %d %v, want 404 NotFound", dec.Status, dec.Error)
	}
	if rec, err := d.j.GetRun(t.Context(), id); err != nil || rec.Status != journal.StatusParked {
		t.Fatalf("the run after the refused decision: %+v %v, want still parked", rec, err)
	}
	if _, err := d.j.SetSignal(t.Context(), "hold.paid", "o1", json.RawMessage(`"bob"`), true); err != nil {
		t.Fatal(err)
	}
	rec := d.waitRun(t, id)
	if rec.Status != journal.StatusCompleted || string(rec.Output) != `{"item":"paid by bob","charged":0,"verdict":""}` {
		t.Fatalf("run after the signal: %s %s", rec.Status, rec.Output)
	}
}

// Who may not decide, and what they are told.
func TestDecisionsRefuseWhoMayNot(t *testing.T) {
	t.Parallel()
	d := newDecideSetup(t)
	runID := d.park(t)
	in := durable.DecideIn{RunID: runID, Key: "confirm", Decision: "approve"}
	for _, c := range []struct {
		name, as, code string
		status         int
		in             durable.DecideIn
	}{
		{"anonymous", "", engine.CodeUnauthorized, 401, in},
		{"not an operator, even the starter", "u1,acme", engine.CodeForbidden, 403, in},
		{"an operator of another tenant", "op,globex,operator", engine.CodeNotFound, 404, in},
		{"an unknown run", "op,acme,operator", engine.CodeNotFound, 404, durable.DecideIn{RunID: "nope", Key: "confirm", Decision: "approve"}},
		{"another key", "op,acme,operator", engine.CodeNotFound, 404, durable.DecideIn{RunID: runID, Key: "other", Decision: "approve"}},
		{"a decision that is neither", "op,acme,operator", engine.CodeValidation, 400, durable.DecideIn{RunID: runID, Key: "confirm", Decision: "maybe"}},
		{"no key", "op,acme,operator", engine.CodeValidation, 400, durable.DecideIn{RunID: runID, Decision: "approve"}},
	} {
		res := clientx.Call(t.Context(), d.client(t, c.as), durable.DecideFlow, c.in)
		if !engine.IsCode(res.Error, c.code) || res.Status != c.status {
			t.Errorf("%s: %d %v, want %s %d", c.name, res.Status, res.Error, c.code, c.status)
		}
	}
	if rec, err := d.j.GetRun(t.Context(), runID); err != nil || rec.Status != journal.StatusParked {
		t.Fatalf("the refused decisions moved the run: %+v %v", rec, err)
	}
}
