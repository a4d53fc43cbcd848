package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"modernc.org/sqlite"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/bench/internal/agentbench"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/journal"
)

// ServerEnv is the environment variable that turns a process into a target server: it
// holds the [ServerConfig] as JSON. The capacity command and the tests start their own
// executable again with it set ([MaybeServe] at the top of main or TestMain), so the
// server runs in a process apart from the load client and its CPU and memory are its own.
const ServerEnv = "ENGINE_CAPACITY_SERVER"

// ChatPath is the streaming route of the target servers, for every target: the raw
// handler and the engine's chat flow answer the same request with the same frames.
const ChatPath = "/capacity/chat"

// StatsPath is the target servers' own figures ([ServerStats]).
const StatsPath = "/capacity/stats"

// ServerConfig is what one target server serves.
type ServerConfig struct {
	// Raw serves [ChatPath] with a handler that writes the frames an agent run would send,
	// at the same pace, through the same SSE writer, and nothing else: the baseline.
	Raw bool `json:"raw,omitempty"`
	// Journal is the engine app's journal driver: "" (no journal, so no event log),
	// "memory", "sqlite" or "postgres".
	Journal string `json:"journal,omitempty"`
	// Durable declares the chat flow durable, so its tool needs an approval.
	Durable bool `json:"durable,omitempty"`
	// PostgresDSN is the database of the postgres journal.
	PostgresDSN string `json:"postgresDSN,omitempty"`
	// SlowToken makes the raw handler deliberately slow: every token holds one lock of the
	// whole process this long, so the server streams at most 1/SlowToken tokens a second
	// and a knee appears at a known size. For the harness's own tests.
	SlowToken time.Duration `json:"slowToken,omitempty"`
}

// ServerStats are a target server's figures, read by the load client between levels.
type ServerStats struct {
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	Goroutines int    `json:"goroutines"`
	// SQLiteCommits counts the transactions the SQLite journal committed (SQLite's commit
	// hook on every connection), including single statements outside a transaction.
	SQLiteCommits int64 `json:"sqliteCommits"`
}

// MaybeServe runs the target server and exits if this process was started as one
// ([ServerEnv] set); otherwise it returns at once.
func MaybeServe() {
	spec, ok := os.LookupEnv(ServerEnv)
	if !ok {
		return
	}
	var cfg ServerConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "capacity server: %s: %v\n", ServerEnv, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve(ctx, cfg, os.Getenv("ENGINE_ADDR"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "capacity server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// sqliteCommits counts SQLite commits in this process (see [ServerStats.SQLiteCommits]).
var sqliteCommits atomic.Int64

var countSQLiteCommits = sync.OnceFunc(func() {
	sqlite.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		if h, ok := c.(sqlite.HookRegisterer); ok {
			h.RegisterCommitHook(func() int32 { sqliteCommits.Add(1); return 0 })
		}
		return nil
	})
})

// serve runs the server on addr until ctx ends, after printing "listening on <url>".
func serve(ctx context.Context, cfg ServerConfig, addr string, out io.Writer) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StatsPath, serveStats)
	if cfg.Raw {
		raw := &rawHandler{slow: cfg.SlowToken}
		mux.Handle("POST "+ChatPath, raw)
	} else {
		app, closeApp, err := newApp(ctx, cfg)
		if err != nil {
			return err
		}
		defer closeApp()
		mux.Handle("/", app.Handler())
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "listening on http://%s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = srv.Close() // streams are long: end them rather than wait
		<-done
		return nil
	}
}

func serveStats(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("gc") != "" {
		runtime.GC()
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ServerStats{HeapInuse: m.HeapInuse, StackInuse: m.StackInuse,
		Goroutines: runtime.NumGoroutine(), SQLiteCommits: sqliteCommits.Load()})
}

// ChatIn is the body of [ChatPath]: the user's message, which for the capacity model is
// a [Pace] in JSON.
type ChatIn struct {
	Message string `json:"message"`
}

// LookupIn and LookupOut are the tool's input and output.
type (
	LookupIn struct {
		Query string `json:"query"`
	}
	LookupOut struct {
		Answer string `json:"answer"`
	}
)

var (
	unit       = engine.NewUnit("capacity")
	chatFlow   = engine.DefineStream[ChatIn, agui.Event, agui.RunOutput](unit, "chat", engine.POST(ChatPath), engine.Public())
	chatDur    = engine.DefineStream[ChatIn, agui.Event, agui.RunOutput](unit, "chatDurable", engine.POST(ChatPath), engine.Public(), engine.Durable())
	lookupFlow = engine.Define[LookupIn, LookupOut](unit, "lookup", engine.Public(), engine.Describe("Look something up."))
)

