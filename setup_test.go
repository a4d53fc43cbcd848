package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/conformance/contract"
	"github.com/bbc28f59/engine/internal/testauth"
	tc "github.com/bbc28f59/engine/internal/testcontract"
)

// seen is one request as it reached the server, recorded by [recorder].
type seen struct {
	Method string
	Path   string // escaped
	Query  string // raw
	Body   string
	Header http.Header
}

// recorder is a user middleware that records every request before the app sees it.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: string(body), Header: r.Header.Clone()})
		rc.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (rc *recorder) all() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// last returns the most recent request, failing the test when there is none.
func (rc *recorder) last(t *testing.T) seen {
	t.Helper()
	all := rc.all()
	if len(all) == 0 {
		t.Fatal("no request reached the server")
	}
	return all[len(all)-1]
}

// syncBuffer collects log output written from server goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tokenAuth accepts "Bearer good" and rejects any other token; no header is anonymous.
type tokenAuth = testauth.BearerAuth

// testEnv is a running test app: the server URL, the request recorder and the log.
type testEnv struct {
	app  *engine.App
	url  string
	rec  *recorder
	logs *syncBuffer
}

// contractFlows binds handlers to every flow of the test contract.
func contractFlows() engine.Option {
	echoItem := func(_ *engine.Fx, in tc.Item) (tc.Item, error) { return in, nil }
	return engine.Options(
		engine.Bind(contract.Add, func(_ *engine.Fx, in contract.AddIn) (contract.AddOut, error) {
			return contract.AddOut{Sum: in.A + in.B}, nil
		}),
		engine.Bind(contract.Square, func(_ *engine.Fx, in contract.SquareIn) (contract.SquareOut, error) {
			return contract.SquareOut{N: in.N, Square: in.N * in.N}, nil
		}),
		engine.Bind(contract.Divide, func(_ *engine.Fx, in contract.DivideIn) (contract.DivideOut, error) {
			if in.B == 0 {
				return contract.DivideOut{}, contract.DivideByZero.New(contract.DivideByZeroData{Dividend: in.A})
			}
			return contract.DivideOut{Quotient: in.A / in.B}, nil
		}),
		engine.Bind(contract.Echo, func(_ *engine.Fx, in map[string]any) (map[string]any, error) { return in, nil }),
		engine.Bind(contract.Search, func(_ *engine.Fx, in contract.SearchIn) (contract.SearchOut, error) {
			return contract.SearchOut(in), nil
		}),

		engine.Bind(tc.Get, func(_ *engine.Fx, in tc.ItemQuery) (tc.ItemQuery, error) { return in, nil }),
		engine.Bind(tc.ByName, func(_ *engine.Fx, in tc.NameIn) (tc.NameIn, error) { return in, nil }),
		engine.Bind(tc.Create, echoItem),
		engine.Bind(tc.Update, echoItem),
		engine.Bind(tc.Replace, echoItem),
		engine.Bind(tc.Remove, func(_ *engine.Fx, in tc.RemoveIn) (engine.NoContent, error) {
			if in.ID == 404 {
				return engine.NoContent{}, engine.NotFound("item %d", in.ID)
			}
			return engine.NoContent{}, nil
		}),
		engine.Bind(tc.Exists, func(_ *engine.Fx, in tc.ExistsIn) (tc.ExistsOut, error) {
			if in.ID == 404 {
				return tc.ExistsOut{}, engine.NotFound("item %d", in.ID)
			}
			return tc.ExistsOut{Exists: true}, nil
		}),
		engine.Bind(tc.Page, func(fx *engine.Fx, in tc.PageIn) ([]tc.Item, error) {
			start, _ := strconv.Atoi(in.Cursor)
			limit := in.Limit
			if limit == 0 {
				limit = 2
			}
			var out []tc.Item
			for i := start; i < start+limit && i < 5; i++ {
				out = append(out, tc.Item{ID: int64(i + 1), Name: "item-" + strconv.Itoa(i+1)})
			}
			if start+limit < 5 {
				fx.SetMeta("nextCursor", strconv.Itoa(start+limit))
			}
			return out, nil
		}),

		engine.Bind(tc.Boom, func(*engine.Fx, tc.Empty) (tc.Empty, error) {
			return tc.Empty{}, errors.New("db password hunter2 rejected")
		}),
		engine.Bind(tc.Undeclared, func(*engine.Fx, tc.Empty) (tc.Empty, error) {
			return tc.Empty{}, engine.NewError("SecretCode", map[string]any{"message": "leaky detail"})
		}),
		engine.Bind(tc.Panic, func(*engine.Fx, tc.Empty) (tc.Empty, error) { panic("panic detail hunter2") }),
		engine.Bind(tc.Slow, func(fx *engine.Fx, _ tc.Empty) (tc.Empty, error) {
			<-fx.Context().Done()
			return tc.Empty{}, fx.Context().Err()
		}),
		engine.Bind(tc.Me, func(fx *engine.Fx, _ tc.Empty) (tc.Whoami, error) { return tc.Whoami{ID: fx.Principal().ID}, nil }),
		engine.Bind(tc.Forbid, func(*engine.Fx, tc.Empty) (tc.Empty, error) {
			return tc.Empty{}, engine.Forbidden("policy", "not yours")
		}),
		engine.Bind(tc.Limited, func(*engine.Fx, tc.Empty) (tc.Empty, error) {
			return tc.Empty{}, engine.RateLimited(1500)
		}),
	)
}

