package store_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/store"
)

// exchange sends one request as the bearer of token and returns the status and the body.
func (h *harness) exchange(t testing.TB, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Text that Postgres refuses and bun cannot quote (a NUL byte) or that is not UTF-8, in
// a field, a filter or an id: a ValidationError at the field, or NotFound for an id no
// record can have, on both drivers and on a uuid-typed key, and nothing stored.
func TestTextNoDatabaseKeeps(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		c := h.as(t, "alice", "t1", "notes:read", "notes:write")
		n := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": "fine", "body": "b"})
		if n.Error != nil {
			t.Fatal(n.Error)
		}
		tok := h.token(t, "t1")
		label := clientx.Call(ctx, c, Labels.Create, store.Fields{"name": "red"})
		if label.Error != nil {
			t.Fatal(label.Error)
		}
		id := label.Data.ID
		before := h.count(t)
		for _, tc := range []struct {
			method, path, body string
			status             int
		}{
			{http.MethodPost, "/notes", `{"title":"a\u0000","body":"b"}`, 400},
			{http.MethodPost, "/notes", `{"title":"a","body":"\u0000"}`, 400},
			{http.MethodPatch, "/notes/" + n.Data.ID, `{"body":"b\u0000"}`, 400},
			{http.MethodGet, "/notes?title=a%00", "", 400},
			{http.MethodGet, "/notes/a%00", "", 404},
			{http.MethodGet, "/notes/%FF%FE", "", 404},
			{http.MethodPatch, "/notes/a%00", `{"title":"x"}`, 404},
			{http.MethodDelete, "/notes/a%00", "", 404},
			{http.MethodGet, "/labels/a%00", "", 404},
			{http.MethodGet, "/labels/not-a-uuid", "", 404},
			{http.MethodPatch, "/labels/not-a-uuid", `{"name":"x"}`, 404},
			{http.MethodDelete, "/labels/not-a-uuid", "", 404},
			{http.MethodGet, "/labels/" + strings.Repeat("x", 36), "", 404},
			{http.MethodGet, "/labels/urn:uuid:" + id, "", 404},
			{http.MethodGet, "/labels/%7B" + id + "%7D", "", 404},
			{http.MethodGet, "/labels/" + id, "", 200},
		} {
			if status, body := h.exchange(t, tc.method, tc.path, tok, tc.body); status != tc.status {
				t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, status, body, tc.status)
			}
		}
		if n := h.count(t); n != before {
			t.Fatalf("%d notes, want %d", n, before)
		}
		// Every field at fault is reported, not the first alone.
		status, body := h.exchange(t, http.MethodPost, "/notes", tok, `{"body":"\u0000","title":"a\u0000"}`)
		if status != http.StatusBadRequest || !strings.Contains(body, `"path":"body"`) || !strings.Contains(body, `"path":"title"`) {
			t.Errorf("two fields with a NUL: %d %s", status, body)
		}
	})
}

// FuzzFieldText sends any text as a field, a filter and an id over HTTP, on each driver
// the environment has: a title with a NUL byte is a ValidationError and stores nothing;
// any other is stored and read back as JSON carries it (invalid UTF-8 as U+FFFD); an id
// or a filter never answers a server error.
func FuzzFieldText(f *testing.F) {
	for _, s := range []string{"plain", "", "a\x00", "\x00", "a\xffb", "\xed\xa0\x80", "' OR 1=1 --", "\\u0000", "é\u2028😀", "?:$1"} {
		f.Add(s)
	}
	var hs []*harness
	for _, be := range backends {
		if be.name == "postgres" && os.Getenv(testenv.PostgresEnv) == "" {
			continue // the Postgres harness would skip the whole target
		}
		hs = append(hs, setup(f, be))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, h := range hs {
			tok := h.token(t, "t1")
			title, _ := json.Marshal(s)
			status, body := h.exchange(t, http.MethodPost, "/notes", tok, `{"title":`+string(title)+`,"body":"b"}`)
			var sent string
			_ = json.Unmarshal(title, &sent)
			if strings.ContainsRune(sent, 0) {
				if status != http.StatusBadRequest || !strings.Contains(body, `"path":"title"`) {
					t.Fatalf("title %q: %d %s, want a ValidationError at title", s, status, body)
				}
			} else {
				var env struct {
					Data Note `json:"data"`
				}
				if status != http.StatusOK || json.Unmarshal([]byte(body), &env) != nil {
					t.Fatalf("title %q: %d %s", s, status, body)
				}
				st, got := h.exchange(t, http.MethodGet, "/notes/"+env.Data.ID, tok, "")
				var back struct {
					Data Note `json:"data"`
				}
				if st != http.StatusOK || json.Unmarshal([]byte(got), &back) != nil || back.Data.Title != sent || !utf8.ValidString(back.Data.Title) {
					t.Fatalf("title %q stored as %d %s, want %q", s, st, got, sent)
				}
			}
			for _, path := range []string{"/notes/" + url.PathEscape(s), "/notes?title=" + url.QueryEscape(s), "/labels/" + url.PathEscape(s)} {
				if status, body := h.exchange(t, http.MethodGet, path, tok, ""); status >= 500 {
					t.Fatalf("GET %s: %d %s", path, status, body)
				}
			}
		}
	})
}
