package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// The list flow over the real HTTP surface: its limits, its cursors and hostile queries.

func TestHostileListQueries(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		c := h.as(t, "alice", "t1", "notes:read", "notes:write")
		for i := range 3 {
			if r := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": fmt.Sprint("t", i), "body": "b", "pinned": i == 2}); r.Error != nil {
				t.Fatal(r.Error)
			}
		}
		before := h.count(t)
		tok := h.token(t, "t1")
		for _, tc := range []struct {
			name, query string
			status      int
			rows        int    // on a 200
			more        bool   // a 200 with a next cursor
			issues      string // the paths of a 400's issues
		}{
			{"limit of one", "limit=1", 200, 1, true, ""},
			{"limit of two", "limit=2", 200, 2, true, ""},
			{"limit of the rows", "limit=3", 200, 3, false, ""},
			{"limit at max", "limit=100", 200, 3, false, ""},
			{"limit over max", "limit=101", 400, 0, false, "limit"},
			{"huge limit", "limit=99999999999999999999", 400, 0, false, "limit"},
			{"negative limit", "limit=-1", 400, 0, false, "limit"},
			{"zero limit", "limit=0", 400, 0, false, "limit"},
			{"float limit", "limit=2.5", 400, 0, false, "limit"},
			{"empty limit", "limit=", 400, 0, false, "limit"},
			{"sql in limit", "limit=" + url.QueryEscape("1; DROP TABLE store_test_notes"), 400, 0, false, "limit"},
			{"garbage cursor", "cursor=%25%25%25", 400, 0, false, "cursor"},
			{"sql cursor", "cursor=" + url.QueryEscape("' OR 1=1 --"), 400, 0, false, "cursor"},
			{"base64 junk cursor", "cursor=" + "djEuMS4y", 400, 0, false, "cursor"},
			{"empty cursor is no cursor", "cursor=", 200, 3, false, ""},
			{"quote in filter", "title=" + url.QueryEscape("' OR '1'='1"), 200, 0, false, ""},
			{"sql in filter", "title=" + url.QueryEscape("t0'; DELETE FROM store_test_notes; --"), 200, 0, false, ""},
			{"bad boolean", "pinned=" + url.QueryEscape("1 OR 1=1"), 400, 0, false, "pinned"},
			{"two limits", "limit=1&limit=2", 400, 0, false, "limit"},
			{"undeclared field ignored", "body=b&tenant=t2", 200, 3, false, ""},
			{"plain filter", "title=t1", 200, 1, false, ""},
			{"boolean filter", "pinned=true", 200, 1, false, ""},
			{"two filters", "pinned=true&title=t1", 200, 0, false, ""},
		} {
			status, env := h.rawGet(t, "/notes?"+tc.query, tok)
			if status != tc.status {
				t.Errorf("%s: status %d, want %d: %v", tc.name, status, tc.status, env)
				continue
			}
			if status == 400 {
				if got := issuePaths(t, envError(t, env)); got != tc.issues {
					t.Errorf("%s: issues at %q, want at %q: %v", tc.name, got, tc.issues, env)
				}
			} else {
				rows, _ := env["data"].([]any)
				meta, _ := env["meta"].(map[string]any)
				if next, _ := meta["nextCursor"].(string); len(rows) != tc.rows || (next != "") != tc.more {
					t.Errorf("%s: %d rows and next cursor %q; want %d rows, a next cursor %v", tc.name, len(rows), next, tc.rows, tc.more)
				}
			}
			if n := h.count(t); n != before {
				t.Fatalf("%s: row count %d, want %d", tc.name, n, before)
			}
		}
		// Over RPC, undeclared list fields are refused rather than ignored.
		rpc, err := clientx.New(h.srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
		if err != nil {
			t.Fatal(err)
		}
		if r := rpc.Call(ctx, "notes.list", map[string]any{"tenant": "t2"}); errCode(r.Error) != engine.CodeValidation {
			t.Errorf("RPC list with tenant filter: %+v", r.Error)
		}
		if r := rpc.Call(ctx, "notes.list", map[string]any{"limit": 1e300}); errCode(r.Error) != engine.CodeValidation {
			t.Errorf("RPC list with a huge limit: %+v", r.Error)
		}
	})
}