// newApp builds the contract app with a captured log and the test authenticator.
func newApp(t testing.TB, logs io.Writer, opts ...engine.Option) *engine.App {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	base := []engine.Option{
		contractFlows(),
		engine.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
		engine.WithAuthenticator(tokenAuth{}),
	}
	app, err := engine.New(append(base, opts...)...)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	return app
}

// setup serves the contract app over real HTTP behind the request recorder.
func setup(t *testing.T, opts ...engine.Option) *testEnv {
	t.Helper()
	env := &testEnv{rec: &recorder{}, logs: &syncBuffer{}}
	env.app = newApp(t, env.logs, opts...)
	srv := httptest.NewServer(env.rec.wrap(env.app.Handler()))
	t.Cleanup(srv.Close)
	env.url = srv.URL
	return env
}

// client builds a client of the env's app from the app value.
func (e *testEnv) client(t *testing.T, opts ...clientx.Option) *clientx.Client {
	t.Helper()
	c, err := clientx.ForApp(e.app, e.url, opts...)
	if err != nil {
		t.Fatalf("clientx.ForApp: %v", err)
	}
	return c
}

// rpcClient builds a client without routes: every call goes to RPC.
func (e *testEnv) rpcClient(t *testing.T, opts ...clientx.Option) *clientx.Client {
	t.Helper()
	c, err := clientx.New(e.url, opts...)
	if err != nil {
		t.Fatalf("clientx.New: %v", err)
	}
	return c
}

// serveRaw serves a plain handler, for servers that misbehave.
func serveRaw(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// ctxT returns a context bounded well beyond any test's need, so a bug hangs no test.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantOK fails unless r succeeded.
func wantOK[T any](t *testing.T, r clientx.Result[T]) T {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("call failed: %v (status %d, data %s)", r.Error, r.Status, r.Error.Data)
	}
	return r.Data
}

// wantCode fails unless r failed with code and HTTP status.
func wantCode[T any](t *testing.T, r clientx.Result[T], code string, status int) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("call succeeded with %+v, want %s", r.Data, code)
	}
	if r.Error.Code != code || r.Status != status {
		t.Fatalf("got %s (status %d, data %s), want %s (status %d)", r.Error.Code, r.Status, r.Error.Data, code, status)
	}
}

// dataOf decodes an error's raw payload into a generic map.
func dataOf(t *testing.T, e *engine.Error) map[string]any {
	t.Helper()
	var m map[string]any
	raw, ok := e.Data.(json.RawMessage)
	if !ok {
		t.Fatalf("error data is %T, want json.RawMessage", e.Data)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("error data %s: %v", raw, err)
	}
	return m
}

// contains reports whether s has sub, for log and message checks.
func contains(s, sub string) bool { return strings.Contains(s, sub) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
