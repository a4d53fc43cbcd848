package durable_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/journal"
)

// TestClientTypesAParkedReply calls a durable flow that parks, over REST and over RPC:
// the 202 reply is a success with no data whose meta says parked and names the run, and
// that run id is the journal's, so deciding the park under it finishes the run.
func TestClientTypesAParkedReply(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts []clientx.Option
	}{
		{"REST", []clientx.Option{clientx.WithRoutes(orders.Routes())}},
		{"RPC", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDurable(t)
			cl, err := clientx.New(d.srv.URL, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			res := clientx.Call(t.Context(), cl, placeFlow, PlaceIn{Item: "tea"})
			if !res.OK() || res.Status != http.StatusAccepted || res.Data != (PlaceOut{}) {
				t.Fatalf("parked call: ok %v, status %d, data %+v, error %v", res.OK(), res.Status, res.Data, res.Error)
			}
			if !res.Meta.Parked || res.Meta.RunID == "" {
				t.Fatalf("meta %+v does not say parked with a run id", res.Meta)
			}
			var raw map[string]any
			if err := json.Unmarshal(res.Meta.Raw, &raw); err != nil || raw["parked"] != true || raw["runId"] != res.Meta.RunID {
				t.Fatalf("raw meta %s (%v)", res.Meta.Raw, err)
			}
			rec, err := d.j.GetRun(t.Context(), res.Meta.RunID)
			if err != nil || rec.Status != journal.StatusParked || rec.Flow != placeFlow.ID() {
				t.Fatalf("the run named by meta.runId: %+v, %v", rec, err)
			}
			if err := d.j.Decide(t.Context(), res.Meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
				t.Fatal(err)
			}
			var out PlaceOut
			if rec := d.waitRun(t, res.Meta.RunID); rec.Status != journal.StatusCompleted || json.Unmarshal(rec.Output, &out) != nil || out.Verdict != "approve" {
				t.Fatalf("decided run: %s, output %s", rec.Status, rec.Output)
			}
		})
	}
}
