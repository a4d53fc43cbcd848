// Package flowbench measures flow calls against baselines that do the same JSON work, the
// way a shared machine allows: many concurrent callers, the subjects (the engine, raw
// net/http, a peer framework) taking turns in batches, the order rotated every round, and
// every figure a ratio to the baseline measured in the same run. The benchmarks of
// package bench and of the lab module (which adds connect-go) share it, so both measure
// the same flows, the same server and the same client.
package flowbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
)

// The flows measured: a REST GET with a path parameter, and a POST with a small JSON body
// that is also called over RPC.
type (
	SquareIn struct {
		N int `json:"n"`
	}
	SquareOut struct {
		N      int `json:"n"`
		Square int `json:"square"`
	}
	SumIn struct {
		A     float64 `json:"a"`
		B     float64 `json:"b"`
		Label string  `json:"label"`
	}
	SumOut struct {
		Sum   float64 `json:"sum"`
		Label string  `json:"label"`
	}
)

var (
	mathUnit = engine.NewUnit("math")
	// SquareFlow is math.square, GET /math/square/:n.
	SquareFlow = engine.Define[SquareIn, SquareOut](mathUnit, "square", engine.GET("/math/square/:n"), engine.Public())
	// SumFlow is math.sum, POST /math/sum (and RPC).
	SumFlow = engine.Define[SumIn, SumOut](mathUnit, "sum", engine.POST("/math/sum"), engine.Public())
)

// Square and Sum are the work every side does.
func Square(in SquareIn) SquareOut { return SquareOut{N: in.N, Square: in.N * in.N} }

// Sum is the work of math.sum.
func Sum(in SumIn) SumOut { return SumOut{Sum: in.A + in.B, Label: in.Label} }

// SumBody is the input every sum call sends, and SumWant a fragment its reply holds.
const (
	SumBody = `{"a":1.5,"b":2.25,"label":"total"}`
	SumWant = `"sum":3.75`
)

// Server serves the engine app (/_engine/ and /math/) and, on a ServeMux, the raw
// net/http baselines under /raw/ and whatever else the caller mounts, on one loopback
// server, so every side shares the listener and the client.
type Server struct {
	URL    string
	App    *engine.App
	Client *http.Client
}

// NewServer starts the server; mount, if not nil, adds the caller's handlers to its mux.
func NewServer(tb testing.TB, mount func(mux *http.ServeMux)) *Server {
	tb.Helper()
	return NewServerWith(tb, mount)
}

// NewServerWith is [NewServer] with opts added to the app (an extension measured
// against the same app without it).
func NewServerWith(tb testing.TB, mount func(mux *http.ServeMux), opts ...engine.Option) *Server {
	tb.Helper()
	app, err := engine.New(
		engine.Options(opts...),
		engine.Bind(SquareFlow, func(_ *engine.Fx, in SquareIn) (SquareOut, error) { return Square(in), nil }),
		engine.Bind(SumFlow, func(_ *engine.Fx, in SumIn) (SumOut, error) { return Sum(in), nil }),
	)
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /raw/square/{n}", rawSquare)
	mux.HandleFunc("POST /raw/sum", rawSum)
	if mount != nil {
		mount(mux)
	}
	// Each side routes once, its own way: the app's paths go straight to the app, the
	// others to the mux's patterns. (Behind the mux's catch-all "/", the app would also
	// pay for the mux's search and its check for a redirect to a path with a trailing
	// slash, which raw's exact patterns do not: five allocations a call.)
	engine := app.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; strings.HasPrefix(p, "/_engine/") || strings.HasPrefix(p, "/math/") {
			engine.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	tb.Cleanup(client.CloseIdleConnections)
	return &Server{URL: srv.URL, App: app, Client: client}
}

// rawSquare is the baseline of the REST GET: parse the path value, encode the output,
// write the same envelope.
func rawSquare(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		http.Error(w, `{"data":null,"error":{"code":"ValidationError","data":{}}}`, http.StatusBadRequest)
		return
	}
	writeRawEnvelope(w, Square(SquareIn{N: n}))
}

// rawSum is the baseline of the POST and the RPC call: read and decode the body, encode
// the output, write the same envelope.
func rawSum(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var in SumIn
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		http.Error(w, `{"data":null,"error":{"code":"ValidationError","data":{}}}`, http.StatusBadRequest)
		return
	}
	writeRawEnvelope(w, Sum(in))
}

func writeRawEnvelope(w http.ResponseWriter, out any) {
	data, err := json.Marshal(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, `{"data":`...)
	buf = append(buf, data...)
	buf = append(buf, `,"error":null}`+"\n"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf)
}

// Shape is one kind of call, sent to the engine and to its raw baseline.
type Shape struct {
	Name       string
	Method     string
	EnginePath string
	RawPath    string
	Body       []byte
	Want       string // a fragment every reply must hold
}

// Shapes are the calls measured: RPC, a REST GET with a path parameter, a REST POST.
var Shapes = []Shape{
	{Name: "rpc", Method: http.MethodPost, EnginePath: "/_engine/math/sum", RawPath: "/raw/sum",
		Body: []byte(SumBody), Want: SumWant},
	{Name: "rest-get", Method: http.MethodGet, EnginePath: "/math/square/12", RawPath: "/raw/square/12",
		Want: `"square":144`},
	{Name: "rest-post", Method: http.MethodPost, EnginePath: "/math/sum", RawPath: "/raw/sum",
		Body: []byte(SumBody), Want: SumWant},
}

// Call returns one call of method path with body, whose reply must be 200 and hold
// want, so a failing side cannot look fast. Every side is called with this same plain
// client code, so only the server differs.
func (s *Server) Call(method, path string, body []byte, want string) func() error {
	url := s.URL + path
	return func() error {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
		if err != nil {
			return err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.Client.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(want)) {
			return fmt.Errorf("%s %s: HTTP %d %s (%v)", method, path, resp.StatusCode, b, err)
		}
		return nil
	}
}
