package engine_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// Inputs a caller controls must cost the server work in proportion to their size, and
// arrive as sent. These flows carry the shapes that once did not.

var limitsUnit = engine.NewUnit("limits")

type TaggedIn struct {
	Tags []float64 `json:"tags"`
}

type AccountIn struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
}

var (
	tagged = engine.Define[TaggedIn, TaggedIn](limitsUnit, "tagged", engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) { s.Properties["tags"].UniqueItems = true }))
	fewTagged = engine.Define[TaggedIn, TaggedIn](limitsUnit, "fewTagged", engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) {
			ten := 10
			s.Properties["tags"].UniqueItems, s.Properties["tags"].MaxItems = true, &ten
		}))
	account = engine.Define[AccountIn, AccountIn](limitsUnit, "account", engine.PUT("/accounts/:id"), engine.Public())
)

func limitsServer(t *testing.T) *httptest.Server {
	t.Helper()
	echo := func(fx *engine.Fx, in TaggedIn) (TaggedIn, error) {
		return TaggedIn{Tags: in.Tags[:min(len(in.Tags), 1)]}, nil
	}
	app, err := engine.New(engine.Bind(tagged, echo), engine.Bind(fewTagged, echo),
		engine.Bind(account, func(fx *engine.Fx, in AccountIn) (AccountIn, error) { return in, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// numbers writes {"tags":[0,1,...,n-1]} followed by extra items.
func numbers(n int, extra ...string) string {
	var b strings.Builder
	b.WriteString(`{"tags":[`)
	for i := range n {
		fmt.Fprintf(&b, "%d,", i)
	}
	b.WriteString(strings.Join(append(extra, "-1"), ","))
	b.WriteString("]}")
	return b.String()
}

// uniqueItems over a long array is checked in one pass (a pairwise check of these 30,001
// items would compare 450 million pairs), finds a repeat far apart by value (7 and 7.0),
// and is not looked for past maxItems, whose issue is given alone.
func TestUniqueItemsOnALongArray(t *testing.T) {
	t.Parallel()
	srv := limitsServer(t)
	if status, body := send(t, http.MethodPost, srv.URL+"/_engine/limits/tagged", numbers(30000)); status != http.StatusOK {
		t.Fatalf("30,001 distinct items: %d %s", status, body)
	}
	status, body := send(t, http.MethodPost, srv.URL+"/_engine/limits/tagged", numbers(30000, "7.0"))
	if status != http.StatusBadRequest || !strings.Contains(body, `"must not repeat items (items 7 and 30000 are equal)"`) {
		t.Fatalf("a repeat at the end: %d %s", status, body)
	}
	// At maxItems exactly, uniqueness is still looked for.
	status, body = send(t, http.MethodPost, srv.URL+"/_engine/limits/fewTagged", `{"tags":[1,2,3,4,5,6,7,8,9,1]}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `"must not repeat items (items 0 and 9 are equal)"`) {
		t.Fatalf("ten items, one repeated: %d %s", status, body)
	}
	status, body = send(t, http.MethodPost, srv.URL+"/_engine/limits/fewTagged", numbers(30000, "7"))
	if status != http.StatusBadRequest || !strings.Contains(body, "must have at most 10 items") || strings.Contains(body, "repeat") {
		t.Fatalf("too many items, one repeated: %d %s", status, body)
	}
}

// A REST call with path parameters carries the body's integers exactly, as an RPC call
// does: 2^53+1 is not a float64.
func TestRESTBodyIntegersAreExact(t *testing.T) {
	t.Parallel()
	srv := limitsServer(t)
	status, body := send(t, http.MethodPut, srv.URL+"/accounts/a", `{"amount":9007199254740993}`)
	var env struct {
		Data AccountIn `json:"data"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &env) != nil || env.Data.Amount != 9007199254740993 || env.Data.ID != "a" {
		t.Fatalf("PUT /accounts/a: %d %s, want amount 9007199254740993", status, body)
	}
}

// Data after a REST body's object is malformed JSON, as it is on the RPC path.
func TestRESTBodyWithTrailingDataIsMalformed(t *testing.T) {
	t.Parallel()
	srv := limitsServer(t)
	status, body := send(t, http.MethodPut, srv.URL+"/accounts/a", `{"amount":1} {"amount":2}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `malformed JSON: invalid character '{' after top-level value`) {
		t.Fatalf("PUT /accounts/a with two objects: %d %s, want 400 malformed JSON", status, body)
	}
}
