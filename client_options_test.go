package engine_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	"github.com/bbc28f59/engine/internal/testauth"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// attempts records when each request reached a raw server.
type attempts struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *attempts) add() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, time.Now())
	return len(a.times)
}

func (a *attempts) get() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.times...)
}

const internalEnvelope = `{"data":null,"error":{"code":"InternalError","data":{"message":"internal error"}}}`

// TestRetryBackoff checks 5xx replies are retried Retries times with a growing delay,
// and that the last reply is what the caller sees.
func TestRetryBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		failFirst    int // attempts answered 503 before a success
		retries      int
		wantAttempts int
		wantCode     string
	}{
		{"recovers", 3, 3, 4, ""},
		{"exhausted", 100, 2, 3, engine.CodeInternal},
		{"no retries by default", 100, 0, 1, engine.CodeInternal},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var at attempts
			url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if at.add() <= tt.failFirst {
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = w.Write([]byte(internalEnvelope))
					return
				}
				_, _ = w.Write([]byte(`{"data":{"sum":1},"error":null}`))
			})
			delay := 10 * time.Millisecond
			opts := []clientx.Option{}
			if tt.retries > 0 {
				opts = append(opts, clientx.WithRetry(clientx.Retry{Retries: tt.retries, Delay: delay, Backoff: 2}))
			}
			c, err := clientx.New(url, opts...)
			if err != nil {
				t.Fatal(err)
			}
			res := clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{})
			if tt.wantCode == "" {
				if wantOK(t, res).Sum != 1 {
					t.Fatalf("data %+v", res.Data)
				}
			} else {
				wantCode(t, res, tt.wantCode, http.StatusServiceUnavailable)
			}
			times := at.get()
			if len(times) != tt.wantAttempts {
				t.Fatalf("%d attempts, want %d", len(times), tt.wantAttempts)
			}
			// Each gap is at least the configured delay for that retry, which doubles.
			want := delay
			for i := 1; i < len(times); i++ {
				if gap := times[i].Sub(times[i-1]); gap < want {
					t.Errorf("gap before attempt %d is %v, want at least %v", i+1, gap, want)
				}
				want *= 2
			}
		})
	}
}

// TestNoRetryOn4xx checks client errors are not retried.
func TestNoRetryOn4xx(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t, clientx.WithRetry(clientx.Retry{Retries: 3, Delay: time.Millisecond}))
	wantCode(t, clientx.Call(ctxT(t), c, contract.Divide, contract.DivideIn{A: 1}), "DivideByZero", http.StatusBadRequest)
	wantCode(t, clientx.Call(ctxT(t), c, tc.Limited, tc.Empty{}), engine.CodeRateLimited, http.StatusTooManyRequests)
	if n := len(env.rec.all()); n != 2 {
		t.Fatalf("%d requests for two 4xx calls, want 2", n)
	}
}

// flakyDoer fails its first n requests with a network error, counting every request.
type flakyDoer struct {
	n     int32
	calls atomic.Int32
	next  clientx.Doer
}

func (d *flakyDoer) Do(r *http.Request) (*http.Response, error) {
	if d.calls.Add(1) <= d.n {
		return nil, errors.New("connection reset by peer (simulated)")
	}
	return d.next.Do(r)
}

// TestRetryNetworkFailure checks network failures are retried and the custom doer is
// the one used for every attempt.
func TestRetryNetworkFailure(t *testing.T) {
	t.Parallel()
	env := setup(t)
	d := &flakyDoer{n: 2, next: http.DefaultClient}
	c := env.client(t, clientx.WithDoer(d), clientx.WithRetry(clientx.Retry{Retries: 2, Delay: time.Millisecond}))
	if wantOK(t, clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{A: 1, B: 1})).Sum != 2 {
		t.Fatal("wrong sum")
	}
	if d.calls.Load() != 3 || len(env.rec.all()) != 1 {
		t.Fatalf("doer saw %d calls and the server %d, want 3 and 1", d.calls.Load(), len(env.rec.all()))
	}

	d = &flakyDoer{n: 100, next: http.DefaultClient}
	c = env.client(t, clientx.WithDoer(d), clientx.WithRetry(clientx.Retry{Retries: 1, Delay: time.Millisecond}))
	res := clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{})
	wantCode(t, res, engine.CodeTransportError, 0)
	if msg := res.Error.Message(); !strings.Contains(msg, "connection reset") {
		t.Fatalf("message %q", msg)
	}
	if _, has := dataOf(t, res.Error)["status"]; has {
		t.Fatal("a network failure has no HTTP status but data.status is set")
	}
	if d.calls.Load() != 2 {
		t.Fatalf("doer saw %d calls, want 2", d.calls.Load())
	}
}

