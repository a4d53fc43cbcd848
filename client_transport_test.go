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
	tc "github.com/bbc28f59/engine/internal/testcontract"
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
			res := clientx.Call(ctxT(t), c, tc.Add, tc.AddIn{})
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
			if res.Data != (tc.AddOut{}) {
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
	res := clientx.Call(ctxT(t), c, tc.Add, tc.AddIn{})
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
