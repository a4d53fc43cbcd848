package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/internal/testenv"
)

// The desk app of the stream tests: an agent flow that streams its run (gated: it needs
// a signed-in caller), one whose gate refuses everybody, and one that returns its run
// without streaming (deskSummary, which a client that expects a stream declares as one
// by mistake: deskSummaryAsStream).
var (
	deskUnit            = engine.NewUnit("desk")
	deskChat            = engine.DefineStream[DeskIn, agui.Event, ai.RunResult](deskUnit, "chat", engine.POST("/desk/chat"))
	deskLocked          = engine.DefineStream[DeskIn, agui.Event, ai.RunResult](deskUnit, "locked", engine.POST("/desk/locked"))
	deskSummary         = engine.Define[DeskIn, *ai.AgentRun](deskUnit, "summary", engine.POST("/desk/summary"))
	deskSummaryAsStream = engine.DefineStream[DeskIn, agui.Event, ai.RunResult](engine.NewUnit("desk"), "summary", engine.POST("/desk/summary"))
)

// DeskIn is the input of the desk flows; a message is required.
type DeskIn struct {
	Message string `json:"message"`
}

// Validate refuses an empty message, so a call can fail validation.
func (in DeskIn) Validate() error {
	if in.Message == "" {
		return engine.Invalid(engine.ValidationIssue{Path: "message", Message: "required"})
	}
	return nil
}

// deskReply is what the desk's model answers; the message "wait" makes it wait until the
// run is cancelled instead.
const deskReply = "Hello from the desk."

func deskModel() *ai.ModelDef {
	return ai.Model("desk", scripted.Func(func(req ai.Request) scripted.Turn {
		if req.Messages[len(req.Messages)-1].Content == "wait" {
			return scripted.Turn{Text: "never sent", Delay: time.Hour}
		}
		return scripted.Turn{Text: deskReply}
	}), "scripted-1")
}

// deskServer serves the desk app over real HTTP behind a middleware that records every
// request and can answer the next ones with 503.
type deskServer struct {
	*httptest.Server
	app  *engine.App
	fail atomic.Int32 // requests still to answer with 503

	mu   sync.Mutex
	reqs []*http.Request
}

func newDeskServer(t *testing.T) *deskServer {
	t.Helper()
	s, err := serveDesk()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// startDesk serves the desk app for an example: the app, its URL and how to stop it.
func startDesk() (*engine.App, string, func()) {
	s, err := serveDesk()
	if err != nil {
		panic(err)
	}
	return s.app, s.URL, s.Close
}

func serveDesk() (*deskServer, error) {
	assistant := ai.Agent("assistant", deskModel(), ai.Tools(), 0)
	stream := func(fx *engine.Fx, in DeskIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
		return ai.Stream(fx, assistant, in.Message, out, ai.RunOptions{})
	}
	refuse := func(engine.HandlerFunc) engine.HandlerFunc {
		return func(*engine.Fx, any) (any, error) { return nil, engine.Forbidden("desk", "closed") }
	}
	s := &deskServer{}
	var err error
	s.app, err = engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.WithAuthenticator(testenv.BearerAuth{}),
		engine.BindStream(deskChat, stream),
		engine.BindStream(deskLocked, stream, engine.Use(refuse)),
		engine.Bind(deskSummary, func(fx *engine.Fx, in DeskIn) (*ai.AgentRun, error) {
			return ai.Run(fx, assistant, in.Message, ai.RunOptions{})
		}),
	)
	if err != nil {
		return nil, err
	}
	h := s.app.Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		if s.fail.Add(-1) >= 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"data":null,"error":{"code":"Unavailable","data":{"message":"busy"}}}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	return s, nil
}

func (s *deskServer) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The run arrives as the events of a plain text reply, in order, over the flow's REST
// route or over RPC, with the client's token and Accept: text/event-stream.
func TestStreamReadsTheRun(t *testing.T) {
	t.Parallel()
	s := newDeskServer(t)
	good := clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return "good", nil }})
	rest, err := clientx.ForApp(s.app, s.URL, good)
	if err != nil {
		t.Fatal(err)
	}
	rpc, err := clientx.New(s.URL, good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client *clientx.Client
		path   string
	}{{"REST", rest, "/desk/chat"}, {"RPC", rpc, "/_engine/desk/chat"}} {
		t.Run(c.name, func(t *testing.T) {
			var types []string
			var text strings.Builder
			var finished *agui.RunFinished
			for f, err := range agent.Stream(testCtx(t), c.client, deskChat, DeskIn{Message: "hi"}) {
				if err != nil {
					t.Fatalf("after %v: %v", types, err)
				}
				switch ev := f.Event.(type) {
				case agui.TextMessageContent:
					text.WriteString(ev.Delta)
					if types[len(types)-1] == string(ev.Type()) {
						continue // one entry for a run of deltas
					}
				case agui.RunFinished:
					finished = &ev
				}
				types = append(types, string(f.Event.Type()))
			}
			want := "RUN_STARTED STEP_STARTED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED"
			if strings.Join(types, " ") != want {
				t.Fatalf("events %v, want %s", types, want)
			}
			if text.String() != deskReply || finished.Result == nil || finished.Result.StopReason != "completed" {
				t.Fatalf("text %q, RUN_FINISHED %+v", text.String(), finished)
			}
			r := s.requests()[len(s.requests())-1]
			if r.Method != http.MethodPost || r.URL.Path != c.path || r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Authorization") != "Bearer good" {
				t.Fatalf("request %s %s, headers %v", r.Method, r.URL.Path, r.Header)
			}
		})
	}
}

