package engine_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/bbc28f59/engine"
)

type fuzzIn struct {
	ID    int64             `json:"id"`
	Name  string            `json:"name"`
	Tags  []string          `json:"tags,omitempty"`
	Ratio float64           `json:"ratio,omitempty"`
	On    bool              `json:"on,omitempty"`
	Sub   *fuzzSub          `json:"sub,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
}

type fuzzSub struct {
	N []int `json:"n"`
}

var fuzzUnit = engine.NewUnit("fz")

var (
	fuzzGet  = engine.Define[fuzzIn, fuzzIn](fuzzUnit, "get", engine.GET("/fz/:id"), engine.Public())
	fuzzPost = engine.Define[fuzzIn, fuzzIn](fuzzUnit, "post", engine.POST("/fz/:id/items"), engine.Public())
	fuzzAny  = engine.Define[map[string]any, map[string]any](fuzzUnit, "any", engine.PATCH("/fz/any/:key"), engine.Public())
)

func fuzzApp(t testing.TB) http.Handler {
	t.Helper()
	echo := func(_ *engine.Fx, in fuzzIn) (fuzzIn, error) { return in, nil }
	app, err := engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.WithMaxBodyBytes(4096),
		engine.Bind(fuzzGet, echo),
		engine.Bind(fuzzPost, echo),
		engine.Bind(fuzzAny, func(_ *engine.Fx, in map[string]any) (map[string]any, error) { return in, nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	return app.Handler()
}

// checkEnvelope fails unless the reply is a JSON envelope with both members, or an
// empty 204.
func checkEnvelope(t *testing.T, rec *httptest.ResponseRecorder, req string) {
	t.Helper()
	if rec.Code == http.StatusNoContent {
		return
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("%s: reply %d is not JSON: %q", req, rec.Code, rec.Body.String())
	}
	if _, ok := env["data"]; !ok {
		t.Fatalf("%s: reply has no data member: %s", req, rec.Body.String())
	}
	if _, ok := env["error"]; !ok {
		t.Fatalf("%s: reply has no error member: %s", req, rec.Body.String())
	}
	if rec.Code >= 400 && string(env["error"]) == "null" {
		t.Fatalf("%s: status %d with a null error", req, rec.Code)
	}
	if rec.Code >= 500 {
		t.Fatalf("%s: decoding bad input must never be a server error: %s", req, rec.Body.String())
	}
}

// FuzzRPCDecode posts arbitrary bodies to an RPC flow.
func FuzzRPCDecode(f *testing.F) {
	for _, s := range []string{`{"id":1,"name":"a"}`, `{"id":"x"}`, `{`, `null`, `[]`, `{"sub":{"n":[1,"2"]}}`,
		`{"id":1e400}`, `{"id":1,"name":"a"} trailing`, "\x00", `{"tags":[null]}`, ``} {
		f.Add([]byte(s))
	}
	h := fuzzApp(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range []string{"/_engine/fz/get", "/_engine/fz/any"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			checkEnvelope(t, rec, path)
		}
	})
}

// FuzzRESTDecode sends arbitrary path parameters, query strings and bodies over REST.
func FuzzRESTDecode(f *testing.F) {
	f.Add("1", "name=a&tags=x&tags=y&on=true&ratio=0.5", []byte(`{"name":"b"}`))
	f.Add("abc", "id=2&on=maybe", []byte(`{"id":"x"}`))
	f.Add("%zz", "ratio=NaN&ratio=1", []byte(`[1]`))
	f.Add("9999999999999999999999", "sub=%7B%22n%22%3A%5B1%5D%7D", []byte(``))
	h := fuzzApp(f)
	f.Fuzz(func(t *testing.T, param, query string, body []byte) {
		seg := url.PathEscape(param)
		reqs := []*http.Request{
			newReq(http.MethodGet, "/fz/"+seg+"?"+query, nil),
			newReq(http.MethodHead, "/fz/"+seg+"?"+query, nil),
			newReq(http.MethodPost, "/fz/"+seg+"/items?"+query, body),
			newReq(http.MethodPatch, "/fz/any/"+seg, body),
		}
		for _, r := range reqs {
			if r == nil {
				continue
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if r.Method == http.MethodHead {
				continue
			}
			checkEnvelope(t, rec, r.Method+" "+r.URL.String())
		}
	})
}

func newReq(method, target string, body []byte) *http.Request {
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequest(method, "http://x"+u.RequestURI(), rd)
	if err != nil {
		return nil
	}
	return r
}
