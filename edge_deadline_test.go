package engine_test

import (
	"io"
	"net/http"
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