// Before the stream starts, Stream follows the client's rules (one refresh on 401,
// retries on 5xx), and a refusal is the envelope's *engine.Error, never a transport
// error; only a flow that does not stream is one.
func TestStreamBeforeTheStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		token, fixTo  string
		fail          int32 // requests answered 503 first
		flow          *engine.StreamFlow[DeskIn, agui.Event, ai.RunResult]
		in            DeskIn
		wantCode      string // "" for a run
		wantStatus    int
		wantRequests  int
		wantRefreshes int
	}{
		{"signed in", "good", "", 0, deskChat, DeskIn{Message: "hi"}, "", 0, 1, 0},
		{"stale token: refreshed once", "stale", "good", 0, deskChat, DeskIn{Message: "hi"}, "", 0, 2, 1},
		{"503, then retried", "good", "", 1, deskChat, DeskIn{Message: "hi"}, "", 0, 2, 0},
		{"503 past the retries", "good", "", 2, deskChat, DeskIn{Message: "hi"}, "Unavailable", 503, 2, 0},
		{"no session: refreshed once, still 401", "", "", 0, deskChat, DeskIn{Message: "hi"}, engine.CodeUnauthorized, 401, 2, 1},
		{"forbidden", "good", "", 0, deskLocked, DeskIn{Message: "hi"}, engine.CodeForbidden, 403, 1, 0},
		{"invalid input", "good", "", 0, deskChat, DeskIn{}, engine.CodeValidation, 400, 1, 0},
		{"a flow that does not stream", "good", "", 0, deskSummaryAsStream, DeskIn{Message: "hi"}, engine.CodeTransportError, 200, 1, 0},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newDeskServer(t)
			s.fail.Store(tt.fail)
			tk := &testenv.Token{Value: tt.token, FixTo: tt.fixTo}
			c, err := clientx.ForApp(s.app, s.URL, clientx.WithAuth(tk.Auth()), clientx.WithRetry(clientx.Retry{Retries: 1, Delay: time.Millisecond}))
			if err != nil {
				t.Fatal(err)
			}
			var frames int
			var errs []error
			for f, err := range agent.Stream(testCtx(t), c, tt.flow, tt.in) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if f.Event != nil {
					frames++
				}
			}
			if n := len(s.requests()); n != tt.wantRequests || tk.Refreshes() != tt.wantRefreshes {
				t.Fatalf("%d requests and %d refreshes, want %d and %d", n, tk.Refreshes(), tt.wantRequests, tt.wantRefreshes)
			}
			if tt.wantCode == "" {
				if len(errs) > 0 || frames == 0 {
					t.Fatalf("%d frames, errors %v", frames, errs)
				}
				return
			}
			if len(errs) != 1 || frames != 0 {
				t.Fatalf("%d frames and errors %v, want one %s", frames, errs, tt.wantCode)
			}
			var e *engine.Error
			if !errors.As(errs[0], &e) || e.Code != tt.wantCode || e.Status != tt.wantStatus {
				t.Fatalf("error %v (status %d), want %s %d", errs[0], e.Status, tt.wantCode, tt.wantStatus)
			}
			if tt.wantCode != engine.CodeTransportError && clientx.IsTransportError(e) {
				t.Fatalf("a refusal came back as a transport error: %v", e)
			}
		})
	}
}

// Cancelling ctx mid-stream ends the sequence with an error that says so.
func TestStreamEndsWhenCtxEnds(t *testing.T) {
	t.Parallel()
	s := newDeskServer(t)
	c, err := clientx.New(s.URL, clientx.WithHeaders(http.Header{"Authorization": {"Bearer good"}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var last error
	started := false
	for f, err := range agent.Stream(ctx, c, deskChat, DeskIn{Message: "wait"}) {
		if err != nil {
			last = err
			continue
		}
		if f.Event.Type() == agui.TypeRunStarted {
			started = true
			cancel() // the model is waiting: nothing can end the stream but this
		}
	}
	if !started || !errors.Is(last, context.Canceled) {
		t.Fatalf("started %v, last error %v", started, last)
	}
}

// clientx.CallResult on a flow that streams its run gets the run's result alone, as
// JSON: the events are not sent.
func TestCallResultOfAStreamingRun(t *testing.T) {
	t.Parallel()
	s := newDeskServer(t)
	c, err := clientx.ForApp(s.app, s.URL, clientx.WithHeaders(http.Header{"Authorization": {"Bearer good"}}))
	if err != nil {
		t.Fatal(err)
	}
	res := clientx.CallResult(testCtx(t), c, deskChat, DeskIn{Message: "hi"})
	if res.Error != nil || res.Status != http.StatusOK || res.Data.Text != deskReply || res.Data.StopReason != "completed" {
		t.Fatalf("got %+v, error %v (status %d)", res.Data, res.Error, res.Status)
	}
	if r := s.requests()[len(s.requests())-1]; r.Header.Get("Accept") != "application/json" {
		t.Fatalf("Accept %q", r.Header.Get("Accept"))
	}
	if res := clientx.CallResult(testCtx(t), c, deskLocked, DeskIn{Message: "hi"}); !engine.IsCode(res.Error, engine.CodeForbidden) {
		t.Fatalf("a refused call: %v", res.Error)
	}
}
