package clientx

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine"
)

func TestRouteRequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		route      engine.Route
		input      string
		wantTarget string
		wantBody   string // "-" for no body
		wantErr    bool
	}{
		{"RPC-like POST passes the input through", engine.Route{Method: "POST", Path: "/a"}, `{"x":1}`, "B/a", `{"x":1}`, false},
		{"POST with nil input sends {}", engine.Route{Method: "POST", Path: "/a"}, "", "B/a", `{}`, false},
		{"GET query types", engine.Route{Method: "GET", Path: "/a"}, `{"s":"x y","n":1.5,"b":false,"l":[1,"two",null,true],"o":{"k": [1]},"z":null}`,
			"B/a?b=false&l=1&l=two&l=true&n=1.5&o=%7B%22k%22%3A%5B1%5D%7D&s=x+y", "-", false},
		{"GET no input", engine.Route{Method: "GET", Path: "/a"}, "", "B/a", "-", false},
		{"HEAD uses the query", engine.Route{Method: "HEAD", Path: "/a/:id"}, `{"id":3,"q":"v"}`, "B/a/3?q=v", "-", false},
		{"params in the middle", engine.Route{Method: "GET", Path: "/u/:uid/p/:pid"}, `{"uid":"a/b","pid":7}`, "B/u/a%2Fb/p/7", "-", false},
		{"boolean param", engine.Route{Method: "GET", Path: "/f/:on"}, `{"on":true}`, "B/f/true", "-", false},
		{"big number kept exact", engine.Route{Method: "GET", Path: "/n/:id"}, `{"id":12345678901234567890}`, "B/n/12345678901234567890", "-", false},
		{"DELETE body without the param", engine.Route{Method: "DELETE", Path: "/a/:id"}, `{"id":"k","why":"x"}`, "B/a/k", `{"why":"x"}`, false},
		{"PATCH only params", engine.Route{Method: "PATCH", Path: "/a/:id"}, `{"id":1}`, "B/a/1", `{}`, false},
		{"lowercase method", engine.Route{Method: "get", Path: "/a"}, `{"q":1}`, "B/a?q=1", "-", false},
		{"missing param", engine.Route{Method: "GET", Path: "/a/:id"}, `{}`, "", "", true},
		{"array param", engine.Route{Method: "GET", Path: "/a/:id"}, `{"id":[1]}`, "", "", true},
		{"scalar input with params", engine.Route{Method: "PUT", Path: "/a/:id"}, `5`, "", "", true},
		{"malformed input", engine.Route{Method: "GET", Path: "/a"}, `{"a":`, "", "", true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var in []byte
			if tt.input != "" {
				in = []byte(tt.input)
			}
			target, body, e := compileRoute(tt.route).request("B", in)
			if tt.wantErr {
				if e == nil || e.Code != engine.CodeValidation || e.Message() == "" {
					t.Fatalf("error %v, want a ValidationError with a message", e)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if target != tt.wantTarget {
				t.Errorf("target %s, want %s", target, tt.wantTarget)
			}
			gotBody := string(body)
			if body == nil {
				gotBody = "-"
			}
			if gotBody != tt.wantBody {
				t.Errorf("body %s, want %s", gotBody, tt.wantBody)
			}
		})
	}
}

func TestDecodeReply(t *testing.T) {
	t.Parallel()
	type out struct {
		N int `json:"n"`
	}
	cases := []struct {
		name     string
		method   string
		status   int
		body     string
		wantN    int
		wantCode string
		wantMeta string
		wantCur  string
	}{
		{"success", "POST", 200, `{"data":{"n":2},"error":null}`, 2, "", "", ""},
		{"null data", "POST", 200, `{"data":null,"error":null}`, 0, "", "", ""},
		{"meta", "GET", 200, `{"data":{"n":1},"error":null,"meta":{"nextCursor":"c2","total":9}}`, 1, "", `{"nextCursor":"c2","total":9}`, "c2"},
		{"null meta", "GET", 200, `{"data":{"n":1},"error":null,"meta":null}`, 1, "", "", ""},
		{"error with null data gets {}", "POST", 409, `{"data":null,"error":{"code":"Conflict","data":null}}`, 0, "Conflict", "", ""},
		{"204", "DELETE", 204, ``, 0, "", "", ""},
		{"HEAD 200 empty", "HEAD", 200, ``, 0, "", "", ""},
		{"HEAD 404 empty", "HEAD", 404, ``, 0, engine.CodeTransportError, "", ""},
		{"trailing garbage", "POST", 200, `{"data":{},"error":null} x`, 0, engine.CodeTransportError, "", ""},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			buf := bufPool.Get().(*bytes.Buffer)
			buf.Reset()
			buf.WriteString(tt.body)
			r := reply{status: tt.status, body: buf}
			res := decodeReply[out](tt.method, r)
			r.release()
			if got := codeOf(res.Error); got != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tt.wantCode, res.Error)
			}
			if res.Data.N != tt.wantN || res.Status != tt.status {
				t.Errorf("data %+v status %d", res.Data, res.Status)
			}
			if string(res.Meta.Raw) != tt.wantMeta || res.Meta.NextCursor != tt.wantCur {
				t.Errorf("meta %s cursor %q", res.Meta.Raw, res.Meta.NextCursor)
			}
			if tt.name == "error with null data gets {}" && string(res.Error.Data.(json.RawMessage)) != "{}" {
				t.Errorf("data %s", res.Error.Data)
			}
		})
	}
}

func codeOf(e *engine.Error) string {
	if e == nil {
		return ""
	}
	return e.Code
}

func TestCheckRouteMethods(t *testing.T) {
	t.Parallel()
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, "get"} {
		if err := checkRoute("u.f", engine.Route{Method: m, Path: "/x"}); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	for _, id := range []string{"u", ".f", "u.", "u.f.g"} {
		if checkRoute(id, engine.Route{Method: "GET", Path: "/x"}) == nil {
			t.Errorf("%q accepted", id)
		}
	}
}
