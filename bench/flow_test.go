package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
)

// The flows measured: a REST GET with a path parameter, and a POST with a small JSON
// body that is also called over RPC.
type squareIn struct {
	N int `json:"n"`
}

type squareOut struct {
	N      int `json:"n"`
	Square int `json:"square"`
}

type sumIn struct {
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Label string  `json:"label"`
}

type sumOut struct {
	Sum   float64 `json:"sum"`
	Label string  `json:"label"`
}

var (
	mathUnit   = engine.NewUnit("math")
	squareFlow = engine.Define[squareIn, squareOut](mathUnit, "square", engine.GET("/math/square/:n"), engine.Public())
	sumFlow    = engine.Define[sumIn, sumOut](mathUnit, "sum", engine.POST("/math/sum"), engine.Public())
)

func square(in squareIn) squareOut { return squareOut{N: in.N, Square: in.N * in.N} }

func sum(in sumIn) sumOut { return sumOut{Sum: in.A + in.B, Label: in.Label} }

// flowServer serves the engine app under / and the raw net/http baselines under /raw/,
// on one loopback server, so both sides share the listener, the mux and the client.
type flowServer struct {
	url    string
	app    *engine.App
	client *http.Client
}

func newFlowServer(tb testing.TB) *flowServer {
	tb.Helper()
	app, err := engine.New(
		engine.Bind(squareFlow, func(_ *engine.Fx, in squareIn) (squareOut, error) { return square(in), nil }),
		engine.Bind(sumFlow, func(_ *engine.Fx, in sumIn) (sumOut, error) { return sum(in), nil }),
	)
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /raw/square/{n}", rawSquare)
	mux.HandleFunc("POST /raw/sum", rawSum)
	mux.Handle("/", app.Handler())
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}
	tb.Cleanup(client.CloseIdleConnections)
	return &flowServer{url: srv.URL, app: app, client: client}
}

// rawSquare is the baseline of the REST GET: parse the path value, encode the output,
// write the same envelope.
func rawSquare(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		http.Error(w, `{"data":null,"error":{"code":"ValidationError","data":{}}}`, http.StatusBadRequest)
		return
	}
	writeRawEnvelope(w, square(squareIn{N: n}))
}

// rawSum is the baseline of the POST and the RPC call: read and decode the body, encode
// the output, write the same envelope.
func rawSum(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var in sumIn
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		http.Error(w, `{"data":null,"error":{"code":"ValidationError","data":{}}}`, http.StatusBadRequest)
		return
	}
	writeRawEnvelope(w, sum(in))
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

// callCase is one shape of call, sent to the engine and to its raw baseline.
type callCase struct {
	name        string
	method      string
	enginePath  string
	rawPath     string
	body        []byte
	wantPayload string // a fragment every reply must hold
}

var callCases = []callCase{
	{name: "rpc", method: http.MethodPost, enginePath: "/_engine/math/sum", rawPath: "/raw/sum",
		body: []byte(`{"a":1.5,"b":2.25,"label":"total"}`), wantPayload: `"sum":3.75`},
	{name: "rest-get", method: http.MethodGet, enginePath: "/math/square/12", rawPath: "/raw/square/12",
		wantPayload: `"square":144`},
	{name: "rest-post", method: http.MethodPost, enginePath: "/math/sum", rawPath: "/raw/sum",
		body: []byte(`{"a":1.5,"b":2.25,"label":"total"}`), wantPayload: `"sum":3.75`},
}

// send makes one call with a plain client and checks the reply, so a failing side cannot
// look fast. It returns an error rather than failing the benchmark itself because it runs
// on RunParallel goroutines.
func (s *flowServer) send(method, path string, body []byte, want string) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.url+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
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

// BenchmarkFlowCall (server side) calls each shape of flow over loopback TCP and
// the raw net/http handler doing the same JSON work, alternating in one run under
// RunParallel load (4 goroutines per core). x-raw is engine throughput as a fraction of
// raw throughput (raw time per call ÷ engine time per call; target ≥ 0.85).
// engine-allocs/call and raw-allocs/call are whole-process allocations of one serial
// call, client included (the client is the same for both sides).
func BenchmarkFlowCall(b *testing.B) {
	s := newFlowServer(b)
	for _, c := range callCases {
		b.Run(c.name, func(b *testing.B) {
			engineCall := func() error { return s.send(c.method, c.enginePath, c.body, c.wantPayload) }
			rawCall := func() error { return s.send(c.method, c.rawPath, c.body, c.wantPayload) }
			must := func(f func() error) func() {
				return func() {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
			}
			for range 200 { // warm connections and caches
				must(engineCall)()
				must(rawCall)()
			}
			engineAllocs := testing.AllocsPerRun(500, must(engineCall))
			rawAllocs := testing.AllocsPerRun(500, must(rawCall))
			var engineNs, rawNs atomic.Int64
			b.SetParallelism(4)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var e, r time.Duration
				defer func() {
					engineNs.Add(int64(e))
					rawNs.Add(int64(r))
				}()
				for i := 0; pb.Next(); i++ {
					// Alternate which side goes first so neither always follows the other.
					first, second := engineCall, rawCall
					if i%2 == 1 {
						first, second = rawCall, engineCall
					}
					t0 := time.Now()
					err1 := first()
					t1 := time.Now()
					err2 := second()
					d1, d2 := t1.Sub(t0), time.Since(t1)
					if err := errors.Join(err1, err2); err != nil {
						b.Error(err)
						return
					}
					if i%2 == 1 {
						d1, d2 = d2, d1
					}
					e, r = e+d1, r+d2
				}
			})
			n := float64(b.N)
			b.ReportMetric(float64(engineNs.Load())/n, "engine-ns/call")
			b.ReportMetric(float64(rawNs.Load())/n, "raw-ns/call")
			b.ReportMetric(float64(rawNs.Load())/float64(engineNs.Load()), "x-raw")
			b.ReportMetric(engineAllocs, "engine-allocs/call")
			b.ReportMetric(rawAllocs, "raw-allocs/call")
		})
	}
}
