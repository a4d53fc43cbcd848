package durable_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// Who may read a run's state: the follow route's rules. Its starter and operators of its
// tenant read it; anyone else gets the 404 of an unknown run; no credentials is 401.
func TestRunStateAccessRules(t *testing.T) {
	t.Parallel()
	d := newDecideSetup(t)
	id := d.park(t)
	for _, c := range []struct {
		name, as string
		status   int
		code     string
	}{
		{"starter", "u1,acme", 200, ""},
		{"operator of the tenant", "op,acme,operator", 200, ""},
		{"other user of the tenant", "u2,acme", 404, engine.CodeNotFound},
		{"same id, other tenant", "u1,globex", 404, engine.CodeNotFound},
		{"operator of another tenant", "op,globex,operator", 404, engine.CodeNotFound},
		{"anonymous", "", 401, engine.CodeUnauthorized},
	} {
		res := clientx.GetRun(t.Context(), d.client(t, c.as), id)
		if res.Status != c.status {
			t.Errorf("%s: HTTP %d (%v), want %d", c.name, res.Status, res.Error, c.status)
			continue
		}
		if c.code != "" {
			if res.Error == nil || res.Error.Code != c.code {
				t.Errorf("%s: error %v, want %s", c.name, res.Error, c.code)
			}
			continue
		}
		if res.Error != nil || res.Data.RunID != id || res.Data.Flow != holdFlow.ID() || res.Data.Status != "parked" || res.Data.Result != nil {
			t.Errorf("%s: state %+v, error %v", c.name, res.Data, res.Error)
		}
	}
	hidden := clientx.GetRun(t.Context(), d.client(t, "u2,acme"), id)
	unknown := clientx.GetRun(t.Context(), d.client(t, "u2,acme"), "no-such-run")
	if hidden.Error == nil || unknown.Error == nil || hidden.Error.Code != unknown.Error.Code || hidden.Status != unknown.Status {
		t.Errorf("a hidden run answers %v, an unknown one %v", hidden.Error, unknown.Error)
	}
}

// A poller sees the run end: its result once completed, its error once failed.
func TestRunStateResultAndError(t *testing.T) {
	t.Parallel()
	d := newDecideSetup(t)
	owner := d.client(t, "u1,acme")

	id := d.park(t)
	if err := d.j.Decide(t.Context(), id, "confirm", journal.Decision{Kind: journal.DecisionApprove, Payload: json.RawMessage(`" with milk"`)}); err != nil {
		t.Fatal(err)
	}
	d.waitRun(t, id)
	res := clientx.GetRun(t.Context(), owner, id)
	var out PlaceOut
	if res.Error != nil || !res.Data.Final() || res.Data.Status != "completed" || json.Unmarshal(res.Data.Result, &out) != nil || out.Item != "tea with milk" {
		t.Fatalf("completed run: %+v (%s), error %v", res.Data, res.Data.Result, res.Error)
	}

	park := clientx.Call(t.Context(), owner, holdFlow, PlaceIn{Item: "refused"})
	if !park.Meta.Parked {
		t.Fatalf("hold did not park: %+v", park)
	}
	if err := d.j.Decide(t.Context(), park.Meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionDeny}); err != nil {
		t.Fatal(err)
	}
	d.waitRun(t, park.Meta.RunID)
	res = clientx.GetRun(t.Context(), owner, park.Meta.RunID)
	if res.Error != nil || res.Status != http.StatusOK || res.Data.Status != "failed" || res.Data.Error == nil || res.Data.Error.Code != engine.CodeForbidden || res.Data.Result != nil {
		t.Fatalf("failed run: %+v, error %v", res.Data, res.Error)
	}
}

var meteredFlow = engine.Define[PlaceIn, PlaceOut](orders, "metered", engine.Durable())

// Polling a run is a read, not a call: the flow's rate limit draws nothing from it, and a
// gate that now refuses the reader answers the 404 of a run it may not read.
func TestPollingARunIsNotACallOfItsFlow(t *testing.T) {
	t.Parallel()
	lim, err := gate.NewMemoryLimiter(gate.Limit{Events: 2, Per: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.Serve(t, durable.With(j), engine.WithAuthenticator(headerAuth{}),
		engine.Bind(meteredFlow, func(fx *engine.Fx, in PlaceIn) (PlaceOut, error) {
			if _, err := durable.Park(fx, "confirm", time.Time{}, in); err != nil {
				return PlaceOut{}, err
			}
			return PlaceOut{Item: in.Item}, nil
		},
			gate.RateLimit(lim, func(*engine.Fx) (string, error) { return "everyone", nil }),
			engine.Use(func(next engine.HandlerFunc) engine.HandlerFunc {
				return func(fx *engine.Fx, in any) (any, error) {
					if fx.Principal().ID == "suspended" {
						return nil, engine.Forbidden("suspended", "this operator is suspended")
					}
					return next(fx, in)
				}
			})))
	d := &decideSetup{srv: srv, j: j}
	starter := d.client(t, "u1,acme")
	first := clientx.Call(t.Context(), starter, meteredFlow, PlaceIn{Item: "tea"})
	if !first.OK() || !first.Meta.Parked {
		t.Fatalf("first call: %+v %v", first.Meta, first.Error)
	}
	for i := range 5 {
		if res := clientx.GetRun(t.Context(), starter, first.Meta.RunID); res.Status != http.StatusOK {
			t.Fatalf("poll %d: HTTP %d %v", i+1, res.Status, res.Error)
		}
	}
	if second := clientx.Call(t.Context(), starter, meteredFlow, PlaceIn{Item: "tea"}); !second.OK() {
		t.Fatalf("the second call after five polls (limit 2 an hour): %d %v", second.Status, second.Error)
	}
	if third := clientx.Call(t.Context(), starter, meteredFlow, PlaceIn{Item: "tea"}); !engine.IsCode(third.Error, engine.CodeRateLimited) {
		t.Fatalf("the third call: %d %v, want RateLimited (the limit still counts calls)", third.Status, third.Error)
	}
	res := clientx.GetRun(t.Context(), d.client(t, "suspended,acme,operator"), first.Meta.RunID)
	if res.Status != http.StatusNotFound || !engine.IsCode(res.Error, engine.CodeNotFound) {
		t.Fatalf("an operator the flow's gate refuses: HTTP %d %v, want 404 NotFound", res.Status, res.Error)
	}
}
