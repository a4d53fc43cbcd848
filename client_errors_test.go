package engine_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// TestDeclaredErrorCode checks a declared code reaches the client with its declared status
// and typed data. DivideByZero's status is 400, a framework validation error's too: the
// code, not the status, is what tells them apart.
func TestDeclaredErrorCode(t *testing.T) {
	t.Parallel()
	env := setup(t)
	res := clientx.Call(ctxT(t), env.client(t), contract.Divide, contract.DivideIn{A: 3, B: 0})
	wantCode(t, res, "DivideByZero", contract.DivideByZero.Status())
	if res.Status != http.StatusBadRequest || engine.IsFrameworkCode(res.Error.Code) {
		t.Fatalf("status %d, code %s: want the reference contract's 400 with a declared code", res.Status, res.Error.Code)
	}
	if !contract.DivideByZero.Is(res.Error) || clientx.IsTransportError(res.Error) || !clientx.IsErrorCode(res.Error, "DivideByZero") {
		t.Fatal("narrowing predicates disagree with the code")
	}
	d, ok := contract.DivideByZero.DataOf(res.Error)
	if !ok || d.Dividend != 3 {
		t.Fatalf("DataOf = %+v, %v", d, ok)
	}
	if res.OK() || !res.Failed() || clientx.IsOk(res) || !clientx.IsFail(res) {
		t.Fatal("result predicates disagree with the error")
	}
	if res.Data != (contract.DivideOut{}) {
		t.Fatalf("failed result has data %+v", res.Data)
	}
}

// TestNotFound checks NotFound for an unknown RPC flow and an unknown REST route.
func TestNotFound(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.rpcClient(t)
	wantCode(t, c.Call(ctxT(t), "math.missing", nil), engine.CodeNotFound, http.StatusNotFound)
	wantCode(t, c.Call(ctxT(t), "nounit.flow", nil), engine.CodeNotFound, http.StatusNotFound)
	rest := env.rpcClient(t, clientx.WithRouteTable(map[string]engine.Route{"math.ghost": {Method: "GET", Path: "/math/ghost"}}))
	res := rest.Call(ctxT(t), "math.ghost", nil)
	wantCode(t, res, engine.CodeNotFound, http.StatusNotFound)
	if msg, _ := dataOf(t, res.Error)["message"].(string); !strings.Contains(msg, "/math/ghost") {
		t.Fatalf("message %q does not name the route", msg)
	}
}

// TestValidationErrors checks field-level issues for malformed JSON, wrong types and
// missing required members, over RPC and REST.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	env := setup(t)
	tr := clientx.NewTransport()
	cases := []struct {
		name       string
		method     string
		path       string
		body       string
		wantIssues []engine.ValidationIssue
	}{
		{"malformed JSON", "POST", "/_engine/math/add", `{"a":1,`, nil},
		{"wrong types", "POST", "/_engine/math/add", `{"a":"one","b":true}`, []engine.ValidationIssue{
			{Path: "a", Message: "expected number, got string"}, {Path: "b", Message: "expected number, got boolean"}}},
		{"missing required", "POST", "/math/echo/", `{}`, nil},
		{"missing required member", "POST", "/_engine/math/echo", `{"x":1}`, []engine.ValidationIssue{{Path: "id", Message: "required"}}},
		{"wrong query type", "GET", "/items/1?limit=many", "", []engine.ValidationIssue{{Path: "limit", Message: `expected an integer, got "many"`}}},
		{"wrong path type", "GET", "/math/square/x", "", []engine.ValidationIssue{{Path: "n", Message: `expected a number, got "x"`}}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			status, _, resp, terr := tr.Do(ctxT(t), tt.method, env.url+tt.path, body)
			if terr != nil {
				t.Fatal(terr)
			}
			var env struct {
				Data  json.RawMessage
				Error struct {
					Code string
					Data engine.ValidationData
				}
			}
			if err := json.Unmarshal(resp, &env); err != nil {
				t.Fatalf("%s: %v", resp, err)
			}
			if tt.name == "missing required" {
				// An empty path segment matches no route.
				if status != http.StatusNotFound || env.Error.Code != engine.CodeNotFound {
					t.Fatalf("status %d code %s", status, env.Error.Code)
				}
				return
			}
			if status != http.StatusBadRequest || env.Error.Code != engine.CodeValidation || string(env.Data) != "null" {
				t.Fatalf("status %d body %s", status, resp)
			}
			if env.Error.Data.Message == "" {
				t.Fatal("no message")
			}
			if tt.wantIssues == nil {
				if len(env.Error.Data.Issues) == 0 {
					t.Fatalf("no issues in %s", resp)
				}
				return
			}
			if !reflect.DeepEqual(env.Error.Data.Issues, tt.wantIssues) {
				t.Fatalf("issues = %+v, want %+v", env.Error.Data.Issues, tt.wantIssues)
			}
		})
	}
	// The typed client sees the same thing.
	res := env.client(t).Call(ctxT(t), "math.add", map[string]any{"a": "one", "b": 2})
	wantCode(t, res, engine.CodeValidation, http.StatusBadRequest)
	var vd engine.ValidationData
	if err := res.Error.DecodeData(&vd); err != nil || len(vd.Issues) != 1 || vd.Issues[0].Path != "a" {
		t.Fatalf("validation data %+v (%v)", vd, err)
	}
}

