package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// decisionServer answers the approval routes with scripted replies, one per request
// (the last one repeats), and records what it received.
type decisionServer struct {
	*httptest.Server
	mu      sync.Mutex
	replies []cannedReply
	paths   []string
	bodies  []map[string]any
	auth    []string
}

type cannedReply struct {
	status int
	header map[string]string
	body   string
}

func newDecisionServer(t *testing.T, replies ...cannedReply) *decisionServer {
	t.Helper()
	s := &decisionServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		s.mu.Lock()
		n := len(s.paths)
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		s.bodies = append(s.bodies, body)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		rep := s.replies[min(n, len(s.replies)-1)]
		s.mu.Unlock()
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *decisionServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.paths)
}

func newClient(t *testing.T, url string, opts ...clientx.Option) *clientx.Client {
	t.Helper()
	c, err := clientx.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	okReply       = cannedReply{200, nil, `{"data":{"ok":true},"error":null}`}
	conflictReply = cannedReply{409, nil, `{"data":null,"error":{"code":"Conflict","data":{"message":"the value is already in use"}}}`}
	busyReply     = cannedReply{409, map[string]string{"Retry-After": "0"}, `{"data":null,"error":{"code":"JournalLeaseBusy","data":{"message":"locked","retryAfterMs":0}}}`}
)

func TestApproveSendsTheDecision(t *testing.T) {
	t.Parallel()
	s := newDecisionServer(t, okReply)
	c := newClient(t, s.URL+"/api", clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return "tok", nil }}))
	ctx := context.Background()
	if err := agent.Approve(ctx, c, "aWQ", map[string]any{"amount": 5}); err != nil {
		t.Fatal(err)
	}
	if err := agent.Approve(ctx, c, "aWQ", nil); err != nil {
		t.Fatal(err)
	}
	if err := agent.Deny(ctx, c, "aWQ", "no"); err != nil {
		t.Fatal(err)
	}
	if err := agent.Deny(ctx, c, "aWQ", ""); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		path string
		body string
	}{
		{"POST /api/agent/approvals/approve", `{"args":{"amount":5},"id":"aWQ"}`},
		{"POST /api/agent/approvals/approve", `{"id":"aWQ"}`},
		{"POST /api/agent/approvals/deny", `{"id":"aWQ","reason":"no"}`},
		{"POST /api/agent/approvals/deny", `{"id":"aWQ"}`},
	}
	for i, w := range want {
		got, _ := json.Marshal(s.bodies[i])
		if s.paths[i] != w.path || string(got) != w.body || s.auth[i] != "Bearer tok" {
			t.Errorf("request %d: %s %s (auth %q), want %s %s", i, s.paths[i], got, s.auth[i], w.path, w.body)
		}
	}
}

func TestApproveConflictIsNotRetried(t *testing.T) {
	t.Parallel()
	s := newDecisionServer(t, conflictReply, okReply)
	err := agent.Approve(context.Background(), newClient(t, s.URL), "aWQ", nil)
	var de *agent.DecisionError
	var ee *engine.Error
	if !errors.Is(err, agent.ErrConflict) || !errors.As(err, &de) || !errors.As(err, &ee) || ee.Code != engine.CodeConflict || ee.Status != 409 {
		t.Fatalf("err = %v, want ErrConflict carrying the Conflict error", err)
	}
	if s.count() != 1 {
		t.Fatalf("%d requests, want 1", s.count())
	}
}

func TestApproveRetriesLeaseBusy(t *testing.T) {
	t.Parallel()
	s := newDecisionServer(t, busyReply, busyReply, okReply)
	if err := agent.Deny(context.Background(), newClient(t, s.URL), "aWQ", "r"); err != nil {
		t.Fatal(err)
	}
	if s.count() != 3 {
		t.Fatalf("%d requests, want 3", s.count())
	}
}

// A Retry-After longer than the caller's patience is waited for, not hammered: the
// context ends the wait after one request.
func TestApproveHonoursRetryAfterWithinContext(t *testing.T) {
	t.Parallel()
	for _, header := range []string{"30", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)} {
		busy := cannedReply{409, map[string]string{"Retry-After": header}, busyReply.body}
		s := newDecisionServer(t, busy, okReply)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := agent.Approve(ctx, newClient(t, s.URL), "aWQ", nil)
		cancel()
		var ee *engine.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ee) || ee.Code != engine.CodeJournalLeaseBusy {
			t.Fatalf("Retry-After %q: err = %v, want the deadline and JournalLeaseBusy", header, err)
		}
		if s.count() != 1 {
			t.Fatalf("Retry-After %q: %d requests before the deadline, want 1", header, s.count())
		}
	}
}

func TestApproveErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		reply  cannedReply
		code   string
		status int
	}{
		{"not found", cannedReply{404, nil, `{"data":null,"error":{"code":"NotFound","data":{"message":"no approval"}}}`}, engine.CodeNotFound, 404},
		{"forbidden", cannedReply{403, nil, `{"data":null,"error":{"code":"Forbidden","data":{"gate":"g","reason":"r"}}}`}, engine.CodeForbidden, 403},
		{"validation", cannedReply{400, nil, `{"data":null,"error":{"code":"ValidationError","data":null}}`}, engine.CodeValidation, 400},
		{"not an envelope", cannedReply{502, nil, `bad gateway`}, engine.CodeTransportError, 502},
		{"success envelope on an error status", cannedReply{500, nil, `{"data":{"ok":true},"error":null}`}, engine.CodeTransportError, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newDecisionServer(t, c.reply)
			err := agent.Approve(context.Background(), newClient(t, s.URL), "aWQ", nil)
			var de *agent.DecisionError
			if !errors.As(err, &de) || de.Err.Code != c.code || de.Err.Status != c.status || errors.Is(err, agent.ErrConflict) {
				t.Fatalf("err = %#v, want %s with status %d", err, c.code, c.status)
			}
		})
	}
}

func TestApproveBadInputSendsNothing(t *testing.T) {
	t.Parallel()
	s := newDecisionServer(t, okReply)
	c := newClient(t, s.URL)
	ctx := context.Background()
	checks := map[string]error{
		"empty id":     agent.Approve(ctx, c, "", nil),
		"deny no id":   agent.Deny(ctx, c, "", "r"),
		"invalid args": agent.Approve(ctx, c, "aWQ", json.RawMessage(`{"a":`)),
		"unencodable":  agent.Approve(ctx, c, "aWQ", func() {}),
		"nil client":   agent.Approve(ctx, nil, "aWQ", nil),
	}
	for name, err := range checks {
		var de *agent.DecisionError
		if !errors.As(err, &de) || de.Err.Code != engine.CodeValidation {
			t.Errorf("%s: err = %v, want a ValidationError", name, err)
		}
	}
	if s.count() != 0 {
		t.Fatalf("%d requests were sent", s.count())
	}
}

func TestApproveNetworkFailure(t *testing.T) {
	t.Parallel()
	s := newDecisionServer(t, okReply)
	url := s.URL
	s.Close()
	err := agent.Approve(context.Background(), newClient(t, url), "aWQ", nil)
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Code != engine.CodeTransportError {
		t.Fatalf("err = %v, want TransportError", err)
	}
}
