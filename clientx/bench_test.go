package clientx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

var benchUnit = engine.NewUnit("bench")

type benchIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type benchOut struct {
	Sum float64 `json:"sum"`
}

var benchAdd = engine.Define[benchIn, benchOut](benchUnit, "add", engine.Public())

func benchServer(b *testing.B) *httptest.Server {
	b.Helper()
	app, err := engine.New(engine.Bind(benchAdd, func(_ *engine.Fx, in benchIn) (benchOut, error) {
		return benchOut{Sum: in.A + in.B}, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkCallTyped is a typed client call over loopback; compare it with
// BenchmarkCallRawHTTP, which does the same JSON work by hand, to see the client's cost.
func BenchmarkCallTyped(b *testing.B) {
	srv := benchServer(b)
	c, err := clientx.New(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res := clientx.Call(ctx, c, benchAdd, benchIn{A: 1, B: 2})
		if res.Error != nil || res.Data.Sum != 3 {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkCallRawHTTP is the baseline: a plain http.Client posting the same JSON and
// decoding the same envelope.
func BenchmarkCallRawHTTP(b *testing.B) {
	srv := benchServer(b)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	url := srv.URL + "/_engine/bench/add"
	b.ReportAllocs()
	for b.Loop() {
		rawCall(b, hc, url)
	}
}

// rawCall is the hand-written call the baselines make: encode the input, post it through
// d, read and decode the envelope.
func rawCall(b *testing.B, d clientx.Doer, url string) {
	body, _ := json.Marshal(benchIn{A: 1, B: 2})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var env struct {
		Data  benchOut        `json:"data"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Data.Sum != 3 {
		b.Fatal(err)
	}
}

// cannedDoer answers every request with the same envelope without any network, so the
// pair below measures the client's own work.
type cannedDoer struct{ body []byte }

func (d cannedDoer) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(d.body)), Request: r}, nil
}

var canned = cannedDoer{body: []byte(`{"data":{"sum":3},"error":null}` + "\n")}

// BenchmarkClientOverheadTyped is the client's cost per call with the network taken out.
func BenchmarkClientOverheadTyped(b *testing.B) {
	c, err := clientx.New("http://bench.invalid", clientx.WithDoer(canned))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res := clientx.Call(ctx, c, benchAdd, benchIn{A: 1, B: 2})
		if res.Error != nil || res.Data.Sum != 3 {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkClientOverheadRaw is the hand-written baseline over the same doer.
func BenchmarkClientOverheadRaw(b *testing.B) {
	url := "http://bench.invalid/_engine/bench/add"
	b.ReportAllocs()
	for b.Loop() {
		rawCall(b, canned, url)
	}
}