// TestTimeoutAborts checks WithTimeout aborts an attempt whose handler blocks until
// its context ends, and that a timeout counts as a retryable failure while the caller's
// own deadline does not. Attempts are counted at the doer, which sees each one for sure.
func TestTimeoutAborts(t *testing.T) {
	t.Parallel()
	env := setup(t)
	d := &flakyDoer{next: http.DefaultClient}
	c := env.client(t, clientx.WithDoer(d), clientx.WithTimeout(100*time.Millisecond),
		clientx.WithRetry(clientx.Retry{Retries: 1, Delay: time.Millisecond}))
	res := clientx.Call(ctxT(t), c, tc.Slow, tc.Empty{})
	wantCode(t, res, engine.CodeTransportError, 0)
	if !strings.Contains(res.Error.Message(), "timed out after 100ms") {
		t.Fatalf("message %q", res.Error.Message())
	}
	if n := d.calls.Load(); n != 2 {
		t.Fatalf("%d attempts, want 2 (first and one retry)", n)
	}

	d = &flakyDoer{next: http.DefaultClient}
	c = env.client(t, clientx.WithDoer(d), clientx.WithRetry(clientx.Retry{Retries: 5, Delay: time.Millisecond}))
	ctx, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	res = clientx.Call(ctx, c, tc.Slow, tc.Empty{})
	wantCode(t, res, engine.CodeTransportError, 0)
	if !strings.Contains(res.Error.Message(), "canceled") || d.calls.Load() != 1 {
		t.Fatalf("message %q after %d attempts", res.Error.Message(), d.calls.Load())
	}
}

