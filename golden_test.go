package engine_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbc28f59/engine/clientx"
)

// update rewrites the golden files: go test -run TestGolden -update .
var update = flag.Bool("update", false, "rewrite testdata/golden files")

// TestGoldenWire pins the wire form of replies and of the descriptor.
func TestGoldenWire(t *testing.T) {
	t.Parallel()
	env := setup(t)
	tr := clientx.NewTransport()
	cases := []struct {
		file, method, path, body string
		status                   int
	}{
		{"envelope_success.json", "POST", "/_engine/math/divide", `{"a":1,"b":4}`, 200},
		{"envelope_declared_error.json", "POST", "/_engine/math/divide", `{"a":1,"b":0}`, 400},
		{"envelope_validation_error.json", "POST", "/_engine/math/add", `{"a":"x","b":[]}`, 400},
		{"envelope_meta.json", "GET", "/items?limit=2", "", 200},
		{"descriptor.json", "GET", "/_engine/client.json", "", 200},
	}
	for _, tt := range cases {
		t.Run(tt.file, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			status, _, got, terr := tr.Do(ctxT(t), tt.method, env.url+tt.path, body)
			if terr != nil {
				t.Fatal(terr)
			}
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, got)
			}
			if !json.Valid(got) {
				t.Fatalf("reply is not JSON: %s", got)
			}
			path := filepath.Join("testdata", "golden", tt.file)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the golden file (run with -update if the change is intended)\ngot:\n%s\nwant:\n%s", tt.file, got, want)
			}
		})
	}
}
