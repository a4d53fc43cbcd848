package bench_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
)

// newEnv starts an agent harness closed at cleanup, or skips with the reason when the
// driver's database is not configured.
func newEnv(tb testing.TB, opts agentbench.Options) *agentbench.Env {
	tb.Helper()
	e, err := agentbench.New(context.Background(), opts)
	if errors.Is(err, agentbench.ErrNoPostgres) {
		tb.Skip(err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

// TestHarness checks that what the benchmarks measure is real: every target delivers the
// same number of frames, the agent runs leave a log, the idle streams open, and the
// resume and approval paths work end to end. It runs in a second or two, so plain
// `go test ./bench/...` exercises the harness the benchmarks rely on.
func TestHarness(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{agentbench.Memory, agentbench.SQLite, agentbench.Postgres} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, agentbench.Options{Deltas: 20, Driver: driver})
			if got, want := e.FramesPerRun(), 20+7; got != want {
				t.Fatalf("frames per run = %d, want %d (RUN_STARTED, STEP_STARTED, TEXT_MESSAGE_START, deltas, TEXT_MESSAGE_END, STEP_FINISHED, RUN_FINISHED, [DONE])", got, want)
			}
			for _, target := range agentbench.Targets {
				b, err := e.RunBatch(ctx, target, 3)
				if err != nil {
					t.Fatalf("%s: %v", target, err)
				}
				if b.Frames != 3*e.FramesPerRun() {
					t.Fatalf("%s: %d frames", target, b.Frames)
				}
				rows, deltaRows, err := e.LogRows(ctx, b.RunIDs)
				if !target.Logged() {
					// Raw has no run ids; an unlogged run must have left nothing in the journal.
					if target != agentbench.Raw && (err != nil || rows != 0) {
						t.Fatalf("%s: %d rows stored (err %v), want none", target, rows, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if deltaRows < 3 || rows < 3*7 {
					t.Fatalf("%s: %d rows, %d delta rows stored for 3 runs", target, rows, deltaRows)
				}
			}
			runID, last, err := e.StoredRun(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.FollowFirstFrame(ctx, runID, last/2); err != nil {
				t.Fatal(err)
			}
			// A second instance on the same database resumes the run A ran, twice (the
			// second from what its first read kept); the memory journal has none.
			if other, err := agentbench.New(ctx, agentbench.Options{Deltas: 20, Driver: driver, SameDatabase: e}); driver == agentbench.Memory {
				if err == nil {
					other.Close()
					t.Fatal("a second instance on the memory journal")
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				t.Cleanup(other.Close) // before e's cleanup, which removes the database
				for range 2 {
					if _, err := other.FollowFirstFrame(ctx, runID, last/2); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := e.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.ApprovalCycle(ctx); err != nil {
				t.Fatal(err)
			}
			for _, target := range agentbench.Targets {
				if _, err := e.IdleMemory(ctx, target, 3); err != nil {
					t.Fatalf("idle %s: %v", target, err)
				}
			}
		})
	}
}

// TestHarnessAgainstAnApp points the harness at an app's streaming route (here the
// harness's own agent behind a proxy that insists on a bearer token): the raw baseline
// replays a captured stream of the app's, both targets deliver every frame, and the
// app's requests carry the body and headers given.
func TestHarnessAgainstAnApp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inner := newEnv(t, agentbench.Options{Deltas: 20})
	target, err := url.Parse(inner.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	var bodies atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer let-me-in" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) == `{"message":"hello"}` {
			bodies.Add(1)
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		r.URL.Path = "/agentbench/stream"
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(app.Close)

	e := newEnv(t, agentbench.Options{App: agentbench.External{URL: app.URL + "/chat", Body: `{"message":"hello"}`,
		Header: http.Header{"Authorization": {"Bearer let-me-in"}}}})
	if got := e.Targets(); len(got) != 2 || got[0] != agentbench.Raw || got[1] != agentbench.App {
		t.Fatalf("targets %v, want raw and app", got)
	}
	if got, want := e.FramesPerRun(), inner.FramesPerRun(); got != want {
		t.Fatalf("captured %d frames a run, the app sends %d", got, want)
	}
	for _, target := range e.Targets() {
		b, err := e.RunBatch(ctx, target, 3)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if b.Frames != 3*e.FramesPerRun() {
			t.Fatalf("%s: %d frames", target, b.Frames)
		}
	}
	if _, err := e.Round(ctx, 2, 0); err != nil {
		t.Fatal(err)
	}
	if bodies.Load() < 1+3 {
		t.Fatalf("%d requests with the body given reached the app", bodies.Load())
	}
	noToken := newEnvErr(agentbench.Options{App: agentbench.External{URL: app.URL + "/chat"}})
	if noToken == nil || !strings.Contains(noToken.Error(), "401") {
		t.Fatalf("an app that refuses the request: %v", noToken)
	}
}

// newEnvErr starts a harness expected to fail and returns its error.
func newEnvErr(opts agentbench.Options) error {
	e, err := agentbench.New(context.Background(), opts)
	if err == nil {
		e.Close()
	}
	return err
}
