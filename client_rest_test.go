package engine_test

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// TestRESTQueryTyping sends one value of each query type through GET and checks both
// the wire (what the server received) and the round trip (what the flow decoded).
func TestRESTQueryTyping(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	note := "a&b c"
	in := tc.ItemQuery{
		ID: 42, Verbose: true, Tags: []string{"red", "big"}, Sizes: []int{1, 2},
		Limit: 10, Ratio: 0.5, Filter: &tc.Filter{Color: "blue", Min: 3}, Note: &note,
	}
	got := wantOK(t, clientx.Call(ctxT(t), c, tc.Get, in))
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip = %+v, want %+v", got, in)
	}
	r := env.rec.last(t)
	if r.Method != http.MethodGet || r.Path != "/items/42" || r.Body != "" {
		t.Fatalf("request %s %s body %q", r.Method, r.Path, r.Body)
	}
	q, err := url.ParseQuery(r.Query)
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{
		"verbose": {"true"}, "tags": {"red", "big"}, "sizes": {"1", "2"}, "limit": {"10"},
		"ratio": {"0.5"}, "filter": {`{"color":"blue","min":3}`}, "note": {"a&b c"},
	}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("query = %v, want %v", q, want)
	}
	if _, ok := q["id"]; ok {
		t.Fatal("the path parameter is repeated in the query")
	}
}

// TestRESTQueryOmitsNullAndFalse checks null members are left out while false and zero
// are sent as values.
func TestRESTQueryOmitsNullAndFalse(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	r := c.Call(ctxT(t), "items.get", map[string]any{"id": 1, "note": nil, "verbose": false, "limit": 0})
	if string(wantOK(t, r)) != `{"id":1}` {
		t.Fatalf("items.get = %s", r.Data)
	}
	q, _ := url.ParseQuery(env.rec.last(t).Query)
	if want := (url.Values{"verbose": {"false"}, "limit": {"0"}}); !reflect.DeepEqual(q, want) {
		t.Fatalf("query = %v, want %v", q, want)
	}
}

// TestRESTPathParams checks typed path values: numbers as their JSON text, strings
// escaped so a slash or space stays inside one segment.
func TestRESTPathParams(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	ctx := ctxT(t)
	cases := []struct {
		name     string
		wantPath string
	}{
		{"plain", "/items/by-name/plain"},
		{"a b/c?d", "/items/by-name/a%20b%2Fc%3Fd"},
		{"ünï", "/items/by-name/%C3%BCn%C3%AF"},
	}
	for _, tt := range cases {
		got := wantOK(t, clientx.Call(ctx, c, tc.ByName, tc.NameIn{Name: tt.name}))
		if got.Name != tt.name {
			t.Errorf("%q came back as %q", tt.name, got.Name)
		}
		if r := env.rec.last(t); r.Path != tt.wantPath {
			t.Errorf("%q went to %s, want %s", tt.name, r.Path, tt.wantPath)
		}
	}
	sq := wantOK(t, clientx.Call(ctx, c, contract.Square, contract.SquareIn{N: 1.5}))
	if sq.Square != 2.25 || env.rec.last(t).Path != "/math/square/1.5" {
		t.Fatalf("square(1.5) = %+v via %s", sq, env.rec.last(t).Path)
	}
}

