package clientx_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/clientx"
)

// TestInProcessStreams checks the body arrives as the handler flushes it, before the
// handler returns, as server-sent events need.
func TestInProcessStreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	d := clientx.InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://app/stream", nil)
	resp, err := d.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d header %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(release) // only now may the handler go on: the first frame came while it waited
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: two\n\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// TestInProcessRequest checks what the handler sees and what the client gets back.
func TestInProcessRequest(t *testing.T) {
	t.Parallel()
	d := clientx.InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.URL.Path+" "+r.URL.RawQuery+" "+r.Host+" "+string(body)+" "+r.RequestURI)
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	}))
	req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://app/x/y?q=1", strings.NewReader("hi"))
	resp, err := d.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || string(body) != "short and stout" || resp.Header.Get("X-Seen") != "POST /x/y q=1 app hi /x/y?q=1" {
		t.Fatalf("%d %q %q", resp.StatusCode, body, resp.Header.Get("X-Seen"))
	}

	req, _ = http.NewRequestWithContext(t.Context(), "HEAD", "http://app/x", nil)
	resp, err = d.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || len(body) != 0 {
		t.Fatalf("HEAD: %d %q", resp.StatusCode, body)
	}
}

// TestInProcessFailures checks a panic before any output and a cancelled request are
// errors from Do, not hangs.
func TestInProcessFailures(t *testing.T) {
	t.Parallel()
	d := clientx.InProcess(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") }))
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://app/", nil)
	if _, err := d.Do(req); err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("panic: %v", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	d = clientx.InProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	req, _ = http.NewRequestWithContext(ctx, "GET", "http://app/", nil)
	go func() { <-started; cancel() }()
	if _, err := d.Do(req); err == nil {
		t.Fatal("cancelled request succeeded")
	}

	if _, err := clientx.InProcess(nil).Do(req); err == nil {
		t.Fatal("nil handler accepted")
	}
}
