package engine_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
)

func mounted(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, name+":"+r.PathValue("id"))
	})
}

// Routes that collide are a configuration mistake New reports, naming the route.
func TestMountedRoutesThatCollideFailNew(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		opts []engine.Option
		want string
	}{
		{"same static route", []engine.Option{engine.Mount("GET", "/x", mounted("a")), engine.Mount("GET", "/x", mounted("b"))},
			"engine: route GET /x: GET /x is already routed"},
		{"same dynamic route", []engine.Option{engine.Mount("GET", "/items/:id", mounted("a")), engine.Mount("GET", "/items/:name", mounted("b"))},
			"engine: route GET /items/:name: GET /items/:name conflicts with an existing route"},
		{"same shape, other names", []engine.Option{engine.Mount("GET", "/items/:id", mounted("a")), engine.Mount("POST", "/items/:name", mounted("b"))},
			"names its parameters differently"},
	} {
		_, err := engine.New(append([]engine.Option{engine.WithLogger(discardLogger())}, tt.opts...)...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// Two methods on one dynamic shape share it; other methods get 405 listing both; a
// literal segment wins over a parameter; a path that is not a route is 404.
func TestMountedDynamicRoutesShareAShape(t *testing.T) {
	t.Parallel()
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.Mount("GET", "/items/:id", mounted("get")),
		engine.Mount("POST", "/items/:id", mounted("post")),
		engine.Mount("GET", "/items/:id/tags", mounted("tags")),
		engine.Mount("GET", "/items/special", mounted("special")),
		engine.Mount("GET", "/items/special/:id", mounted("special-sub")),
		engine.Mount("GET", "/other/:id", mounted("other")),
		engine.Mount("GET", "/:id/x", mounted("any-x")),
		engine.Mount("GET", "/y/:id", mounted("y")))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	do := func(method, path string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header.Get("Allow")
	}
	for _, tt := range []struct {
		method, path string
		status       int
		body, allow  string
	}{
		{"GET", "/items/7", 200, "get:7", ""},
		{"POST", "/items/a%20b", 200, "post:a b", ""},
		{"HEAD", "/items/7", 200, "", ""},
		{"GET", "/items/7/tags", 200, "tags:7", ""},
		{"GET", "/items/special", 200, "special:", ""},
		{"GET", "/items/special/tags", 200, "special-sub:tags", ""},
		{"GET", "/items/other/tags", 200, "tags:other", ""},
		{"GET", "/other/9", 200, "other:9", ""},
		{"GET", "/y/x", 200, "y:x", ""},
		{"GET", "/z/x", 200, "any-x:z", ""},
		{"DELETE", "/items/7", 405, `"MethodNotAllowed"`, "GET, POST"},
		{"GET", "/items/7/other", 404, `"NotFound"`, ""},
		{"GET", "/items", 404, `"NotFound"`, ""},
	} {
		status, body, allow := do(tt.method, tt.path)
		if status != tt.status || !strings.Contains(body, tt.body) || allow != tt.allow {
			t.Errorf("%s %s: %d %q Allow %q, want %d %q Allow %q", tt.method, tt.path, status, body, allow, tt.status, tt.body, tt.allow)
		}
	}
	// A request in absolute form without a path has the empty path: 404 like any other.
	status, reply := rawExchange(t, strings.TrimPrefix(srv.URL, "http://"), "GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", "")
	if !strings.HasPrefix(status, "404") || !strings.Contains(reply, `"NotFound"`) {
		t.Fatalf("empty path: %s %s, want 404 NotFound", status, reply)
	}
}

// A one-segment path ("/7") is matched against one-segment dynamic routes.
func TestAOneSegmentDynamicRoute(t *testing.T) {
	t.Parallel()
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.Mount("GET", "/:id", mounted("root")))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	res, err := http.Get(srv.URL + "/7")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(b) != "root:7" {
		t.Fatalf("GET /7: %d %s", res.StatusCode, b)
	}
}
