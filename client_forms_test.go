package engine_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
)

// TestClientFromApp is the first form: types and REST routes from the app value; flows
// without a trigger still go to RPC.
func TestClientFromApp(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	ctx := ctxT(t)

	sq := wantOK(t, clientx.Call(ctx, c, contract.Square, contract.SquareIn{N: 7}))
	if sq.Square != 49 || sq.N != 7 {
		t.Fatalf("square = %+v", sq)
	}
	if got := env.rec.last(t); got.Method != http.MethodGet || got.Path != "/math/square/7" {
		t.Fatalf("square went to %s %s, want GET /math/square/7", got.Method, got.Path)
	}

	sum := wantOK(t, clientx.Call(ctx, c, contract.Add, contract.AddIn{A: 2, B: 3.5}))
	if sum.Sum != 5.5 {
		t.Fatalf("sum = %v", sum.Sum)
	}
	if got := env.rec.last(t); got.Method != http.MethodPost || got.Path != "/_engine/math/add" || got.Body != `{"a":2,"b":3.5}` {
		t.Fatalf("add went to %s %s %s, want POST /_engine/math/add with the input", got.Method, got.Path, got.Body)
	}
}

// TestClientByName is the untyped form: "unit.flow" with any input and raw output.
func TestClientByName(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	ctx := ctxT(t)

	r := c.Call(ctx, "math.add", map[string]any{"a": 1, "b": 2})
	var out contract.AddOut
	if err := json.Unmarshal(wantOK(t, r), &out); err != nil || out.Sum != 3 {
		t.Fatalf("math.add = %s (%v)", r.Data, err)
	}
	r = c.Call(ctx, "math.square", json.RawMessage(`{"n":4}`))
	if string(wantOK(t, r)) != `{"n":4,"square":16}` {
		t.Fatalf("math.square = %s", r.Data)
	}
	if got := env.rec.last(t); got.Path != "/math/square/4" {
		t.Fatalf("by-name call of a triggered flow went to %s, want REST", got.Path)
	}
	wantCode(t, c.Call(ctx, "math.nope", nil), engine.CodeNotFound, http.StatusNotFound)
	wantCode(t, c.Call(ctx, "math.add", json.RawMessage(`{"a":`)), engine.CodeValidation, 0)
}

// TestClientIncompletePath checks that naming a unit without a flow is a result error
// and sends nothing.
func TestClientIncompletePath(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	for _, path := range []string{"math", "math."} {
		r := c.Call(ctxT(t), path, map[string]any{"a": 1})
		wantCode(t, r, engine.CodeIncompletePath, 0)
		if msg := dataOf(t, r.Error)["message"]; msg != "Incomplete path: api.math" {
			t.Errorf("%q: message %q", path, msg)
		}
	}
	if n := len(env.rec.all()); n != 0 {
		t.Fatalf("%d requests sent for incomplete paths, want none", n)
	}
}

// TestClientRoutesSwitchTransport checks RPC without routes, REST with the route map,
// and the flat table winning over the map.
func TestClientRoutesSwitchTransport(t *testing.T) {
	t.Parallel()
	env := setup(t)
	ctx := ctxT(t)
	cases := []struct {
		name       string
		opts       []clientx.Option
		wantMethod string
		wantPath   string
	}{
		{"no routes: RPC", nil, http.MethodPost, "/_engine/math/search"},
		{"route map: REST", []clientx.Option{clientx.WithRoutes(env.app.Routes())}, http.MethodGet, "/math/search"},
		{"table wins over map", []clientx.Option{
			clientx.WithRoutes(env.app.Routes()),
			clientx.WithRouteTable(map[string]engine.Route{"math.search": {Method: http.MethodPost, Path: "/_engine/math/search"}}),
		}, http.MethodPost, "/_engine/math/search"},
		{"table alone: REST", []clientx.Option{
			clientx.WithRouteTable(clientx.FlattenRoutes(env.app.Routes())),
		}, http.MethodGet, "/math/search"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := env.rpcClient(t, tt.opts...)
			out := wantOK(t, clientx.Call(ctx, c, contract.Search, contract.SearchIn{Q: "go", Limit: 3}))
			if out.Q != "go" || out.Limit != 3 {
				t.Fatalf("search = %+v", out)
			}
			// The recorder is shared by the subtests, which run one at a time.
			got := env.rec.last(t)
			if got.Method != tt.wantMethod || got.Path != tt.wantPath {
				t.Fatalf("went to %s %s, want %s %s", got.Method, got.Path, tt.wantMethod, tt.wantPath)
			}
		})
	}
}

// TestFlattenRoutes checks the flat table form of the route map.
func TestFlattenRoutes(t *testing.T) {
	t.Parallel()
	flat := clientx.FlattenRoutes(engine.RoutesOf(contractUnits()...))
	if got := flat["math.square"]; got != (engine.Route{Method: http.MethodGet, Path: "/math/square/:n"}) {
		t.Fatalf("math.square = %+v", got)
	}
	if _, ok := flat["math.add"]; ok {
		t.Fatal("math.add has no trigger but is in the table")
	}
	if len(clientx.FlattenRoutes(nil)) != 0 {
		t.Fatal("nil routes flatten to a non-empty table")
	}
}
