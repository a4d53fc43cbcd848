package engine_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	"github.com/bbc28f59/engine/internal/testauth"
)

// TestTransportErrors checks every reply that is not a result envelope becomes a
// TransportError carrying the HTTP status, while real envelopes never do.
func TestTransportErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantMsg     string
	}{
		{"non-JSON", 200, "text/plain", "hello", "non-JSON response"},
		{"HTML gateway error", 502, "text/html", "<html>bad gateway</html>", "non-JSON response"},
		{"empty error response", 500, "", "", "empty error response"},
		{"empty success", 200, "application/json", "", "empty response"},
		{"JSON without envelope", 500, "application/json", `{"message":"oops"}`, "without a {data, error} envelope"},
		{"data only", 200, "application/json", `{"data":{"sum":1}}`, "without a {data, error} envelope"},
		{"JSON array", 200, "application/json", `[1,2]`, "non-JSON response"},
		{"401 without envelope", 401, "text/plain", "Unauthorized", "non-JSON response"},
		{"malformed error object", 400, "application/json", `{"data":null,"error":"bad"}`, "malformed error object"},
		{"error without code", 400, "application/json", `{"data":null,"error":{"data":{}}}`, "malformed error object"},
		{"success envelope on 500", 500, "application/json", `{"data":{},"error":null}`, "success envelope"},
		{"data of the wrong type", 200, "application/json", `{"data":{"sum":"x"},"error":null}`, "decoding data"},
		{"event stream", 200, "text/event-stream; charset=utf-8", "data: {}\n\n", "use the streaming call"},
		{"event stream in capitals", 200, "Text/Event-Stream", "data: {}\n\n", "use the streaming call"},
		{"not quite an event stream", 200, "text/event-streams", "data: {}\n\n", "non-JSON response"},
		{"event stream on an error status", 500, "text/event-stream", "data: {}\n\n", "non-JSON response"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			c, err := clientx.New(url)
			if err != nil {
				t.Fatal(err)
			}
			res := clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{})
			wantCode(t, res, engine.CodeTransportError, tt.status)
			if !clientx.IsTransportError(res.Error) {
				t.Fatal("IsTransportError is false")
			}
			d := dataOf(t, res.Error)
			if msg, _ := d["message"].(string); !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("message %q, want it to contain %q", msg, tt.wantMsg)
			}
			if d["status"] != float64(tt.status) {
				t.Fatalf("data.status %v, want %d", d["status"], tt.status)
			}
			if res.Data != (contract.AddOut{}) {
				t.Fatalf("failed result has data %+v", res.Data)
			}
		})
	}
}

// TestTransport401WithoutEnvelope checks the spec's item 5: a bare 401 still runs the
// refresh once, and then is a TransportError with status 401.
func TestTransport401WithoutEnvelope(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	})
	var refreshes atomic.Int32
	c, err := clientx.New(url, clientx.WithAuth(clientx.Auth{Refresh: func(context.Context) error { refreshes.Add(1); return nil }}))
	if err != nil {
		t.Fatal(err)
	}
	res := c.Call(ctxT(t), "math.add", nil)
	wantCode(t, res, engine.CodeTransportError, http.StatusUnauthorized)
	if dataOf(t, res.Error)["status"] != float64(401) || refreshes.Load() != 1 || hits.Load() != 2 {
		t.Fatalf("data %s, %d refreshes, %d requests", res.Error.Data, refreshes.Load(), hits.Load())
	}
}

// TestConnectionRefused checks a network failure is a TransportError without status.
func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c, err := clientx.New("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	res := clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{})
	wantCode(t, res, engine.CodeTransportError, 0)
	d := dataOf(t, res.Error)
	if msg, _ := d["message"].(string); !strings.Contains(msg, "network failure") {
		t.Fatalf("message %q", msg)
	}
	if _, has := d["status"]; has {
		t.Fatalf("data.status present: %s", res.Error.Data)
	}
}

// TestEnvelopeCodesNeverTransport checks framework and declared codes pass through as
// they are, even with statuses that a transport problem would also have.
func TestEnvelopeCodesNeverTransport(t *testing.T) {
	t.Parallel()
	url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(`{"data":null,"error":{"code":"UpstreamDown","data":{"service":"x"}}}`))
	})
	c, err := clientx.New(url)
	if err != nil {
		t.Fatal(err)
	}
	res := c.Call(ctxT(t), "math.add", nil)
	wantCode(t, res, "UpstreamDown", http.StatusBadGateway)
	if dataOf(t, res.Error)["service"] != "x" {
		t.Fatalf("data %s", res.Error.Data)
	}
}

// TestDoStream checks the transport's raw streaming request: the request header goes on
// top of the transport's own (Accept defaults to text/event-stream), a 2xx event stream
// comes back unread while the server is still writing it, and any other reply comes back
// read, with its status, headers and body; a 401 refreshes once as every call does.
func TestDoStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	url := serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/missing" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"data":null,"error":{"code":"NotFound","data":{}}}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("id: " + r.Header.Get("Last-Event-ID") + "\ndata: " + r.Header.Get("X-App") + " " + r.Header.Get("Accept") + "\n\n"))
		w.(http.Flusher).Flush()
		<-release // the stream is still open when DoStream returns
	})
	defer close(release)
	tk := &testauth.Token{Value: "stale", FixTo: "good"}
	tr := clientx.NewTransport(clientx.WithAuth(tk.Auth()), clientx.WithHeaders(http.Header{"X-App": {"app"}}))
	resp, e := tr.DoStream(ctxT(t), http.MethodGet, url+"/stream", http.Header{"Last-Event-ID": {"7"}}, nil)
	if e != nil {
		t.Fatal(e)
	}
	defer resp.Body.Close()
	frame := make([]byte, 64)
	n, _ := resp.Body.Read(frame)
	if resp.StatusCode != 200 || string(frame[:n]) != "id: 7\ndata: app text/event-stream\n\n" || tk.Refreshes() != 1 {
		t.Fatalf("stream: HTTP %d %q after %d refreshes", resp.StatusCode, frame[:n], tk.Refreshes())
	}
	missing, e := tr.DoStream(ctxT(t), http.MethodGet, url+"/missing", nil, nil)
	if e != nil {
		t.Fatal(e)
	}
	if body := readAll(t, missing); missing.StatusCode != 404 || body != `{"data":null,"error":{"code":"NotFound","data":{}}}` || missing.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("a reply that is no stream: HTTP %d %s", missing.StatusCode, body)
	}
	if _, e := tr.DoStream(ctxT(t), http.MethodGet, "http://127.0.0.1:1/nothing", nil, nil); !clientx.IsTransportError(e) {
		t.Fatalf("no server: %v, want a TransportError", e)
	}
}
