package engine_test

// This file is the client side of the contract form: it uses only the declarations-only
// contract packages and clientx, no handler code and not the app value. The server it
// calls is started from the other test files, through baseURL.

import (
	"net/http"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// contractUnits are the units of the contract packages, as a client binary would list
// them to build its route map.
func contractUnits() []*engine.Unit { return []*engine.Unit{contract.Math, tc.Items, tc.Faults} }

// contractClient builds a client from the contracts alone.
func contractClient(baseURL string) (*clientx.Client, error) {
	return clientx.New(baseURL, clientx.WithRoutes(engine.RoutesOf(contractUnits()...)))
}

// TestRoutesCoverTriggeredFlows checks the contracts' route map lists exactly the flows
// with an HTTP trigger, so the contract-form client uses REST where the server does.
func TestRoutesCoverTriggeredFlows(t *testing.T) {
	t.Parallel()
	routes := engine.RoutesOf(contractUnits()...)
	want := 0
	for _, u := range contractUnits() {
		for _, fl := range u.Flows() {
			rt, triggered := fl.Trigger()
			got, listed := routes[fl.Unit()][fl.Name()]
			if triggered != listed {
				t.Errorf("%s: triggered=%v but listed in routes=%v", fl.ID(), triggered, listed)
				continue
			}
			if triggered {
				want++
				if got != rt {
					t.Errorf("%s: route %+v, want %+v", fl.ID(), got, rt)
				}
			}
		}
	}
	n := 0
	for _, flows := range routes {
		n += len(flows)
	}
	if n != want || want == 0 {
		t.Errorf("routes list %d flows, want %d (non-zero)", n, want)
	}
}

func TestClientFromContract(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c, err := contractClient(env.url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	got := wantOK(t, clientx.Call(ctx, c, tc.Get, tc.ItemQuery{ID: 9, Verbose: true}))
	if got.ID != 9 || !got.Verbose {
		t.Fatalf("items.get = %+v", got)
	}
	if r := env.rec.last(t); r.Method != "GET" || r.Path != "/items/9" || r.Query != "verbose=true" {
		t.Fatalf("items.get went to %s %s?%s, want REST", r.Method, r.Path, r.Query)
	}
	q := wantOK(t, clientx.Call(ctx, c, contract.Divide, contract.DivideIn{A: 1, B: 4}))
	if q.Quotient != 0.25 {
		t.Fatalf("divide = %+v", q)
	}
	r := clientx.Call(ctx, c, contract.Divide, contract.DivideIn{A: 5, B: 0})
	d, ok := contract.DivideByZero.DataOf(r.Error)
	if !ok || d.Dividend != 5 || r.Status != http.StatusBadRequest {
		t.Fatalf("divide by zero: %v status %d data %+v", r.Error, r.Status, d)
	}
}