// TestCancelDuringBackoff checks a cancelled context ends the wait between retries.
func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	var at attempts
	url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		at.add()
		cancel() // the caller gives up while the client waits to retry
		w.WriteHeader(http.StatusBadGateway)
	})
	c, err := clientx.New(url, clientx.WithRetry(clientx.Retry{Retries: 3, Delay: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	res := c.Call(ctx, "math.add", nil)
	wantCode(t, res, engine.CodeTransportError, 0)
	if len(at.get()) != 1 {
		t.Fatalf("%d attempts, want 1", len(at.get()))
	}
}

// probeSpec is the starting state of a [testauth.Token].
type probeSpec struct {
	token, fixTo string
	fail         bool
}

// TestAuthRefresh checks the bearer header, exactly one refresh on 401 followed by one
// repeat of the call, and no refresh on 403 and 429.
func TestAuthRefresh(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		probe         probeSpec
		flow          *engine.Flow[tc.Empty, tc.Empty]
		wantCode      string
		wantStatus    int
		wantRefreshes int
		wantRequests  int
		wantAuthLast  string
	}{
		{"401 refreshed then OK", probeSpec{token: "stale", fixTo: "good"}, nil, "", 200, 1, 2, "Bearer good"},
		{"401 twice: refresh once", probeSpec{token: "stale", fixTo: "still-stale"}, nil, engine.CodeUnauthorized, 401, 1, 2, "Bearer still-stale"},
		{"refresh fails", probeSpec{token: "stale", fail: true}, nil, engine.CodeUnauthorized, 401, 1, 1, "Bearer stale"},
		{"no token: no header", probeSpec{token: "", fail: true}, nil, engine.CodeUnauthorized, 401, 1, 1, ""},
		{"valid token", probeSpec{token: "good"}, nil, "", 200, 0, 1, "Bearer good"},
		{"403 no refresh", probeSpec{token: "good"}, tc.Forbid, engine.CodeForbidden, 403, 0, 1, "Bearer good"},
		{"429 no refresh", probeSpec{token: "good"}, tc.Limited, engine.CodeRateLimited, 429, 0, 1, "Bearer good"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := setup(t)
			probe := &testauth.Token{Value: tt.probe.token, FixTo: tt.probe.fixTo, Fail: tt.probe.fail}
			c := env.client(t, clientx.WithAuth(probe.Auth()))
			var code string
			var status int
			if tt.flow == nil {
				res := clientx.Call(ctxT(t), c, tc.Me, tc.Empty{})
				if res.Error == nil && res.Data.ID != "u1" {
					t.Fatalf("me = %+v", res.Data)
				}
				code, status = codeOf(res.Error), res.Status
			} else {
				res := clientx.Call(ctxT(t), c, tt.flow, tc.Empty{})
				code, status = codeOf(res.Error), res.Status
			}
			if code != tt.wantCode || status != tt.wantStatus {
				t.Fatalf("got %q/%d, want %q/%d", code, status, tt.wantCode, tt.wantStatus)
			}
			reqs := env.rec.all()
			if probe.Refreshes() != tt.wantRefreshes || len(reqs) != tt.wantRequests {
				t.Fatalf("%d refreshes and %d requests, want %d and %d", probe.Refreshes(), len(reqs), tt.wantRefreshes, tt.wantRequests)
			}
			if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != tt.wantAuthLast {
				t.Fatalf("last Authorization %q, want %q", got, tt.wantAuthLast)
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

// TestHeaders checks static headers on every request and the getter called once per
// attempt, retries included.
func TestHeaders(t *testing.T) {
	t.Parallel()
	var at attempts
	var got []http.Header
	var mu sync.Mutex
	url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		if at.add() == 2 {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(internalEnvelope))
			return
		}
		_, _ = w.Write([]byte(`{"data":{},"error":null}`))
	})
	var calls atomic.Int32
	c, err := clientx.New(url,
		clientx.WithHeaders(http.Header{"X-Static": {"s"}, "X-Override": {"static"}}),
		clientx.WithHeaderFunc(func(context.Context) (http.Header, error) {
			n := calls.Add(1)
			return http.Header{"X-Req": {strconv.Itoa(int(n))}, "X-Override": {"dynamic"}}, nil
		}),
		clientx.WithRetry(clientx.Retry{Retries: 1, Delay: time.Millisecond}),
	)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wantOK(t, c.Call(ctxT(t), "math.add", nil))
	}
	if calls.Load() != 3 || len(got) != 3 {
		t.Fatalf("getter ran %d times for %d requests, want 3 and 3", calls.Load(), len(got))
	}
	for i, h := range got {
		if h.Get("X-Static") != "s" || h.Get("X-Req") != strconv.Itoa(i+1) || h.Get("X-Override") != "dynamic" {
			t.Errorf("request %d headers %v", i+1, h)
		}
	}

	// A failing getter fails the call before anything is sent.
	before := len(at.get())
	c, _ = clientx.New(url, clientx.WithHeaderFunc(func(context.Context) (http.Header, error) {
		return nil, errors.New("no session")
	}))
	res := c.Call(ctxT(t), "math.add", nil)
	wantCode(t, res, engine.CodeTransportError, 0)
	if !strings.Contains(res.Error.Message(), "no session") || len(at.get()) != before {
		t.Fatalf("message %q, %d requests sent", res.Error.Message(), len(at.get())-before)
	}
}

// TestOptionValidation checks bad option values are errors from New, not surprises
// later.
func TestOptionValidation(t *testing.T) {
	t.Parallel()
	okAuth := clientx.Auth{GetToken: func(context.Context) (string, error) { return "", nil }}
	cases := []struct {
		name string
		url  string
		opts []clientx.Option
	}{
		{"bad scheme", "ftp://x", nil},
		{"no host", "http://", nil},
		{"not a URL", "http://a b", nil},
		{"query in base", "http://x/?a=1", nil},
		{"nil doer", "http://x", []clientx.Option{clientx.WithDoer(nil)}},
		{"zero timeout", "http://x", []clientx.Option{clientx.WithTimeout(0)}},
		{"negative retries", "http://x", []clientx.Option{clientx.WithRetry(clientx.Retry{Retries: -1})}},
		{"negative delay", "http://x", []clientx.Option{clientx.WithRetry(clientx.Retry{Delay: -time.Second})}},
		{"shrinking backoff", "http://x", []clientx.Option{clientx.WithRetry(clientx.Retry{Backoff: 0.5})}},
		{"empty auth", "http://x", []clientx.Option{clientx.WithAuth(clientx.Auth{})}},
		{"nil header func", "http://x", []clientx.Option{clientx.WithHeaderFunc(nil)}},
		{"bad route key", "http://x", []clientx.Option{clientx.WithRouteTable(map[string]engine.Route{"add": {Method: "GET", Path: "/a"}})}},
		{"bad route method", "http://x", []clientx.Option{clientx.WithRouteTable(map[string]engine.Route{"m.add": {Method: "TRACE", Path: "/a"}})}},
		{"bad route path", "http://x", []clientx.Option{clientx.WithRoutes(engine.Routes{"m": {"add": {Method: "GET", Path: "a"}}})}},
		{"two auths", "http://x", []clientx.Option{clientx.WithAuth(okAuth), clientx.WithClientAuth(func(*clientx.Client) clientx.Auth { return okAuth })}},
		{"client auth building nothing", "http://x", []clientx.Option{clientx.WithClientAuth(func(*clientx.Client) clientx.Auth { return clientx.Auth{} })}},
	}
	for _, tt := range cases {
		if c, err := clientx.New(tt.url, tt.opts...); err == nil || c != nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
	if _, err := clientx.ForApp(nil, "http://x"); err == nil {
		t.Error("ForApp(nil) succeeded")
	}
	tr := clientx.NewTransport(clientx.WithTimeout(-1))
	if tr.Err() == nil {
		t.Fatal("transport accepted a negative timeout")
	}
	if _, _, _, e := tr.Do(ctxT(t), "GET", "http://127.0.0.1:1/", nil); !clientx.IsTransportError(e) {
		t.Fatalf("Do on a misconfigured transport = %v", e)
	}
}
