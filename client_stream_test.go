package engine_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/internal/testauth"
)

// sseServer answers every request with an event stream of frames, after the replies
// queued in before (one per request, for failures before the stream), and records what
// it received. A stream waits for hold, when set, before its last frame.
type sseServer struct {
	url    string
	frames []string
	hold   chan struct{}
	gone   chan struct{} // closed when a stream's client went away before its end

	mu     sync.Mutex
	before []scriptedReply
	seen   []seen
}

type scriptedReply struct {
	status      int
	contentType string
	body        string
}

func newSSEServer(t *testing.T, frames ...string) *sseServer {
	t.Helper()
	s := &sseServer{frames: frames, gone: make(chan struct{})}
	var goneOnce sync.Once
	s.url = serveRaw(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen = append(s.seen, seen{Method: r.Method, Path: r.URL.EscapedPath(), Body: string(body), Header: r.Header.Clone()})
		var rep *scriptedReply
		if len(s.before) > 0 {
			rep, s.before = &s.before[0], s.before[1:]
		}
		s.mu.Unlock()
		if rep != nil {
			if rep.contentType != "" {
				w.Header().Set("Content-Type", rep.contentType)
			}
			w.WriteHeader(rep.status)
			_, _ = io.WriteString(w, rep.body)
			return
		}
		w.Header().Set("Content-Type", httpx.SSEContentType)
		rc := http.NewResponseController(w)
		for i, f := range s.frames {
			if i == len(s.frames)-1 && s.hold != nil {
				select {
				case <-s.hold:
				case <-r.Context().Done():
					goneOnce.Do(func() { close(s.gone) })
					return
				}
			}
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, f)
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})
	return s
}

func (s *sseServer) queue(replies ...scriptedReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = append(s.before, replies...)
}

func (s *sseServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

// readData reads the data of every frame of a stream and closes it.
func readData(t *testing.T, resp *http.Response) []string {
	t.Helper()
	defer resp.Body.Close()
	var out []string
	r := httpx.NewSSEReader(resp.Body)
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading the stream after %q: %v", out, err)
		}
		out = append(out, f.Data)
	}
}

// Call on a flow that answers with an event stream says to use the streaming call, and
// hangs up at once instead of reading (and paying for) a whole run: the server sees the
// client go away while its stream is still open.
func TestCallOnAnEventStream(t *testing.T) {
	t.Parallel()
	s := newSSEServer(t, `{"type":"RUN_STARTED"}`, `{"type":"RUN_FINISHED"}`)
	s.hold = make(chan struct{}) // never released: only the client's hang-up ends the stream
	c, err := clientx.New(s.url)
	if err != nil {
		t.Fatal(err)
	}
	res := clientx.Call(ctxT(t), c, contract.Add, contract.AddIn{A: 1})
	wantCode(t, res, engine.CodeTransportError, http.StatusOK)
	msg := res.Error.Message()
	for _, want := range []string{"math.add", "event stream", "use the streaming call", "clientx/agent"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q does not say %q", msg, want)
		}
	}
	select {
	case <-s.gone:
	case <-ctxT(t).Done():
		t.Fatal("Call kept the event stream open")
	}
}