// TestRESTBodyMethods checks that POST, PATCH, PUT and DELETE carry the fields other
// than path parameters as a JSON body.
func TestRESTBodyMethods(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	ctx := ctxT(t)
	item := tc.Item{ID: 7, Name: "lamp", Tags: []string{"x"}, Price: 9.5, Active: true}
	cases := []struct {
		name       string
		call       func() clientx.Result[tc.Item]
		wantMethod string
		wantPath   string
		wantBody   string
	}{
		{"POST", func() clientx.Result[tc.Item] { return clientx.Call(ctx, c, tc.Create, item) },
			http.MethodPost, "/items", `{"id":7,"name":"lamp","tags":["x"],"price":9.5,"active":true}`},
		{"PATCH", func() clientx.Result[tc.Item] { return clientx.Call(ctx, c, tc.Update, item) },
			http.MethodPatch, "/items/7", `{"active":true,"name":"lamp","price":9.5,"tags":["x"]}`},
		{"PUT", func() clientx.Result[tc.Item] { return clientx.Call(ctx, c, tc.Replace, item) },
			http.MethodPut, "/items/7", `{"active":true,"name":"lamp","price":9.5,"tags":["x"]}`},
	}
	for _, tt := range cases {
		got := wantOK(t, tt.call())
		if !reflect.DeepEqual(got, item) {
			t.Errorf("%s: round trip %+v", tt.name, got)
		}
		r := env.rec.last(t)
		if r.Method != tt.wantMethod || r.Path != tt.wantPath || r.Body != tt.wantBody || r.Query != "" {
			t.Errorf("%s: sent %s %s?%s %s, want %s %s %s", tt.name, r.Method, r.Path, r.Query, r.Body, tt.wantMethod, tt.wantPath, tt.wantBody)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", tt.name, ct)
		}
	}

	// DELETE with a body member besides the path parameter, answered 204.
	res := clientx.Call(ctx, c, tc.Remove, tc.RemoveIn{ID: 7, Reason: "sold"})
	wantOK(t, res)
	if res.Status != http.StatusNoContent || res.Data != (engine.NoContent{}) {
		t.Fatalf("remove: status %d data %+v, want 204 and zero data", res.Status, res.Data)
	}
	if r := env.rec.last(t); r.Method != http.MethodDelete || r.Path != "/items/7" || r.Body != `{"reason":"sold"}` {
		t.Fatalf("remove sent %s %s %s", r.Method, r.Path, r.Body)
	}
	// The same flow failing is a normal envelope, not a 204.
	wantCode(t, clientx.Call(ctx, c, tc.Remove, tc.RemoveIn{ID: 404}), engine.CodeNotFound, http.StatusNotFound)
}

// TestRESTHead checks a HEAD trigger: success has no body to decode, and a failure
// still shows its HTTP status.
func TestRESTHead(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	res := clientx.Call(ctxT(t), c, tc.Exists, tc.ExistsIn{ID: 3})
	wantOK(t, res)
	if res.Status != http.StatusOK {
		t.Fatalf("status %d", res.Status)
	}
	if r := env.rec.last(t); r.Method != http.MethodHead || r.Path != "/items/3/exists" {
		t.Fatalf("sent %s %s", r.Method, r.Path)
	}
	// A HEAD reply has no body, so a failure cannot carry its envelope: the client
	// reports the status as a TransportError.
	res = clientx.Call(ctxT(t), c, tc.Exists, tc.ExistsIn{ID: 404})
	wantCode(t, res, engine.CodeTransportError, http.StatusNotFound)
	if dataOf(t, res.Error)["status"] != float64(404) {
		t.Fatalf("data %s", res.Error.Data)
	}
}

// TestRESTPagination checks meta.nextCursor and the raw meta object.
func TestRESTPagination(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	var ids []int64
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		res := clientx.Call(ctxT(t), c, tc.Page, tc.PageIn{Cursor: cursor})
		for _, it := range wantOK(t, res) {
			ids = append(ids, it.ID)
		}
		if res.Meta.NextCursor == "" {
			if res.Meta.Raw != nil {
				t.Fatalf("last page has meta %s", res.Meta.Raw)
			}
			break
		}
		if string(res.Meta.Raw) != `{"nextCursor":"`+res.Meta.NextCursor+`"}` {
			t.Fatalf("raw meta %s", res.Meta.Raw)
		}
		cursor = res.Meta.NextCursor
	}
	if !reflect.DeepEqual(ids, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("ids = %v", ids)
	}
}

// TestRESTClientSideInputErrors checks inputs that cannot fill a route fail before
// sending.
func TestRESTClientSideInputErrors(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	cases := []struct {
		name string
		in   any
	}{
		{"missing path field", map[string]any{"verbose": true}},
		{"null path field", map[string]any{"id": nil}},
		{"object path field", map[string]any{"id": map[string]any{"x": 1}}},
		{"not an object", []int{1, 2}},
	}
	for _, tt := range cases {
		wantCode(t, c.Call(ctxT(t), "items.get", tt.in), engine.CodeValidation, 0)
	}
	wantCode(t, c.Call(ctxT(t), "items.byName", map[string]any{"name": ""}), engine.CodeValidation, 0)
	if n := len(env.rec.all()); n != 0 {
		t.Fatalf("%d requests sent for inputs that cannot fill the route", n)
	}
}
