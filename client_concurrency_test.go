package engine_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// TestConcurrentCalls shares one client among goroutines mixing REST, RPC, failures and
// 204s; run with -race it checks the client holds no unguarded state.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 15 {
				n := float64(g*100 + i)
				if r := clientx.Call(ctx, c, contract.Square, contract.SquareIn{N: n}); r.Error != nil || r.Data.Square != n*n {
					t.Errorf("square(%v) = %+v, %v", n, r.Data, r.Error)
				}
				if r := clientx.Call(ctx, c, contract.Add, contract.AddIn{A: n, B: 1}); r.Error != nil || r.Data.Sum != n+1 {
					t.Errorf("add(%v) = %+v, %v", n, r.Data, r.Error)
				}
				if r := clientx.Call(ctx, c, contract.Divide, contract.DivideIn{A: n}); r.Error == nil || r.Error.Code != "DivideByZero" {
					t.Errorf("divide(%v, 0) = %v", n, r.Error)
				}
				if r := clientx.Call(ctx, c, tc.Remove, tc.RemoveIn{ID: int64(i + 1)}); r.Status != http.StatusNoContent {
					t.Errorf("remove = %d %v", r.Status, r.Error)
				}
			}
		})
	}
	wg.Wait()
}

// TestDefaultDoerReusesConnections checks the default doer keeps connections alive:
// sequential calls share one connection.
func TestDefaultDoerReusesConnections(t *testing.T) {
	t.Parallel()
	app := newApp(t, nil)
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(app.Handler())
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := clientx.ForApp(app, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		wantOK(t, clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{A: float64(i)}))
		wantCode(t, clientx.Call(ctxT(t), c, contract.Divide, contract.DivideIn{}), "DivideByZero", http.StatusBadRequest)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 40 sequential calls, want 1", n)
	}
}
