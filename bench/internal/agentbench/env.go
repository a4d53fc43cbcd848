// Package agentbench is the shared harness of the agent benchmarks (agent streaming,
// follow resume, approval cycles): an engine app whose agents run on the scripted
// provider, served over loopback TCP next to raw SSE handlers that write the same frames,
// and a client that reads both with the real SSE reader. The benchmarks in bench/ and the
// agentbench command both drive it, so the numbers in bench/README.md come from one
// implementation.
package agentbench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the SQLite journal's database/sql driver

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/journal/drivers/sqlite"
)

// Journal drivers the harness can run on.
const (
	Memory   = "memory"
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// PostgresEnv is the environment variable holding the Postgres DSN, as in the journal tests.
const PostgresEnv = "ENGINE_TEST_POSTGRES_DSN"

// Options configure an [Env].
type Options struct {
	// Deltas is the number of text deltas (TEXT_MESSAGE_CONTENT events) of one streamed
	// run. Default 100.
	Deltas int
	// Pace is the scripted provider's wait before every chunk; 0 streams as fast as the
	// loop goes.
	Pace time.Duration
	// Driver is the journal driver: [Memory] (default), [SQLite] or [Postgres].
	Driver string
	// PostgresDSN is the database of the [Postgres] driver; default $ENGINE_TEST_POSTGRES_DSN.
	PostgresDSN string
	// SampleTime is how long [Env.Round] streams each target, in back-to-back batches.
	// Default 100ms; a negative value measures a single batch.
	SampleTime time.Duration
	// NoTail turns off the journal's in-process follow tail ([journal.Options.TailBytes]),
	// so a follower reads the database, as it does on an instance other than the one that
	// ran the run.
	NoTail bool
	// SameDatabase, when set, opens the journal on that harness's database instead of a
	// fresh one: a second instance of the app sharing it, with its own driver, journal,
	// app and server. Close it before SameDatabase, which removes the database.
	SameDatabase *Env
	// App, when its URL is set, measures an app of yours instead of the harness's own
	// agent: the [App] target posts to its streaming route, and the raw baseline replays
	// the frames of one of its streams. No journal or agent of the harness runs then.
	App External
}

// External is an app's streaming route, called with POST.
type External struct {
	URL    string
	Body   string      // the request body; default {"message":"go"}
	Header http.Header // sent with every request (a bearer token, for instance)
	// PID is the app's process, when it runs on this machine: its CPU time (from
	// /proc/<pid>/stat) then counts in the app's CPU per frame, as the raw handler's
	// counts in raw's, so the CPU ratio compares like with like. 0: CPU per frame of
	// the app is not measured.
	PID int
}

// Input is the body of the harness's chat flows.
type Input struct {
	Message string `json:"message"`
}

// TransferIn is the input of the tool that needs approval.
type TransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// TransferOut is the tool's output.
type TransferOut struct {
	OK bool `json:"ok"`
}

// Empty is the input and output of the ping flow, the "plain request" of the follow-resume benchmark.
type Empty struct{}

// The harness flows. Streamed runs come in a plain and a durable form so the journal's
// step recording can be measured apart from the event log, which both write.
var (
	unit         = engine.NewUnit("agentbench")
	streamPlain  = engine.DefineStream[Input, agui.Event, agui.RunOutput](unit, "stream", engine.POST("/agentbench/stream"), engine.Public())
	streamDur    = engine.DefineStream[Input, agui.Event, agui.RunOutput](unit, "streamDurable", engine.POST("/agentbench/stream-durable"), engine.Public(), engine.Durable())
	idlePlain    = engine.DefineStream[Input, agui.Event, agui.RunOutput](unit, "idle", engine.POST("/agentbench/idle"), engine.Public())
	idleDur      = engine.DefineStream[Input, agui.Event, agui.RunOutput](unit, "idleDurable", engine.POST("/agentbench/idle-durable"), engine.Public(), engine.Durable())
	payFlow      = engine.DefineStream[Input, agui.Event, agui.RunOutput](unit, "pay", engine.POST("/agentbench/pay"), engine.Public(), engine.Durable())
	transferFlow = engine.Define[TransferIn, TransferOut](unit, "transfer", engine.Public(), engine.Describe("Send money."))
	pingFlow     = engine.Define[Empty, Empty](unit, "ping", engine.Public())
)

// IdleWait is how long an idle run's model waits before its first chunk: longer than any
// measurement, so the stream stays open until the client leaves.
const IdleWait = time.Hour

// Env is a running harness: the app, its journal and a loopback server.
type Env struct {
	URL      string
	App      *engine.App // the agent flows, with the journal
	Unlogged *engine.App // the plain agent flows without a journal, under /unlogged ([Unlogged])
	Journal  *journal.Journal
	Driver   string
	Deltas   int

	// WhileIdle, when set, is called by [Env.IdleMemory] while its streams are open and
	// measured (to take a heap profile of them, for instance).
	WhileIdle func(t Target)

	pace       time.Duration
	sampleTime time.Duration
	writes     atomic.Int64 // server connection writes, see countingListener
	client     *http.Client
	srv        *httptest.Server
	mux        *http.ServeMux // every target's handler
	cleanup    []func()
	raw        transcript // the frames of one streamed run, replayed by the raw handler
	idle       transcript // the frames an idle run sends before it waits
	app        External   // Options.App
	db         Database   // where the journal lives, for [Options.SameDatabase]
}

// startExternal serves the raw baseline alone and captures one stream of the app's for
// it to replay.
func (e *Env) startExternal(ctx context.Context) error {
	u, err := url.Parse(e.app.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("agentbench: app URL %q is not an http(s) URL", e.app.URL)
	}
	if e.app.Body == "" {
		e.app.Body = `{"message":"go"}`
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /raw/stream", e.serveRawStream)
	e.serve(mux)
	res, err := e.readStream(ctx, App, true)
	if err != nil {
		return fmt.Errorf("agentbench: capturing a stream of %s: %w", e.app.URL, err)
	}
	e.raw = res.frames
	return nil
}

// serve starts the loopback server of mux, counting its writes, and the client.
func (e *Env) serve(mux *http.ServeMux) {
	e.mux = mux
	e.srv = httptest.NewUnstartedServer(mux)
	e.srv.Listener = countingListener{Listener: e.srv.Listener, writes: &e.writes}
	e.srv.Start()
	e.cleanup = append(e.cleanup, e.srv.Close)
	e.URL = e.srv.URL
	e.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 2048, MaxIdleConnsPerHost: 2048, IdleConnTimeout: time.Minute}}
	e.cleanup = append(e.cleanup, e.client.CloseIdleConnections)
}