// newApp builds and starts the engine app of cfg: the chat flow on the capacity model,
// with the tool it may call, on the journal cfg names.
func newApp(ctx context.Context, cfg ServerConfig) (*engine.App, func(), error) {
	var undo []func()
	closeAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	opts := []engine.Option{engine.WithLogger(slog.New(slog.DiscardHandler)), ai.Install(ai.Options{PublicApprovals: true})}
	if cfg.Journal != "" {
		if cfg.Journal == agentbench.SQLite {
			countSQLiteCommits()
		}
		d, closeDriver, err := agentbench.OpenDriver(ctx, cfg.Journal, cfg.PostgresDSN)
		if err != nil {
			return nil, nil, err
		}
		undo = append(undo, closeDriver)
		j, err := journal.New(d, journal.Options{})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		opts = append(opts, durable.With(j))
	} else if cfg.Durable {
		return nil, nil, errors.New("capacity: a durable flow needs a journal")
	}
	agent := ai.Agent("chat", ai.Model("capacity", NewModel(), "paced-1"), ai.Tools(lookupFlow), 0)
	run := func(fx *engine.Fx, in ChatIn, out *engine.Stream[agui.Event]) (agui.RunOutput, error) {
		return ai.Stream(fx, agent, in.Message, out, ai.RunOptions{})
	}
	lookup := func(_ *engine.Fx, in LookupIn) (LookupOut, error) { return LookupOut{Answer: "found " + in.Query}, nil }
	if cfg.Durable {
		opts = append(opts, engine.BindStream(chatDur, run),
			engine.Bind(lookupFlow, lookup, ai.Approval(func(LookupIn) bool { return true })))
	} else {
		opts = append(opts, engine.BindStream(chatFlow, run), engine.Bind(lookupFlow, lookup))
	}
	app, err := engine.New(opts...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := app.Start(ctx); err != nil {
		closeAll()
		return nil, nil, err
	}
	undo = append(undo, func() { _ = app.Close(context.Background()) })
	return app, closeAll, nil
}

// rawHandler is the baseline: the frames of an agent run (run and step start, a text
// message of the conversation's tokens, their ends, [DONE]) at the pace's schedule,
// through the engine's SSE writer, with nothing else. A conversation with a tool streams
// its preamble and answer as one message: the raw handler calls no tool and parks nothing.
type rawHandler struct {
	slow time.Duration
	mu   sync.Mutex // held SlowToken per token, across the process
	runs atomic.Int64
}

func (h *rawHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in ChatIn
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var p Pace
	err := json.Unmarshal([]byte(in.Message), &p)
	if err == nil {
		err = p.validate()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := "run_raw_" + strconv.FormatInt(h.runs.Add(1), 10)
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{})
	defer sse.Close()
	var seq int64
	event := func(ev agui.Event) bool {
		b, err := agui.AppendJSON(nil, ev)
		if err != nil {
			return false
		}
		seq++
		return sse.WriteEvent(seq, b) == nil
	}
	if !event(agui.RunStarted{ThreadID: id, RunID: id}) || !event(agui.StepStarted{StepName: "step-1"}) ||
		!event(agui.TextMessageStart{MessageID: "msg_1", Role: "assistant"}) {
		return
	}
	tokens := func(start time.Time, n int, turn uint64) bool {
		var text []byte
		for at := range p.schedule(start, n, turn) {
			if sleepUntil(r.Context(), at) != nil {
				return false
			}
			if h.slow > 0 {
				h.mu.Lock()
				time.Sleep(h.slow)
				h.mu.Unlock()
			}
			text = appendToken(text[:0], at)
			if sse.WriteEventFunc(0, func(dst []byte) []byte {
				return agui.AppendDelta(dst, agui.TypeTextMessageContent, "msg_1", string(text))
			}) != nil {
				return false
			}
		}
		return true
	}
	if p.Tool && !tokens(time.Now(), p.Preamble(), 0) {
		return
	}
	if !tokens(time.Now(), p.Tokens, 1) {
		return
	}
	if !event(agui.TextMessageEnd{MessageID: "msg_1"}) || !event(agui.StepFinished{StepName: "step-1"}) ||
		!event(agui.RunFinished{ThreadID: id, RunID: id}) {
		return
	}
	_ = sse.WriteDone()
}