// TestMethodNotAllowed checks the envelope and the Allow header for a wrong method on a
// REST route and on RPC.
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	env := setup(t)
	tr := clientx.NewTransport()
	cases := []struct {
		method, path, allow string
	}{
		{"PUT", "/math/square/3", "GET"},
		{"POST", "/items/3", "DELETE, GET, PATCH, PUT"},
		{"GET", "/_engine/math/add", "POST"},
	}
	for _, tt := range cases {
		status, h, body, terr := tr.Do(ctxT(t), tt.method, env.url+tt.path, nil)
		if terr != nil {
			t.Fatal(terr)
		}
		if status != http.StatusMethodNotAllowed || h.Get("Allow") != tt.allow || !strings.Contains(string(body), `"code":"MethodNotAllowed"`) {
			t.Errorf("%s %s: status %d Allow %q body %s", tt.method, tt.path, status, h.Get("Allow"), body)
		}
	}
	// Through the client the code arrives as a normal failure.
	c := env.rpcClient(t, clientx.WithRouteTable(map[string]engine.Route{"math.square": {Method: "DELETE", Path: "/math/square/:n"}}))
	wantCode(t, clientx.Call(ctxT(t), c, contract.Square, contract.SquareIn{N: 2}), engine.CodeMethodNotAllowed, http.StatusMethodNotAllowed)
}

// TestPayloadTooLarge checks the body limit set with engine.WithMaxBodyBytes.
func TestPayloadTooLarge(t *testing.T) {
	t.Parallel()
	env := setup(t, engine.WithMaxBodyBytes(64))
	c := env.client(t)
	small := wantOK(t, clientx.Call(ctxT(t), c, tc.Create, tc.Item{ID: 1, Name: "ok"}))
	if small.Name != "ok" {
		t.Fatalf("small item = %+v", small)
	}
	res := clientx.Call(ctxT(t), c, tc.Create, tc.Item{ID: 1, Name: strings.Repeat("x", 100)})
	wantCode(t, res, engine.CodePayloadTooLarge, http.StatusRequestEntityTooLarge)
	if dataOf(t, res.Error)["limit"] != float64(64) {
		t.Fatalf("data %s", res.Error.Data)
	}
}

// TestInternalErrorsHideDetail checks undeclared errors, undeclared codes and panics:
// InternalError without detail in the reply, the detail in the log, the server alive.
func TestInternalErrorsHideDetail(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	cases := []struct {
		flow      *engine.Flow[tc.Empty, tc.Empty]
		logDetail string
	}{
		{tc.Boom, "db password hunter2 rejected"},
		{tc.Undeclared, "SecretCode"},
		{tc.Panic, "panic detail hunter2"},
	}
	for _, tt := range cases {
		res := clientx.Call(ctxT(t), c, tt.flow, tc.Empty{})
		wantCode(t, res, engine.CodeInternal, http.StatusInternalServerError)
		raw := string(res.Error.Data.(json.RawMessage))
		if raw != `{"message":"internal error"}` {
			t.Errorf("%s: reply data %s", tt.flow.ID(), raw)
		}
		if !contains(env.logs.String(), tt.logDetail) {
			t.Errorf("%s: log lacks %q:\n%s", tt.flow.ID(), tt.logDetail, env.logs.String())
		}
	}
	if !contains(env.logs.String(), "goroutine") {
		t.Error("the panic's stack was not logged")
	}
	// The process survived and still serves.
	wantOK(t, clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{A: 1}))
}

// TestGateCodes checks the gate denials arrive with their status, data and headers.
func TestGateCodes(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t)
	res := clientx.Call(ctxT(t), c, tc.Me, tc.Empty{})
	wantCode(t, res, engine.CodeUnauthorized, http.StatusUnauthorized)
	if string(res.Error.Data.(json.RawMessage)) != "{}" {
		t.Fatalf("Unauthorized data %s", res.Error.Data)
	}
	authed := env.client(t, clientx.WithHeaders(http.Header{"Authorization": {"Bearer good"}}))
	if me := wantOK(t, clientx.Call(ctxT(t), authed, tc.Me, tc.Empty{})); me.ID != "u1" {
		t.Fatalf("me = %+v", me)
	}
	denied := clientx.Call(ctxT(t), authed, tc.Forbid, tc.Empty{})
	wantCode(t, denied, engine.CodeForbidden, http.StatusForbidden)
	var fd engine.ForbiddenData
	if err := denied.Error.DecodeData(&fd); err != nil || fd != (engine.ForbiddenData{Gate: "policy", Reason: "not yours"}) {
		t.Fatalf("Forbidden data %+v (%v)", fd, err)
	}
	limited := clientx.Call(ctxT(t), c, tc.Limited, tc.Empty{})
	wantCode(t, limited, engine.CodeRateLimited, http.StatusTooManyRequests)
	var rd engine.RateLimitedData
	if err := limited.Error.DecodeData(&rd); err != nil || rd.RetryAfterMs != 1500 {
		t.Fatalf("RateLimited data %+v (%v)", rd, err)
	}
}
