package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bbc28f59/engine/internal/testenv"
)

// lockedBuffer is a log sink the app's goroutines write to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTextNoDatabaseTakes sends a NUL byte and invalid UTF-8, which Postgres text refuses
// and SQLite keeps, in every place a caller puts text that reaches the database: a
// store resource's fields, ids and filters, a run id on the run, follow, signal and
// approval routes. Bad input is 400, an id that cannot exist 404, on both drivers, and
// nothing the app logs is an error.
func TestTextNoDatabaseTakes(t *testing.T) {
	drivers := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "app.db") },
		"postgres": func(t *testing.T) string {
			return testenv.Schema(t, testenv.PostgresDSN(t, "the Postgres bad-text test"), "conformance_")
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			var logs lockedBuffer
			e := &env{Journal: drivers[name](t), Password: "correct horse battery staple", Instance: "solo",
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))}
			db, err := openDB(e)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			e.DB = db
			_, srv := serveParts(t, e, "auth", "notes", "journal", "elements")
			bearer := "Bearer " + signIn(t, srv.URL, "alice@example.com")

			status, _, body := exchange(t, http.MethodPost, srv.URL+"/notes", bearer, `{"title":"fine","body":"b"}`)
			var created struct {
				Data struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if status != http.StatusOK || json.Unmarshal([]byte(body), &created) != nil || created.Data.ID == "" {
				t.Fatalf("creating a note: %d %s", status, body)
			}
			note := srv.URL + "/notes/" + created.Data.ID

			for _, c := range []struct {
				method, path, body string
				want               int // 0: any answer but a server error
			}{
				{http.MethodPost, "/notes", `{"title":"a\u0000","body":"b"}`, http.StatusBadRequest},
				{http.MethodPost, "/notes", `{"title":"ok","body":"b\u0000"}`, http.StatusBadRequest},
				{http.MethodPost, "/notes", "{\"title\":\"a\xff\",\"body\":\"b\"}", http.StatusOK}, // the JSON decoder reads invalid UTF-8 as U+FFFD
				{http.MethodPatch, note, `{"title":"a\u0000"}`, http.StatusBadRequest},
				{http.MethodGet, "/notes?title=a%00", "", http.StatusBadRequest},
				{http.MethodGet, "/notes?title=a%FF", "", http.StatusOK}, // read as "a\uFFFD", as the JSON body is
				{http.MethodGet, "/notes/a%00", "", http.StatusNotFound},
				{http.MethodGet, "/notes/a%FF", "", http.StatusNotFound},
				{http.MethodPatch, "/notes/a%00", `{"title":"x"}`, http.StatusNotFound},
				{http.MethodDelete, "/notes/a%00", "", http.StatusNotFound},
				{http.MethodGet, "/_engine/runs/a%00b", "", http.StatusNotFound},
				{http.MethodGet, "/_engine/runs/a%FFb", "", http.StatusNotFound},
				{http.MethodGet, "/agent/runs/a%00b/events", "", http.StatusNotFound},
				{http.MethodGet, "/agent/runs/a%FFb/events", "", http.StatusNotFound},
				{http.MethodPost, "/_engine/orders/pay", `{"runId":"a\u0000b"}`, http.StatusNotFound},
				{http.MethodPost, "/_engine/orders/pay", "{\"runId\":\"a\xffb\"}", http.StatusNotFound},
				{http.MethodPost, "/agent/approvals/approve", `{"id":"a\u0000b"}`, http.StatusNotFound},
				{http.MethodPost, "/agent/runs/a%00b/stop", "", http.StatusNotFound},
				{http.MethodGet, "/agent/threads/a%00b/events", "", http.StatusNotFound},
				{http.MethodGet, "/agent/threads/a%FFb/messages", "", http.StatusNotFound},
				{http.MethodPost, "/agent/approvals/deny", `{"id":"a\u0000b","reason":"no"}`, http.StatusNotFound},
				{http.MethodPost, "/agent/approvals/deny", `{"id":"x","reason":"a\u0000"}`, http.StatusNotFound},
				{http.MethodPost, "/_engine/auth/signInEmail", `{"email":"a\u0000@example.com","password":"x"}`, 0},
				{http.MethodPost, "/_engine/chat/post", `{"room":"r\u0000","text":"a\u0000"}`, 0},
				{http.MethodPost, "/_engine/chat/history", `{"room":"r\u0000"}`, 0},
				{http.MethodPost, "/_engine/orders/place", `{"item":"a\u0000"}`, 0},
			} {
				u := c.path
				if strings.HasPrefix(u, "/") {
					u = srv.URL + u
				}
				status, _, body := exchange(t, c.method, u, bearer, c.body)
				if status != c.want && (c.want != 0 || status >= 500) {
					t.Errorf("%s %s %q: %d %s, want %d", c.method, c.path, c.body, status, body, c.want)
				}
			}
			if status, _, body := exchange(t, http.MethodGet, note, bearer, ""); status != http.StatusOK || !strings.Contains(body, `"title":"fine"`) {
				t.Fatalf("the note after the bad updates: %d %s", status, body)
			}
			if l := logs.String(); l != "" {
				t.Fatalf("the app logged:\n%s", l)
			}
		})
	}
}