// HeaderFlag is a repeatable command-line flag of request headers, "Name: value" each.
type HeaderFlag http.Header

// String lists the headers.
func (h HeaderFlag) String() string { return fmt.Sprint(http.Header(h)) }

// Set adds one "Name: value".
func (h HeaderFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("want 'Name: value', got %q", v)
	}
	http.Header(h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// Targets are the targets this harness measures, in the order tables show them: [Raw]
// and [App] for an app of yours, else [Targets].
func (e *Env) Targets() []Target {
	if e.app.URL != "" {
		return []Target{Raw, App}
	}
	return Targets
}

// New starts a harness. Close it when done.
func New(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Deltas == 0 {
		opts.Deltas = 100
	}
	if opts.Deltas < 0 || opts.Pace < 0 {
		return nil, errors.New("agentbench: Deltas and Pace must not be negative")
	}
	if opts.Driver == "" {
		opts.Driver = Memory
	}
	if opts.SampleTime == 0 {
		opts.SampleTime = 100 * time.Millisecond
	}
	e := &Env{Driver: opts.Driver, Deltas: opts.Deltas, pace: opts.Pace, sampleTime: opts.SampleTime, app: opts.App}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.app.URL != "" {
		return e, e.startExternal(ctx)
	}
	d, err := e.openDriver(ctx, opts)
	if err != nil {
		return nil, err
	}
	jopts := journal.Options{}
	if opts.NoTail {
		jopts.TailBytes = -1
	}
	e.Journal, err = journal.New(d, jopts)
	if err != nil {
		return nil, fmt.Errorf("agentbench: journal: %w", err)
	}
	if err := e.startApp(ctx, opts); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /raw/stream", e.serveRawStream)
	mux.HandleFunc("POST /raw/idle", e.serveRawIdle)
	mux.Handle(unloggedPrefix+"/", http.StripPrefix(unloggedPrefix, e.Unlogged.Handler()))
	mux.Handle("/", e.App.Handler())
	e.serve(mux)
	if err := e.capture(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) startApp(ctx context.Context, opts Options) error {
	model := func(turns ...scripted.Turn) *ai.ModelDef {
		return ai.Model("scripted", scripted.New(turns...), "scripted-1")
	}
	streamer := ai.Agent("streamer", model(scripted.Turn{Text: Words(opts.Deltas), Delay: opts.Pace}), ai.Tools(), 0)
	idler := ai.Agent("idler", model(scripted.Turn{Text: "late", Delay: IdleWait}), ai.Tools(), 0)
	payer := ai.Agent("payer", model(
		scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "agentbench_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		scripted.Turn{Text: "Sent 500 to bob."},
	), ai.Tools(transferFlow), 0)
	run := func(a *ai.AgentDef) func(fx *engine.Fx, in Input, out *engine.Stream[agui.Event]) (agui.RunOutput, error) {
		return func(fx *engine.Fx, in Input, out *engine.Stream[agui.Event]) (agui.RunOutput, error) {
			return ai.Stream(fx, a, in.Message, out, ai.RunOptions{})
		}
	}
	start := func(opts ...engine.Option) (*engine.App, error) {
		app, err := engine.New(append([]engine.Option{engine.WithLogger(slog.New(slog.DiscardHandler)), ai.Install(ai.Options{})}, opts...)...)
		if err != nil {
			return nil, fmt.Errorf("agentbench: app: %w", err)
		}
		if err := app.Start(ctx); err != nil {
			return nil, fmt.Errorf("agentbench: start: %w", err)
		}
		e.cleanup = append(e.cleanup, func() { _ = app.Close(context.Background()) })
		return app, nil
	}
	var err error
	if e.Unlogged, err = start(engine.BindStream(streamPlain, run(streamer)), engine.BindStream(idlePlain, run(idler))); err != nil {
		return err
	}
	e.App, err = start(
		durable.With(e.Journal),
		engine.BindStream(streamPlain, run(streamer)),
		engine.BindStream(streamDur, run(streamer)),
		engine.BindStream(idlePlain, run(idler)),
		engine.BindStream(idleDur, run(idler)),
		engine.BindStream(payFlow, run(payer)),
		engine.Bind(transferFlow, func(_ *engine.Fx, in TransferIn) (TransferOut, error) { return TransferOut{OK: in.To != ""}, nil },
			ai.Approval(func(in TransferIn) bool { return in.Amount > 100 })),
		engine.Bind(pingFlow, func(*engine.Fx, Empty) (Empty, error) { return Empty{}, nil }),
	)
	return err
}

// unloggedPrefix is where the [Unlogged] target's app is served.
const unloggedPrefix = "/unlogged"

// openDriver opens the journal driver the options name, closed at [Env.Close]: on a
// fresh database, or on the database of Options.SameDatabase.
func (e *Env) openDriver(ctx context.Context, opts Options) (journal.Driver, error) {
	where, fresh := Database{Driver: opts.Driver, DSN: opts.PostgresDSN}, true
	if opts.SameDatabase != nil {
		where, fresh = opts.SameDatabase.db, false
		if where.Driver == Memory {
			return nil, errors.New("agentbench: the memory journal lives in one process: no other instance shares it")
		}
	}
	d, closeDriver, where, err := openDatabase(ctx, where, fresh)
	if err != nil {
		return nil, err
	}
	e.db = where
	e.cleanup = append(e.cleanup, closeDriver)
	return d, nil
}

// OpenDriver opens the journal driver named driver ([Memory], [SQLite] or [Postgres]) on
// a fresh database: a temp SQLite file in WAL mode with the pool capped at 4, as the
// SQLite driver advises, or tables with a random prefix on the Postgres server of
// postgresDSN (default $ENGINE_TEST_POSTGRES_DSN, else [ErrNoPostgres]). The function it
// returns closes the driver and removes the file or drops the tables.
func OpenDriver(ctx context.Context, driver, postgresDSN string) (journal.Driver, func(), error) {
	d, closeDriver, _, err := openDatabase(ctx, Database{Driver: driver, DSN: postgresDSN}, true)
	return d, closeDriver, err
}

// Database is where a journal's data lives: enough for another instance to open it.
type Database struct {
	Driver string
	DSN    string // Postgres
	Prefix string // Postgres table prefix
	File   string // SQLite
}

// openDatabase opens a driver on where: when fresh, on a new file or new tables (given
// back in the returned Database, and removed by the close function); otherwise on the
// file or tables where names, left in place.
func openDatabase(ctx context.Context, where Database, fresh bool) (_ journal.Driver, _ func(), _ Database, err error) {
	var cleanup []func()
	closeDriver := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	defer func() {
		if err != nil {
			closeDriver()
		}
	}()
	switch where.Driver {
	case Memory:
		return memory.New(), closeDriver, where, nil
	case SQLite:
		if fresh {
			dir, err := os.MkdirTemp("", "agentbench-")
			if err != nil {
				return nil, nil, where, err
			}
			cleanup = append(cleanup, func() { _ = os.RemoveAll(dir) })
			where.File = filepath.Join(dir, "journal.db")
		}
		dsn := "file:" + where.File +
			"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
		sqldb, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, nil, where, err
		}
		sqldb.SetMaxOpenConns(4) // as journal/drivers/sqlite advises
		sqldb.SetMaxIdleConns(4)
		db := bun.NewDB(sqldb, sqlitedialect.New())
		cleanup = append(cleanup, func() { _ = db.Close() })
		d, err := sqlite.New(db, sqlite.Options{})
		if err != nil {
			return nil, nil, where, err
		}
		return d, closeDriver, where, nil
	case Postgres:
		if where.DSN == "" {
			where.DSN = os.Getenv(PostgresEnv)
		}
		if where.DSN == "" {
			return nil, nil, where, ErrNoPostgres
		}
		// The DSN may size the pool (pool_max_conns=16); the LISTEN connection takes the
		// same settings without the pool's.
		cfg, err := pgxpool.ParseConfig(where.DSN)
		if err != nil {
			return nil, nil, where, err
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, nil, where, err
		}
		db := bun.NewDB(stdlib.OpenDBFromPool(pool), pgdialect.New())
		cleanup = append(cleanup, func() { _ = db.Close(); pool.Close() })
		if fresh {
			where.Prefix = "agentbench_" + randomHex(4) + "_"
		}
		d, err := postgres.New(db, postgres.Options{TablePrefix: where.Prefix,
			Listener: func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy()) }})
		if err != nil {
			return nil, nil, where, err
		}
		cleanup = append(cleanup, func() {
			_ = d.Close()
			if !fresh {
				return
			}
			for _, t := range d.Tables() {
				_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+t)
			}
		})
		return d, closeDriver, where, nil
	}
	return nil, nil, where, fmt.Errorf("agentbench: unknown driver %q (memory, sqlite or postgres)", where.Driver)
}

// ErrNoPostgres is returned by [New] for the Postgres driver without a DSN.
var ErrNoPostgres = errors.New("agentbench: " + PostgresEnv + " is not set; the Postgres driver needs a database (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")

// Close stops the server, the app and the database, in reverse order of opening.
func (e *Env) Close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

// Words is a model text that the scripted provider streams as exactly n deltas of a
// typical token's size.
func Words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("tok")
		b.WriteString(strconv.Itoa(i % 100))
	}
	return b.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
