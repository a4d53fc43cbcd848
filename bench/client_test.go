package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/bbc28f59/engine/clientx"
)

// BenchmarkClientCall (client side) calls the engine server with the typed
// client (clientx.Call) and with a raw http.Client doing the same JSON work (encode the
// input, send, read the body, decode the envelope into the output type), alternating
// serially on one shared *http.Client so only the client code differs. extra-µs/call is
// the typed client's cost over raw (target ≤ 10 µs); extra-allocs/call likewise.
// extra-cpu-µs/call is the same difference in process CPU time (the server's share is
// equal on both sides), measured in alternating blocks before the timed loop: unlike wall
// time it is not moved by the other load on a shared machine.
func BenchmarkClientCall(b *testing.B) {
	s := newFlowServer(b)
	cases := clientCases(b, s, s.client, s.url)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			must := func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			}
			for range 200 {
				must(c.typed())
				must(c.raw())
			}
			typedAllocs := testing.AllocsPerRun(500, func() { must(c.typed()) })
			rawAllocs := testing.AllocsPerRun(500, func() { must(c.raw()) })
			extraCPU := extraCPUPerCall(func() { must(c.typed()) }, func() { must(c.raw()) })
			var typed, raw time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					t0 := time.Now()
					must(c.typed())
					t1 := time.Now()
					must(c.raw())
					typed, raw = typed+t1.Sub(t0), raw+time.Since(t1)
				} else {
					t0 := time.Now()
					must(c.raw())
					t1 := time.Now()
					must(c.typed())
					raw, typed = raw+t1.Sub(t0), typed+time.Since(t1)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(typed.Nanoseconds())/n, "typed-ns/call")
			b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/call")
			b.ReportMetric(float64((typed-raw).Nanoseconds())/n/1e3, "extra-µs/call")
			b.ReportMetric(typedAllocs-rawAllocs, "extra-allocs/call")
			b.ReportMetric(extraCPU.Seconds()*1e6, "extra-cpu-µs/call")
		})
	}
}

// clientCase is one shape of call made with the typed client and with the raw one.
type clientCase struct {
	name       string
	typed, raw func() error
}

// clientCases builds the typed and raw calls of each shape, both sending through doer to
// base (the app's routes come from s.app).
func clientCases(tb testing.TB, s *flowServer, doer clientx.Doer, base string) []clientCase {
	tb.Helper()
	rpc, err := clientx.New(base, clientx.WithDoer(doer))
	if err != nil {
		tb.Fatal(err)
	}
	rest, err := clientx.ForApp(s.app, base, clientx.WithDoer(doer))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	sumInput := sumIn{A: 1.5, B: 2.25, Label: "total"}
	return []clientCase{{
		name:  "rpc",
		typed: func() error { return checkSum(clientx.Call(ctx, rpc, sumFlow, sumInput)) },
		raw: func() error {
			return rawClientCall(ctx, doer, base+"/_engine/math/sum", http.MethodPost, sumInput, checkSumOut)
		},
	}, {
		name:  "rest-get",
		typed: func() error { return checkSquare(clientx.Call(ctx, rest, squareFlow, squareIn{N: 12})) },
		raw: func() error {
			return rawClientCall(ctx, doer, base+"/math/square/12", http.MethodGet, nil, checkSquareOut)
		},
	}, {
		name:  "rest-post",
		typed: func() error { return checkSum(clientx.Call(ctx, rest, sumFlow, sumInput)) },
		raw: func() error {
			return rawClientCall(ctx, doer, base+"/math/sum", http.MethodPost, sumInput, checkSumOut)
		},
	}}
}

