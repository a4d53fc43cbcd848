package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// logEvents is a stored run log: a parked run, then the resumed run to its end.
var logEvents = []string{
	`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
	`{"type":"STEP_STARTED","stepName":"step-1"}`,
	`{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"bank.transfer"}`,
	`{"type":"TOOL_CALL_END","toolCallId":"c"}`,
	`{"type":"STEP_FINISHED","stepName":"step-1"}`,
	`{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"aWQ","reason":"approval","payload":{"tool":"bank.transfer","args":{}}}]}}`,
	`{"type":"RUN_STARTED","threadId":"t","runId":"r"}`,
	`{"type":"STEP_STARTED","stepName":"step-1"}`,
	`{"type":"TOOL_CALL_RESULT","messageId":"m-1","toolCallId":"c","content":"ok","role":"tool"}`,
	`{"type":"STEP_FINISHED","stepName":"step-1"}`,
	`{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"cost":0,"stopReason":"completed"}}`,
}

// logServer serves logEvents as a follow route. Each connection sends at most perConn
// frames after Last-Event-ID, then ends (abruptly when abort is set); ignoreLastID
// makes it start over from the first row every time (sending perConn more rows than the
// connection before, so a client that drops duplicates still makes progress).
type logServer struct {
	*httptest.Server
	perConn      int
	abort        bool
	ignoreLastID bool

	mu      sync.Mutex
	lastIDs []string
	auth    []string
}

func newLogServer(t *testing.T, perConn int, abort, ignoreLastID bool) *logServer {
	t.Helper()
	s := &logServer{perConn: perConn, abort: abort, ignoreLastID: ignoreLastID}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/agent/runs/r/events" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		conns := len(s.lastIDs)
		s.mu.Unlock()
		after, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
		limit := s.perConn
		if s.ignoreLastID {
			// Replays from the first row, getting perConn rows further each time.
			after, limit = 0, s.perConn*conns
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sent := 0
		for i := after; i < len(logEvents) && sent < limit; i++ {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, logEvents[i])
			sent++
		}
		w.(http.Flusher).Flush()
		if s.abort && after+sent < len(logEvents) {
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *logServer) requests() ([]string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lastIDs...), append([]string(nil), s.auth...)
}

// follow follows run r of the app at base through a client built with opts.
func follow(t *testing.T, ctx context.Context, base string, fo agent.FollowOptions, opts ...clientx.Option) func(func(agent.Frame, error) bool) {
	t.Helper()
	c, err := clientx.New(base, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return agent.Follow(ctx, c, "r", fo)
}

func collect(t *testing.T, seq func(func(agent.Frame, error) bool)) ([]agent.Frame, error) {
	t.Helper()
	var out []agent.Frame
	for f, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

func checkAll(t *testing.T, frames []agent.Frame, from int) {
	t.Helper()
	if len(frames) != len(logEvents)-from {
		t.Fatalf("%d frames, want %d", len(frames), len(logEvents)-from)
	}
	for i, f := range frames {
		if f.Seq != int64(from+i+1) {
			t.Fatalf("frame %d has seq %d, want %d", i, f.Seq, from+i+1)
		}
	}
}

func TestFollowReconnectsWithLastEventID(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		abort        bool
		ignoreLastID bool
	}{{"abrupt drop", true, false}, {"clean end before the run's end", false, false}, {"server ignores Last-Event-ID", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newLogServer(t, 4, c.abort, c.ignoreLastID)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const perConn = 4
			frames, err := collect(t, follow(t, ctx, s.URL, agent.FollowOptions{Backoff: time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			checkAll(t, frames, 0)
			ids, _ := s.requests()
			for i, id := range ids {
				want := ""
				if i > 0 {
					want = strconv.Itoa(min(i*perConn, len(logEvents)))
				}
				if id != want {
					t.Fatalf("request %d sent Last-Event-ID %q, want %q (all %q)", i, id, want, ids)
				}
			}
		})
	}
}

func TestFollowStartsAfterLastEventID(t *testing.T) {
	t.Parallel()
	s := newLogServer(t, 100, false, false)
	frames, err := collect(t, follow(t, context.Background(), s.URL, agent.FollowOptions{LastEventID: 6}))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, frames, 6)
	if ids, _ := s.requests(); len(ids) != 1 || ids[0] != "6" {
		t.Fatalf("requests sent Last-Event-ID %q", ids)
	}
}

// A reconnect that finds nothing new on a stream the server ended means the stream is
// over (the run ended without a final RUN_FINISHED in the log): Follow stops instead of
// reconnecting forever.
func TestFollowStopsWhenReconnectFindsNothing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("Last-Event-ID") == "" {
			fmt.Fprintf(w, "id: 1\ndata: %s\n\n", logEvents[0])
		}
	}))
	t.Cleanup(srv.Close)
	frames, err := collect(t, follow(t, context.Background(), srv.URL, agent.FollowOptions{Backoff: time.Millisecond}))
	if err != nil || len(frames) != 1 {
		t.Fatalf("frames %d, err %v; want the one frame and a clean end", len(frames), err)
	}
}

func TestFollowErrorsAreFinal(t *testing.T) {
	t.Parallel()
	var calls sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimSuffix(r.URL.Path, "/agent/runs/r/events")
		n, _ := calls.LoadOrStore(path, new(int))
		*n.(*int)++
		w.Header().Set("Content-Type", "application/json")
		switch path {
		case "/404":
			w.WriteHeader(404)
			fmt.Fprint(w, `{"data":null,"error":{"code":"NotFound","data":{}}}`)
		case "/503":
			w.WriteHeader(503)
			fmt.Fprint(w, `oops`)
		}
	}))
	t.Cleanup(srv.Close)
	_, err := collect(t, follow(t, context.Background(), srv.URL+"/404", agent.FollowOptions{}))
	var re *agent.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Envelope == nil || re.Envelope.Error.Code != "NotFound" {
		t.Fatalf("404: err = %v", err)
	}
	n, _ := calls.Load("/404")
	if *n.(*int) != 1 {
		t.Fatalf("a 404 was retried: %d requests", *n.(*int))
	}
	_, err = collect(t, follow(t, context.Background(), srv.URL+"/503", agent.FollowOptions{MaxReconnects: 2, Backoff: time.Millisecond}))
	if !errors.As(err, &re) || re.StatusCode != 503 {
		t.Fatalf("503: err = %v", err)
	}
	n, _ = calls.Load("/503")
	if *n.(*int) != 3 {
		t.Fatalf("503: %d requests, want 1 and 2 reconnects", *n.(*int))
	}
	_, err = collect(t, follow(t, context.Background(), srv.URL+"/503", agent.FollowOptions{MaxReconnects: -1}))
	if !errors.As(err, &re) || re.StatusCode != 503 {
		t.Fatalf("503 without reconnects: err = %v", err)
	}
	if _, err := collect(t, agent.Follow(context.Background(), nil, "r", agent.FollowOptions{})); err == nil {
		t.Fatal("a nil client followed without error")
	}
}

func TestFollowAuth(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	token, refreshes := "stale", 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer fresh" || r.Header.Get("X-Extra") != "1" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, ev := range logEvents {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, ev)
		}
	}))
	t.Cleanup(srv.Close)
	auth := clientx.Auth{
		GetToken: func(context.Context) (string, error) { mu.Lock(); defer mu.Unlock(); return token, nil },
		Refresh:  func(context.Context) error { mu.Lock(); defer mu.Unlock(); refreshes++; token = "fresh"; return nil },
	}
	frames, err := collect(t, follow(t, context.Background(), srv.URL, agent.FollowOptions{},
		clientx.WithAuth(auth), clientx.WithHeaders(http.Header{"X-Extra": {"1"}})))
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, frames, 0)
	if refreshes != 1 {
		t.Fatalf("%d refreshes, want 1", refreshes)
	}
	failing := clientx.Auth{GetToken: func(context.Context) (string, error) { return "", errors.New("no session") }}
	if _, err := collect(t, follow(t, context.Background(), srv.URL, agent.FollowOptions{Backoff: time.Millisecond}, clientx.WithAuth(failing))); err == nil || !strings.Contains(err.Error(), "no session") {
		t.Fatalf("a failing token getter ended the follow with %v, want its error", err)
	}
}

func TestFollowContextEndsTheStream(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": ping\n\nid: 1\ndata: %s\n\n: ping\n\n", logEvents[0])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a parked run: heartbeats only, nothing more for now
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []agent.Frame
	var final error
	for f, err := range follow(t, ctx, srv.URL, agent.FollowOptions{}) {
		if err != nil {
			final = err
			break
		}
		got = append(got, f)
		cancel()
	}
	if len(got) != 1 || !errors.Is(final, context.Canceled) {
		t.Fatalf("frames %d, err %v; want one frame then context.Canceled", len(got), final)
	}
}

func TestFollowStopsWhenCallerBreaks(t *testing.T) {
	t.Parallel()
	s := newLogServer(t, 100, false, false)
	n := 0
	for _, err := range follow(t, context.Background(), s.URL, agent.FollowOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	if ids, _ := s.requests(); n != 2 || len(ids) != 1 {
		t.Fatalf("read %d frames over %d requests", n, len(ids))
	}
}

func TestFollowURL(t *testing.T) {
	t.Parallel()
	if got := agent.FollowURL("http://h/api/", "run 1"); got != "http://h/api/agent/runs/run%201/events" {
		t.Fatalf("FollowURL = %s", got)
	}
}
