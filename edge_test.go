package engine_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
)

var edgeUnit = engine.NewUnit("edge")

type EchoBody struct {
	Text string `json:"text"`
}

var edgeEcho = engine.Define[EchoBody, EchoBody](edgeUnit, "echo", engine.POST("/edge/echo"), engine.Public())

// edgeServer serves an app with the echo flow and counts the calls that reached it.
func edgeServer(t *testing.T, opts ...engine.Option) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	opts = append([]engine.Option{engine.WithLogger(discardLogger()), engine.Bind(edgeEcho, func(_ *engine.Fx, in EchoBody) (EchoBody, error) {
		calls.Add(1)
		return in, nil
	})}, opts...)
	app, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(app.Handler())
	srv.Config = engine.NewServer("", app.Handler())
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &calls
}

// rawExchange writes head (and then body) on a new connection and returns the status
// line and body of the reply, or "closed" when the server closed the connection
// without one. It fails the test when nothing happens within 10 s: a hang.
func rawExchange(t *testing.T, addr, head, body string) (status string, reply string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, head+body); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("no reply within 10 s: the request hangs")
		}
		return "closed", ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.Status, string(b)
}

func TestABodyOverTheLimitIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t)
	addr := strings.TrimPrefix(srv.URL, "http://")
	// 10 GiB announced, nothing sent: the answer comes at once.
	status, reply := rawExchange(t, addr, "POST /edge/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10737418240\r\n\r\n", "")
	if !strings.HasPrefix(status, "413") || !strings.Contains(reply, `"PayloadTooLarge"`) {
		t.Fatalf("reply %s %s, want 413 PayloadTooLarge", status, reply)
	}
	if calls.Load() != 0 {
		t.Fatal("the flow ran")
	}
}

func TestABodyThatDoesNotArriveInTimeIsARequestTimeout(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t, engine.WithBodyTimeout(200*time.Millisecond))
	expectBodyTimeout(t, srv, calls)
	// A body that arrives in time is served as usual.
	res, err := http.Post(srv.URL+"/edge/echo", "application/json", strings.NewReader(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"hi"`) {
		t.Fatalf("a prompt body: %d %s", res.StatusCode, b)
	}
}

// expectBodyTimeout sends a body that stops short of its length and expects 408
// RequestTimeout, with the flow never run.
func expectBodyTimeout(t *testing.T, srv *httptest.Server, calls *atomic.Int64) {
	t.Helper()
	addr := strings.TrimPrefix(srv.URL, "http://")
	// 100 bytes announced, 6 sent, then silence.
	status, reply := rawExchange(t, addr, "POST /edge/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", `{"tex`)
	if !strings.HasPrefix(status, "408") || !strings.Contains(reply, `"RequestTimeout"`) {
		t.Fatalf("reply %s %s, want 408 RequestTimeout", status, reply)
	}
	if calls.Load() != 0 {
		t.Fatal("the flow ran")
	}
}

func TestCrossSiteWritesAreRefused(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t, engine.WithTrustedOrigins("https://app.example.com"))
	host := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct {
		name    string
		method  string
		headers map[string]string
		ctype   string
		allowed bool
	}{
		{"a client that is not a browser", http.MethodPost, nil, "application/json", true},
		{"a same-origin page", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": srv.URL}, "application/json", true},
		{"an Origin equal to the host, without Sec-Fetch-Site", http.MethodPost, map[string]string{"Origin": "http://" + host}, "application/json", true},
		{"a trusted origin", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://app.example.com"}, "application/json", true},
		{"a cross-site JSON write", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "application/json", false},
		{"a cross-site form post", http.MethodPost, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, "application/x-www-form-urlencoded", false},
		{"a cross-site text/plain post from an older browser", http.MethodPost, map[string]string{"Origin": "https://evil.example"}, "text/plain", false},
		{"a same-site but cross-origin write", http.MethodPost, map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://other.example.com"}, "application/json", false},
	}
	for _, c := range cases {
		before := calls.Load()
		req, _ := http.NewRequest(c.method, srv.URL+"/edge/echo", strings.NewReader(`{"text":"x"}`))
		req.Header.Set("Content-Type", c.ctype)
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		ran := calls.Load() > before
		if c.allowed {
			if !ran || res.StatusCode == http.StatusForbidden {
				t.Errorf("%s: %d %s, want it served", c.name, res.StatusCode, b)
			}
			continue
		}
		var env struct {
			Error struct {
				Code string `json:"code"`
				Data struct {
					Gate, Reason string
				} `json:"data"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &env)
		if ran || res.StatusCode != http.StatusForbidden || env.Error.Code != "Forbidden" || env.Error.Data.Gate != "origin" || env.Error.Data.Reason == "" {
			t.Errorf("%s: %d %s (flow ran: %v), want 403 Forbidden {gate: origin} and no call", c.name, res.StatusCode, b, ran)
		}
	}
	// Reads are never refused: a cross-site GET reaches the router (404 here: no GET route).
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/edge/echo", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusForbidden {
		t.Fatal("a cross-site GET was refused")
	}
}

func TestCrossOriginProtectionCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	srv, calls := edgeServer(t, engine.WithCrossOriginProtection(nil))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/edge/echo", strings.NewReader(`{"text":"x"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || calls.Load() != 1 {
		t.Fatalf("with protection off: %d", res.StatusCode)
	}
	if _, err := engine.New(engine.WithCrossOriginProtection(nil), engine.WithTrustedOrigins("https://a.example")); err == nil {
		t.Fatal("trusted origins without protection were accepted")
	}
	if _, err := engine.New(engine.WithTrustedOrigins("not an origin")); err == nil {
		t.Fatal("a malformed trusted origin was accepted")
	}
}

var edgeGated = engine.Define[EchoBody, EchoBody](edgeUnit, "gated", engine.POST("/edge/gated"))

func TestAGatedFlowWithoutAnAuthenticatorIsAnError(t *testing.T) {
	t.Parallel()
	echo := func(_ *engine.Fx, in EchoBody) (EchoBody, error) { return in, nil }
	_, err := engine.New(engine.Bind(edgeGated, echo))
	if err == nil || !strings.Contains(err.Error(), "edge.gated") || !strings.Contains(err.Error(), "authenticator") {
		t.Fatalf("New = %v, want an error naming the flow and the missing authenticator", err)
	}
	if _, err := engine.New(engine.WithAuthenticator(tokenAuth{}), engine.Bind(edgeGated, echo)); err != nil {
		t.Fatalf("with an authenticator: %v", err)
	}
}

func TestNewServerSetsTheRecommendedLimits(t *testing.T) {
	t.Parallel()
	s := engine.NewServer(":8080", http.NotFoundHandler())
	if s.ReadHeaderTimeout != 5*time.Second || s.IdleTimeout != 2*time.Minute || s.MaxHeaderBytes != 64<<10 ||
		s.ReadTimeout != 0 || s.WriteTimeout != 0 || s.Addr != ":8080" {
		t.Fatalf("server = %+v", s)
	}
}
