package engine_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// TestMountUnderPrefix serves the app under /api on a user mux behind a user
// middleware, next to a route of the user's own, and calls it with a base URL that
// carries the prefix.
func TestMountUnderPrefix(t *testing.T) {
	t.Parallel()
	app := newApp(t, nil)
	var mu sync.Mutex
	var through []string
	stamp := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			through = append(through, r.Method+" "+r.URL.Path)
			mu.Unlock()
			w.Header().Set("X-Mounted", "yes")
			next.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", stamp(http.StripPrefix("/api", app.Handler())))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	c, err := clientx.ForApp(app, srv.URL+"/api/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if wantOK(t, clientx.Call(ctx, c, contract.Square, contract.SquareIn{N: 3})).Square != 9 {
		t.Fatal("square over REST under the prefix")
	}
	if wantOK(t, clientx.Call(ctx, c, contract.Add, contract.AddIn{A: 1, B: 2})).Sum != 3 {
		t.Fatal("add over RPC under the prefix")
	}
	wantOK(t, clientx.Call(ctx, c, tc.Remove, tc.RemoveIn{ID: 1}))
	want := []string{"GET /api/math/square/3", "POST /api/_engine/math/add", "DELETE /api/items/1"}
	mu.Lock()
	got := strings.Join(through, "|")
	mu.Unlock()
	if got != strings.Join(want, "|") {
		t.Fatalf("middleware saw %v, want %v", through, want)
	}

	status, h, body, terr := c.Transport().Do(ctx, "GET", c.BaseURL()+"/_engine/client.json", nil)
	if terr != nil || status != 200 || h.Get("X-Mounted") != "yes" || !strings.Contains(string(body), `"units"`) {
		t.Fatalf("descriptor under the prefix: %d %v %.80s", status, terr, body)
	}
	status, _, body, _ = c.Transport().Do(ctx, "GET", srv.URL+"/health", nil)
	if status != 200 || string(body) != "ok" {
		t.Fatalf("the user's own route: %d %q", status, body)
	}
	// Outside the prefix the app is not reached: the user's mux answers.
	if status, _, _, _ = c.Transport().Do(ctx, "GET", srv.URL+"/math/square/3", nil); status != http.StatusNotFound {
		t.Fatalf("unprefixed route answered %d", status)
	}
}

// TestInProcessDoer runs the app in memory through clientx.InProcess, with no
// listener: the same results as over the network.
func TestInProcessDoer(t *testing.T) {
	t.Parallel()
	env := &testEnv{rec: &recorder{}}
	env.app = newApp(t, nil)
	c, err := clientx.ForApp(env.app, "http://app.invalid", clientx.WithDoer(clientx.InProcess(env.rec.wrap(env.app.Handler()))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if wantOK(t, clientx.Call(ctx, c, contract.Square, contract.SquareIn{N: 5})).Square != 25 {
		t.Fatal("square in process")
	}
	res := clientx.Call(ctx, c, contract.Divide, contract.DivideIn{A: 2})
	if d, ok := contract.DivideByZero.DataOf(res.Error); !ok || d.Dividend != 2 || res.Status != http.StatusBadRequest {
		t.Fatalf("divide in process: %v %d", res.Error, res.Status)
	}
	if r := clientx.Call(ctx, c, tc.Remove, tc.RemoveIn{ID: 1}); r.Status != http.StatusNoContent || r.Error != nil {
		t.Fatalf("remove in process: %d %v", r.Status, r.Error)
	}
	if r := clientx.Call(ctx, c, tc.Exists, tc.ExistsIn{ID: 1}); r.Status != http.StatusOK || r.Error != nil {
		t.Fatalf("HEAD in process: %d %v", r.Status, r.Error)
	}
	if got := env.rec.all(); len(got) != 4 || got[0].Path != "/math/square/5" || got[1].Path != "/_engine/math/divide" {
		t.Fatalf("requests %+v", got)
	}
}