// TestForgedCursors alters a real cursor as a caller might. Whatever the change, the
// answer is a ValidationError about the cursor: never a page, never a 500, including on
// a uuid column, which refuses ids in forms the UUID parser also takes.
func TestForgedCursors(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		c := h.as(t, "alice", "t1", "notes:read", "notes:write")
		for i := range 3 {
			if r := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": fmt.Sprint("t", i), "body": "b"}); r.Error != nil {
				t.Fatal(r.Error)
			}
			if r := clientx.Call(ctx, c, Labels.Create, store.Fields{"name": fmt.Sprint("l", i)}); r.Error != nil {
				t.Fatal(r.Error)
			}
		}
		tok := h.token(t, "t1")
		for _, path := range []string{"/notes", "/labels"} {
			status, env := h.rawGet(t, path+"?limit=1", tok)
			meta, _ := env["meta"].(map[string]any)
			issued, _ := meta["nextCursor"].(string)
			raw, err := base64.RawURLEncoding.DecodeString(issued)
			if status != 200 || err != nil {
				t.Fatalf("%s: first page %d %v, cursor %q: %v", path, status, env, issued, err)
			}
			parts := strings.Split(string(raw), ".") // "v1.<last id>.<query digest>"
			if len(parts) != 3 {
				t.Fatalf("%s: cursor %q is not v1.<id>.<digest>", path, raw)
			}
			id, digest := parts[1], parts[2]
			for _, tc := range []struct{ name, cursor string }{
				{"wrong version", "v2." + id + "." + digest},
				{"no version", id + "." + digest},
				{"two parts", "v1." + id},
				{"four parts", "v1." + id + "." + digest + ".x"},
				{"no id", "v1.." + digest},
				{"not a uuid", "v1." + strings.Repeat("z", len(id)) + "." + digest},
				{"urn id", "v1.urn:uuid:" + id + "." + digest},
				{"braced id", "v1.{" + id + "}." + digest},
				{"bare hex id", "v1." + strings.ReplaceAll(id, "-", "") + "." + digest},
				{"other query", "v1." + id + ".000000000000"},
			} {
				q := url.Values{"limit": {"1"}, "cursor": {base64.RawURLEncoding.EncodeToString([]byte(tc.cursor))}}
				status, env := h.rawGet(t, path+"?"+q.Encode(), tok)
				if e := envError(t, env); status != 400 || errCode(e) != engine.CodeValidation {
					t.Errorf("%s, %s: %d %v, want a ValidationError", path, tc.name, status, env)
				} else if got := issuePaths(t, e); got != "cursor" {
					t.Errorf("%s, %s: issues at %q, want at cursor", path, tc.name, got)
				}
			}
			q := url.Values{"limit": {"1"}, "cursor": {issued}}
			if status, env := h.rawGet(t, path+"?"+q.Encode(), tok); status != 200 {
				t.Fatalf("%s: the issued cursor: %d %v", path, status, env)
			}
		}
	})
}

// The published list schema refuses bad limits and cursors before the flow runs, but an
// application may loosen a schema it was given (here: limit, cursor and the pinned
// filter take any JSON): the flow's own checks hold then too, and
// every problem of a query is reported at once, in key order. The calls go over RPC,
// whose JSON can carry a cursor that is not a string.
func TestListChecksBehindALoosenedSchema(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		loose := store.Define[Note](engine.NewUnit("loose"), "/loose")
		s := loose.List.Def().InputSchema()
		for _, name := range []string{"limit", "cursor", "pinned"} {
			s.Properties[name] = &jsonschema.Schema{}
		}
		app, err := engine.New(engine.WithAuthenticator(h.auth), store.Bind(loose, h.db, store.TenantScoped()))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(app.Handler())
		defer srv.Close()
		c := h.as(t, "alice", "t1", "notes:read", "notes:write")
		for i := range 3 {
			if r := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": fmt.Sprint("t", i), "body": "b"}); r.Error != nil {
				t.Fatal(r.Error)
			}
		}
		tok := h.token(t, "t1")
		rpc, err := clientx.New(srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			in     map[string]any
			rows   int
			more   bool
			issues string
		}{
			{"limit of one", map[string]any{"limit": 1}, 1, true, ""},
			{"limit at max", map[string]any{"limit": store.MaxLimit}, 3, false, ""},
			{"limit zero", map[string]any{"limit": 0}, 0, false, "limit"},
			{"limit over max", map[string]any{"limit": store.MaxLimit + 1}, 0, false, "limit"},
			{"negative limit", map[string]any{"limit": -1}, 0, false, "limit"},
			{"fractional limit", map[string]any{"limit": 1.5}, 0, false, "limit"},
			{"limit as a string", map[string]any{"limit": "5"}, 0, false, "limit"},
			{"cursor as a number", map[string]any{"cursor": 5}, 0, false, "cursor"},
			{"filter of the wrong type", map[string]any{"pinned": "yes"}, 0, false, "pinned"},
			{"filter of the right type", map[string]any{"pinned": false, "limit": 2}, 2, true, ""},
			{"everything wrong", map[string]any{"cursor": 5, "limit": 0, "nope": 1, "pinned": "yes"}, 0, false, "cursor,limit,nope,pinned"},
			{"a bad filter after the limit", map[string]any{"limit": 0, "pinned": "yes"}, 0, false, "limit,pinned"},
		} {
			r := rpc.Call(ctx, "loose.list", tc.in)
			if tc.issues != "" {
				if got := issuePaths(t, r.Error); got != tc.issues {
					t.Errorf("%s: issues at %q, want at %q", tc.name, got, tc.issues)
				}
				continue
			}
			var rows []Note
			if r.Error != nil || json.Unmarshal(r.Data, &rows) != nil || len(rows) != tc.rows || (r.Meta.NextCursor != "") != tc.more {
				t.Errorf("%s: %+v; want %d rows, a next cursor %v", tc.name, r, tc.rows, tc.more)
			}
		}
	})
}
