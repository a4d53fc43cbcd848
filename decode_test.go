package engine_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// restServer serves flows that echo the input the engine built from a REST request, so a
// test sees how path, query and body were typed.
func restServer(t *testing.T) *httptest.Server {
	t.Helper()
	u := engine.NewUnit("q")
	echo := func(_ *engine.Fx, in map[string]any) (map[string]any, error) { return in, nil }
	// A map input: any member, kept as written.
	byMap := engine.Define[map[string]any, map[string]any](u, "map", engine.GET("/q/map/:id"), engine.Public())
	// Declared properties and no closed set of members: unknown query keys are dropped.
	typed := engine.Define[map[string]any, map[string]any](u, "typed", engine.GET("/q/typed"), engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) {
			s.Properties = map[string]*jsonschema.Schema{
				"n":    {Type: "integer"},
				"f":    {Type: "number"},
				"b":    {Type: "boolean"},
				"tags": {Type: "array"},
				"nums": {Type: "array", Items: &jsonschema.Schema{Type: "integer"}},
				"obj":  {Type: "object"},
				"s":    {Type: "string"},
			}
		}))
	anything := engine.Define[any, any](u, "any", engine.GET("/q/any"), engine.Public())
	body := engine.Define[map[string]any, map[string]any](u, "body", engine.POST("/q/body/:id"), engine.Public())
	// Two typed path parameters: each wrong one is an issue.
	two := engine.Define[map[string]any, map[string]any](u, "two", engine.GET("/q/two/:a/:b"), engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) {
			s.Properties = map[string]*jsonschema.Schema{"a": {Type: "integer"}, "b": {Type: "integer"}}
		}))
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(byMap, echo), engine.Bind(typed, echo), engine.Bind(body, echo), engine.Bind(two, echo),
		engine.Bind(anything, func(_ *engine.Fx, in any) (any, error) { return in, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// TestRESTInputTyping checks how query, path and body values become the input: typed by
// the input schema, unknown query keys kept or dropped, and each wrong value an issue.
func TestRESTInputTyping(t *testing.T) {
	t.Parallel()
	srv := restServer(t)
	q := func(pairs ...string) string {
		v := url.Values{}
		for i := 0; i < len(pairs); i += 2 {
			v.Add(pairs[i], pairs[i+1])
		}
		return v.Encode()
	}
	cases := []struct {
		name, method, target, body string
		data                       string // the echoed input, when the call succeeds
		issues                     []engine.ValidationIssue
	}{
		{"map input keeps query keys", "GET", "/q/map/7?x=1", "", `{"id":"7","x":"1"}`, nil},
		{"map input keeps repeats as a list", "GET", "/q/map/7?x=1&x=2", "", `{"id":"7","x":["1","2"]}`, nil},
		{"typed query", "GET", "/q/typed?" + q("n", "3", "f", ".5", "b", "1", "tags", "a", "tags", "b",
			"nums", "1", "nums", "2", "obj", `{"k":1}`, "s", "12", "zz", "9"), "",
			`{"b":true,"f":0.5,"n":3,"nums":[1,2],"obj":{"k":1},"s":"12","tags":["a","b"]}`, nil},
		{"booleans", "GET", "/q/typed?b=0", "", `{"b":false}`, nil},
		{"boolean words", "GET", "/q/typed?b=true", "", `{"b":true}`, nil},
		{"a plus sign", "GET", "/q/typed?" + q("f", "+1"), "", `{"f":1}`, nil},
		{"not a boolean", "GET", "/q/typed?b=maybe", "", "", issues(issue("b", `expected a boolean (true or false), got "maybe"`))},
		{"NaN", "GET", "/q/typed?f=NaN", "", "", issues(issue("f", `expected a number, got "NaN"`))},
		{"Inf", "GET", "/q/typed?f=Inf", "", "", issues(issue("f", `expected a number, got "Inf"`))},
		{"hexadecimal", "GET", "/q/typed?f=0x1p4", "", "", issues(issue("f", `expected a number, got "0x1p4"`))},
		{"underscores", "GET", "/q/typed?f=1_0", "", "", issues(issue("f", `expected a number, got "1_0"`))},
		{"past float64", "GET", "/q/typed?f=1e400", "", "", issues(issue("f", `expected a number, got "1e400"`))},
		{"not an integer", "GET", "/q/typed?n=1.5", "", "", issues(issue("n", `expected an integer, got "1.5"`))},
		{"two values for one", "GET", "/q/typed?n=1&n=2", "", "", issues(issue("n", "expected one value, got 2"))},
		{"a bad list item", "GET", "/q/typed?nums=1&nums=x", "", "", issues(issue("nums", `expected an integer, got "x"`))},
		{"not an object", "GET", "/q/typed?obj=notjson", "", "", issues(issue("obj", `expected a JSON object, got "notjson"`))},
		{"several at once", "GET", "/q/typed?n=x&b=x", "", "", issues(issue("b", `expected a boolean (true or false), got "x"`),
			issue("n", `expected an integer, got "x"`))},
		{"malformed query", "GET", "/q/typed?%zz", "", "", issues(issue("", `malformed query string: invalid URL escape "%zz"`))},
		{"any input", "GET", "/q/any?x=1", "", `{"x":"1"}`, nil},
		{"blank body beside a path parameter", "POST", "/q/body/5", "  \n", `{"id":"5"}`, nil},
		{"body beside a path parameter", "POST", "/q/body/5", `{"a":1}`, `{"a":1,"id":"5"}`, nil},
		{"a POST's query string is not its input", "POST", "/q/body/5?x=1", `{"a":1}`, `{"a":1,"id":"5"}`, nil},
		{"typed path parameters", "GET", "/q/two/1/2", "", `{"a":1,"b":2}`, nil},
		{"every wrong path parameter", "GET", "/q/two/x/y", "", "", issues(issue("a", `expected an integer, got "x"`),
			issue("b", `expected an integer, got "y"`))},
		{"malformed body", "POST", "/q/body/5", `{"a":`, "", issues(issue("", "malformed JSON: unexpected end of JSON input"))},
		{"body not an object", "POST", "/q/body/5", `[1]`, "", issues(issue("", "the body must be a JSON object when the path has parameters"))},
		{"body null beside a path parameter", "POST", "/q/body/5", `null`, "", issues(issue("", "the body must be a JSON object when the path has parameters"))},
		{"query and path members in name order, the path's value kept", "GET", "/q/map/7?id=8&b=%3C%26%3E&a=1", "",
			`{"a":"1","b":"<&>","id":"7"}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(ctxT(t), c.method, srv.URL+c.target, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var env struct {
				Data  json.RawMessage
				Error *struct {
					Code string
					Data engine.ValidationData
				}
			}
			if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
				t.Fatal(err)
			}
			if c.issues == nil {
				if res.StatusCode != http.StatusOK || !jsonEqual(t, env.Data, c.data) {
					t.Fatalf("HTTP %d data %s error %+v, want 200 %s", res.StatusCode, env.Data, env.Error, c.data)
				}
				return
			}
			if res.StatusCode != http.StatusBadRequest || env.Error == nil || env.Error.Code != engine.CodeValidation {
				t.Fatalf("HTTP %d data %s error %+v, want 400 ValidationError", res.StatusCode, env.Data, env.Error)
			}
			if !reflect.DeepEqual(env.Error.Data.Issues, c.issues) {
				t.Fatalf("issues %+v, want %+v", env.Error.Data.Issues, c.issues)
			}
		})
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// schemaless is an input type that publishes no schema: its JSONSchema is nil.
type schemaless map[string]any

func (schemaless) JSONSchema() *jsonschema.Schema { return nil }

// TestAnInputWithoutASchemaKeepsEveryQueryKey checks that a flow whose input has no
// schema takes any input: every query key, as a string or a list of them.
func TestAnInputWithoutASchemaKeepsEveryQueryKey(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("free")
	f := engine.Define[schemaless, schemaless](u, "any", engine.GET("/free"), engine.Public())
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(f, func(_ *engine.Fx, in schemaless) (schemaless, error) { return in, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	res, err := srv.Client().Get(srv.URL + "/free?x=1&y=a&y=b")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	if res.StatusCode != http.StatusOK || body != `{"data":{"x":"1","y":["a","b"]},"error":null}` {
		t.Fatalf("HTTP %d %s", res.StatusCode, body)
	}
	if out, err := app.Invoke(ctxT(t), "free.any", nil, json.RawMessage(`{"n":[1,{"a":null}]}`)); err != nil || string(out) != `{"n":[1,{"a":null}]}` {
		t.Fatalf("Invoke: %s, %v", out, err)
	}
}
