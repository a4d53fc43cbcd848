package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"
)

// TestHTTPEdge checks the rows of "The HTTP edge" that are the app's own (the sign-in
// rows are in auth_gate_test.go) against a real process: bodies over the limit or too
// slow, cross-origin writes, and the server's header timeout.
func TestHTTPEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the edge test builds and starts the app")
	}
	bin := testenv.Build(t, ".")
	in := startInstance(t, bin, "edge", []string{"ENGINE_JOURNAL=memory", "ENGINE_BODY_TIMEOUT=300ms",
		"ENGINE_TRUSTED_ORIGINS=https://console.example.com, https://app.example.com"})
	addr := strings.TrimPrefix(in.URL, "http://")

	exchange := func(t *testing.T, request string) (int, string) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.WriteString(conn, request); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("no answer and no close within 20 s: a hang")
			}
			return 0, "closed"
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}

	t.Run("body over the limit", func(t *testing.T) {
		status, body := exchange(t, "POST /_engine/math/add HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n")
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"PayloadTooLarge"`) {
			t.Fatalf("%d %s, want 413 PayloadTooLarge at once", status, body)
		}
	})
	t.Run("body too slow", func(t *testing.T) {
		status, body := exchange(t, "POST /_engine/math/add HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":1")
		if status != http.StatusRequestTimeout || !strings.Contains(body, `"RequestTimeout"`) {
			t.Fatalf("%d %s, want 408 RequestTimeout", status, body)
		}
	})
	t.Run("header too slow", func(t *testing.T) {
		start := time.Now()
		status, _ := exchange(t, "POST /_engine/math/add HTTP/1.1\r\nHost: "+addr+"\r\n")
		if status != 0 && status != http.StatusRequestTimeout {
			t.Fatalf("an unfinished header got %d", status)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("the connection was held %s", d)
		}
	})
	t.Run("cross-origin writes", func(t *testing.T) {
		for _, c := range []struct {
			origin, site string
			want         int
		}{
			{"", "", http.StatusOK},                                      // curl, another server
			{"https://app.example.com", "cross-site", http.StatusOK},     // trusted
			{"https://console.example.com", "cross-site", http.StatusOK}, // trusted
			{"https://evil.example", "cross-site", http.StatusForbidden}, // any other page
			{"https://evil.example", "", http.StatusForbidden},           // an older browser
			{in.URL, "same-origin", http.StatusOK},                       // the app's own pages
			{"https://evil.example", "same-site", http.StatusForbidden},  // a sibling subdomain
			{"null", "cross-site", http.StatusForbidden},                 // a sandboxed frame
		} {
			req, _ := http.NewRequest(http.MethodPost, in.URL+"/_engine/math/add", strings.NewReader(`{"a":1,"b":2}`))
			req.Header.Set("Content-Type", "text/plain") // what a form or fetch without preflight sends
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.site != "" {
				req.Header.Set("Sec-Fetch-Site", c.site)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != c.want || c.want == http.StatusForbidden && !strings.Contains(string(b), `"gate":"origin"`) {
				t.Errorf("Origin %q, Sec-Fetch-Site %q: %d %s, want %d", c.origin, c.site, res.StatusCode, b, c.want)
			}
		}
	})
}
