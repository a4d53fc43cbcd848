package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_engine/client.json" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"version":1,"rpc":"/_engine/{unit}/{flow}","units":[{"name":"math","flows":[{"name":"add","input":{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]},"output":{"type":"number"},"errors":{}}]}]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"ok", []string{"client", "add", srv.URL, "-o", dir}, 0, ""},
		{"flag first", []string{"client", "add", "-o", dir, srv.URL}, 0, ""},
		{"no url", []string{"client", "add"}, 2, "usage: engine client add"},
		{"unknown command", []string{"server"}, 2, "usage: engine client add"},
		{"not an app", []string{"client", "add", srv.URL + "/nothing/here", "-o", dir}, 1, "answered HTTP 404"},
	}
	for _, c := range cases {
		var out, errb strings.Builder
		if code := run(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.err) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.name, code, errb.String(), c.code, c.err)
		}
	}
	dts, err := os.ReadFile(filepath.Join(dir, "engine-client.d.ts"))
	if err != nil || !strings.Contains(string(dts), "add: { input: MathAddInput; output: MathAddOutput; errors: {}; gated: false };") {
		t.Errorf("declarations: %v\n%s", err, dts)
	}
}
