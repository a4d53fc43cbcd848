package engine_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
)

// postSlowly posts body to url in two pieces 100 ms apart (chunked, so the server
// must read the connection again after the headers) and returns status and reply.
func postSlowly(t *testing.T, url, first, rest string) (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, first)
		time.Sleep(100 * time.Millisecond)
		_, _ = io.WriteString(pw, rest)
		_ = pw.Close()
	}()
	res, err := http.Post(url, "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A negative body timeout turns the deadline off: a body that trickles in is read.
func TestANegativeBodyTimeoutTurnsTheDeadlineOff(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t, engine.WithBodyTimeout(-1))
	status, reply := postSlowly(t, srv.URL+"/edge/echo", `{"te`, `xt":"late"}`)
	if status != http.StatusOK || !strings.Contains(reply, `"late"`) || calls.Load() != 1 {
		t.Fatalf("reply %d %s after %d calls, want 200 with the body", status, reply, calls.Load())
	}
}

// A body that breaks off in a way that is neither too large nor too slow (here a bad
// chunk) is a ValidationError naming the read failure.
func TestABrokenBodyIsAValidationError(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	status, reply := rawExchange(t, addr, "POST /edge/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", "zz\r\n{}\r\n0\r\n\r\n")
	if !strings.HasPrefix(status, "400") || !strings.Contains(reply, `"ValidationError"`) || !strings.Contains(reply, "reading request body: ") || calls.Load() != 0 {
		t.Fatalf("reply %s %s after %d calls, want 400 ValidationError", status, reply, calls.Load())
	}
}

// wrappedWriter is what a logging or metrics middleware hands the handler in place of
// net/http's writer, reachable through Unwrap.
type wrappedWriter struct{ http.ResponseWriter }

func (w wrappedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The body deadline reaches the connection through a middleware's writer too.
func TestTheBodyDeadlineReachesThroughAWrappedWriter(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t, engine.WithBodyTimeout(200*time.Millisecond))
	h := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(wrappedWriter{w}, r)
	})
	expectBodyTimeout(t, srv, calls)
}

// deadlineRecorder is a writer that takes read deadlines, as net/http's does, and keeps
// each one it is given.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// Without WithBodyTimeout, a body must arrive within DefaultBodyTimeout: the deadline is
// set that far ahead before the body is read, and cleared once it has been.
func TestTheDefaultBodyTimeout(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t)
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	before := time.Now()
	srv.Config.Handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/edge/echo", strings.NewReader(`{"text":"x"}`)))
	after := time.Now()
	if w.Code != http.StatusOK || calls.Load() != 1 || len(w.deadlines) != 2 || !w.deadlines[1].IsZero() {
		t.Fatalf("HTTP %d after %d calls, deadlines %v; want 200, one call, a deadline and its clearing", w.Code, calls.Load(), w.deadlines)
	}
	if d := w.deadlines[0]; d.Before(before.Add(engine.DefaultBodyTimeout)) || d.After(after.Add(engine.DefaultBodyTimeout)) {
		t.Fatalf("deadline %v, want DefaultBodyTimeout (%v) after the request", d, engine.DefaultBodyTimeout)
	}
}
