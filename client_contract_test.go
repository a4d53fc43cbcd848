package engine_test

// This file is the client side of the contract form: it uses only the declarations-only
// contract package and clientx, no handler code and not the app value. The server it
// calls is started from the other test files, through baseURL.

import (
	"testing"

	"github.com/bbc28f59/engine/clientx"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// contractClient builds a client from the contract alone.
func contractClient(baseURL string) (*clientx.Client, error) {
	return clientx.New(baseURL, clientx.WithRoutes(tc.Routes()))
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
	q := wantOK(t, clientx.Call(ctx, c, tc.Divide, tc.DivideIn{A: 1, B: 4}))
	if q.Quotient != 0.25 {
		t.Fatalf("divide = %+v", q)
	}
	r := clientx.Call(ctx, c, tc.Divide, tc.DivideIn{A: 5, B: 0})
	d, ok := tc.DivideByZero.DataOf(r.Error)
	if !ok || d.Dividend != 5 || r.Status != 422 {
		t.Fatalf("divide by zero: %v status %d data %+v", r.Error, r.Status, d)
	}
}