// BenchmarkClientOverhead (client side, no network) runs the same typed and raw
// calls against an in-memory Doer that answers every request with the reply the real
// server gave for its path (recorded once at setup), alternating in one loop. With no
// server and no sockets in the measurement, extra-ns/call is the typed client's own cost
// over a hand-written client, which wall-clock noise on the loopback benchmark hides.
func BenchmarkClientOverhead(b *testing.B) {
	s := newFlowServer(b)
	doer := newCannedDoer(b, s, "/_engine/math/sum", "/math/square/12", "/math/sum")
	for _, c := range clientCases(b, s, doer, "http://canned.invalid") {
		b.Run(c.name, func(b *testing.B) {
			var typed, raw time.Duration
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				first, second := c.typed, c.raw
				if i%2 == 1 {
					first, second = c.raw, c.typed
				}
				t0 := time.Now()
				err1 := first()
				t1 := time.Now()
				err2 := second()
				d1, d2 := t1.Sub(t0), time.Since(t1)
				if err1 != nil || err2 != nil {
					b.Fatal(err1, err2)
				}
				if i%2 == 1 {
					d1, d2 = d2, d1
				}
				typed, raw = typed+d1, raw+d2
			}
			n := float64(b.N)
			b.ReportMetric(float64(typed.Nanoseconds())/n, "typed-ns/call")
			b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/call")
			b.ReportMetric(float64((typed-raw).Nanoseconds())/n, "extra-ns/call")
		})
	}
}

// cannedDoer answers from recorded replies, keyed by path, after reading the request body
// as a transport would.
type cannedDoer map[string][]byte

func newCannedDoer(tb testing.TB, s *flowServer, paths ...string) cannedDoer {
	tb.Helper()
	d := cannedDoer{}
	for _, p := range paths {
		method, body := http.MethodPost, []byte(`{"a":1.5,"b":2.25,"label":"total"}`)
		if p == "/math/square/12" {
			method, body = http.MethodGet, nil
		}
		req, err := http.NewRequest(method, s.url+p, bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.client.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		d[p], err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			tb.Fatalf("recording %s: HTTP %d %s %v", p, resp.StatusCode, d[p], err)
		}
	}
	return d
}

func (d cannedDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	body, ok := d[req.URL.Path]
	if !ok {
		return nil, fmt.Errorf("canned: no reply for %s", req.URL.Path)
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}, nil
}

// rawClientCall is the raw client: what a hand-written Go client of the same API does.
func rawClientCall[Out any](ctx context.Context, doer clientx.Doer, url, method string, in any, check func(Out) error) error {
	var rd io.Reader
	if in != nil {
		body, err := json.Marshal(in)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := doer.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var env struct {
		Data  Out `json:"data"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
	}
	if env.Error != nil {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, env.Error.Code)
	}
	return check(env.Data)
}

func checkSum(r clientx.Result[sumOut]) error {
	if r.Error != nil {
		return fmt.Errorf("%s: %s", r.Error.Code, r.Error.Data)
	}
	return checkSumOut(r.Data)
}

func checkSumOut(o sumOut) error {
	if o.Sum != 3.75 || o.Label != "total" {
		return fmt.Errorf("sum = %+v", o)
	}
	return nil
}

func checkSquare(r clientx.Result[squareOut]) error {
	if r.Error != nil {
		return fmt.Errorf("%s: %s", r.Error.Code, r.Error.Data)
	}
	return checkSquareOut(r.Data)
}

func checkSquareOut(o squareOut) error {
	if o.N != 12 || o.Square != 144 {
		return fmt.Errorf("square = %+v", o)
	}
	return nil
}

// extraCPUPerCall returns how much more process CPU time (user+system) a call of typed
// takes than one of raw, from 20 alternating blocks of 100 calls each.
func extraCPUPerCall(typed, raw func()) time.Duration {
	const blocks, size = 20, 100
	block := func(f func()) time.Duration {
		c0 := cpuTime()
		for range size {
			f()
		}
		return cpuTime() - c0
	}
	var t, r time.Duration
	for i := range blocks {
		if i%2 == 0 {
			t += block(typed)
			r += block(raw)
		} else {
			r += block(raw)
			t += block(typed)
		}
	}
	return (t - r) / (blocks * size)
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