// OpenStream goes where Call goes (REST from the route table, RPC otherwise) with the
// same headers, asks for an event stream, and hands the body over unread.
func TestOpenStreamRoutes(t *testing.T) {
	t.Parallel()
	s := newSSEServer(t, `{"n":1}`, `{"n":2}`)
	c, err := clientx.New(s.url+"/api",
		clientx.WithRouteTable(map[string]engine.Route{"chat.ask": {Method: http.MethodPost, Path: "/rooms/:room/ask"}}),
		clientx.WithHeaders(http.Header{"X-App": {"demo"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		path, wantPath, wantBody string
		in                       any
	}{
		{"chat.ask", "/api/rooms/r1/ask", `{"message":"hi"}`, map[string]string{"room": "r1", "message": "hi"}},
		{"chat.other", "/api/_engine/chat/other", `{"message":"hi"}`, map[string]string{"message": "hi"}},
	} {
		resp, e := c.OpenStream(ctxT(t), call.path, call.in)
		if e != nil {
			t.Fatalf("%s: %v", call.path, e)
		}
		if got := readData(t, resp); strings.Join(got, " ") != `{"n":1} {"n":2}` {
			t.Fatalf("%s: frames %q", call.path, got)
		}
		r := s.requests()[len(s.requests())-1]
		if r.Method != http.MethodPost || r.Path != call.wantPath || r.Body != call.wantBody {
			t.Fatalf("%s: sent %s %s %s", call.path, r.Method, r.Path, r.Body)
		}
		if r.Header.Get("Accept") != httpx.SSEContentType || r.Header.Get("X-App") != "demo" || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: headers %v", call.path, r.Header)
		}
	}
	if _, e := c.OpenStream(ctxT(t), "chat", nil); e == nil || e.Code != engine.CodeIncompletePath {
		t.Fatalf("a path without a flow: %v", e)
	}
}

// Before the stream starts, OpenStream follows the client's rules: one refresh on 401,
// retries on 5xx. A reply that is not a stream comes back as its envelope's error, or a
// TransportError naming what came instead.
func TestOpenStreamBeforeTheStream(t *testing.T) {
	t.Parallel()
	envelope := func(code, data string) string {
		return `{"data":null,"error":{"code":"` + code + `","data":` + data + `}}`
	}
	unauthorized := scriptedReply{401, "application/json", envelope("Unauthorized", "{}")}
	unavailable := scriptedReply{503, "application/json", envelope("Unavailable", `{"message":"busy"}`)}
	cases := []struct {
		name         string
		before       []scriptedReply
		wantCode     string // "" for a stream
		wantStatus   int
		wantMsg      string
		wantRequests int
	}{
		{"401 refreshed once, then the stream", []scriptedReply{unauthorized}, "", 200, "", 2},
		{"401 twice", []scriptedReply{unauthorized, unauthorized}, engine.CodeUnauthorized, 401, "", 2},
		{"5xx retried, then the stream", []scriptedReply{unavailable}, "", 200, "", 2},
		{"5xx past the retries", []scriptedReply{unavailable, unavailable}, "Unavailable", 503, "busy", 2},
		{"forbidden", []scriptedReply{{403, "application/json", envelope("Forbidden", `{"gate":"scopes","reason":"no"}`)}}, engine.CodeForbidden, 403, "", 1},
		{"invalid input", []scriptedReply{{400, "application/json", envelope("ValidationError", `{"message":"message: required"}`)}}, engine.CodeValidation, 400, "message: required", 1},
		{"not an envelope", []scriptedReply{{404, "text/html", "<html>not here</html>"}}, engine.CodeTransportError, 404, "non-JSON response", 1},
		{"a flow that does not stream", []scriptedReply{{200, "application/json", `{"data":{"text":"hi"},"error":null}`}}, engine.CodeTransportError, 200, "does not stream; call it with Call", 1},
		{"a durable flow that parked", []scriptedReply{{202, "application/json", `{"data":null,"error":null,"meta":{"parked":true,"runId":"run_1"}}`}}, engine.CodeTransportError, 202, "run run_1 parked", 1},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSSEServer(t, `{"n":1}`)
			s.queue(tt.before...)
			probe := &testauth.Token{Value: "stale", FixTo: "good"}
			c, err := clientx.New(s.url, clientx.WithAuth(probe.Auth()), clientx.WithRetry(clientx.Retry{Retries: 1, Delay: time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			resp, e := c.OpenStream(ctxT(t), "chat.ask", map[string]string{"message": "hi"})
			if n := len(s.requests()); n != tt.wantRequests {
				t.Fatalf("%d requests, want %d", n, tt.wantRequests)
			}
			if tt.wantCode == "" {
				if e != nil {
					t.Fatalf("no stream: %v", e)
				}
				if got := readData(t, resp); len(got) != 1 || resp.StatusCode != tt.wantStatus {
					t.Fatalf("status %d, frames %q", resp.StatusCode, got)
				}
				return
			}
			if resp != nil || e == nil {
				t.Fatalf("got a stream (%v), want %s", e, tt.wantCode)
			}
			if e.Code != tt.wantCode || e.Status != tt.wantStatus || !strings.Contains(e.Message(), tt.wantMsg) {
				t.Fatalf("got %s %d %q, want %s %d %q", e.Code, e.Status, e.Message(), tt.wantCode, tt.wantStatus, tt.wantMsg)
			}
		})
	}
}

// The client's timeout bounds the wait for a reply, not the stream after it: a stream
// goes on past the timeout, while a server that never answers times out.
func TestOpenStreamTimeoutBoundsTheReplyOnly(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	s := newSSEServer(t, `{"n":1}`, `{"n":2}`)
	s.hold = make(chan struct{})
	c, err := clientx.New(s.url, clientx.WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	resp, e := c.OpenStream(ctxT(t), "chat.ask", nil)
	if e != nil {
		t.Fatal(e)
	}
	defer resp.Body.Close()
	r := httpx.NewSSEReader(resp.Body)
	if f, err := r.Next(); err != nil || f.Data != `{"n":1}` {
		t.Fatalf("first frame %+v, %v", f, err)
	}
	time.Sleep(3 * timeout) // the attempt's timeout would have fired by now
	close(s.hold)
	if f, err := r.Next(); err != nil || f.Data != `{"n":2}` {
		t.Fatalf("the frame after the timeout: %+v, %v", f, err)
	}

	silent := serveRaw(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c, err = clientx.New(silent, clientx.WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	if _, e := c.OpenStream(ctxT(t), "chat.ask", nil); e == nil || e.Code != engine.CodeTransportError || !strings.Contains(e.Message(), "timed out") {
		t.Fatalf("a server that never answers: %v", e)
	}
}
