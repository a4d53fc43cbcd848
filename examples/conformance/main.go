// Command conformance is the reference app of the wire protocol (docs/protocol.md): every
// behaviour of it over real HTTP, so any client can check the wire against it. Each capability
// adds its units in a file of its own (math.go, auth.go, …) through [register]. The math
// unit's declarations, the reference contract, are in package contract
// (examples/conformance/contract), which clients and the engine's tests import too.
//
//	go run ./examples/conformance
//
// Environment: ENGINE_ADDR, ENGINE_JOURNAL (memory | sqlite:<path> | postgres://…),
// ENGINE_MODEL_BASE_URL, ENGINE_MODEL_API_KEY, ENGINE_MODEL_NAME, ENGINE_DEMO_PASSWORD,
// ENGINE_JWT_KEY, ENGINE_ACCESS_TTL (the access tokens' lifetime, a Go duration, default
// 15m), ENGINE_INSTANCE, ENGINE_TICK (how often jobs.tick runs), ENGINE_LEASE_TTL (how soon
// another instance takes over a dead one's runs), ENGINE_APPROVAL_WAIT (how long an
// approval waits, default 24h), ENGINE_TRANSFER_DELAY (how long tools.transfer waits after it moved the money,
// for fault tests), ENGINE_BODY_TIMEOUT (default 10s), ENGINE_TRUSTED_ORIGINS
// (comma-separated origins whose pages may write to the app), and ENGINE_MCP=1 (the MCP
// server at /_engine/mcp) with ENGINE_MCP_ALLOWED_HOSTS (host names it accepts besides
// localhost on a loopback address), and ENGINE_CONSOLE=1 (the operator's console at
// /_engine/console/). It logs "listening on http://<addr>" when ready and shuts down
// gracefully on SIGINT or SIGTERM.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

// env is what every part of the app may use: configuration and the shared database.
type env struct {
	Addr         string
	Journal      string // as given: memory, sqlite:<path> or a postgres DSN
	DB           *bun.DB
	Postgres     bool
	DSN          string // the Postgres DSN, when Postgres
	ModelBaseURL string
	ModelAPIKey  string
	ModelName    string
	Password     string
	Instance     string
	// BodyTimeout is how long a request body may take to arrive (ENGINE_BODY_TIMEOUT).
	BodyTimeout time.Duration
	// TrustedOrigins may write from the browser besides the app's own origin
	// (ENGINE_TRUSTED_ORIGINS, comma-separated).
	TrustedOrigins []string
	Logger         *slog.Logger
	// closers run at shutdown, after the server stopped, in reverse order.
	closers []func(context.Context) error
}

// part contributes units and services to the app.
type part struct {
	name  string
	build func(ctx context.Context, e *env) (engine.Option, error)
}

var parts []part

// register adds a part; each file of this command registers its own in init.
func register(name string, build func(ctx context.Context, e *env) (engine.Option, error)) {
	parts = append(parts, part{name: name, build: build})
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("conformance: " + err.Error())
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	e, err := loadEnv(logger)
	if err != nil {
		return err
	}
	defer e.close()

	app, err := buildApp(ctx, e)
	if err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", e.Addr)
	if err != nil {
		_ = app.Close(context.Background())
		return err
	}
	srv := engine.NewServer(e.Addr, app.Handler()) // ReadHeaderTimeout 5 s, IdleTimeout 120 s
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stdout, "listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		_ = app.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	return errors.Join(err, app.Close(shutdownCtx))
}

// buildApp assembles every registered part into one app.
func buildApp(ctx context.Context, e *env) (*engine.App, error) {
	sort.Slice(parts, func(i, j int) bool { return parts[i].name < parts[j].name })
	opts := []engine.Option{engine.WithLogger(e.Logger), engine.WithBodyTimeout(e.BodyTimeout)}
	if len(e.TrustedOrigins) > 0 {
		opts = append(opts, engine.WithTrustedOrigins(e.TrustedOrigins...))
	}
	for _, p := range parts {
		o, err := p.build(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		opts = append(opts, o)
	}
	return engine.New(opts...)
}

func loadEnv(logger *slog.Logger) (*env, error) {
	var err error
	host, _ := os.Hostname()
	e := &env{
		Addr:         getenv("ENGINE_ADDR", "127.0.0.1:8787"),
		Journal:      getenv("ENGINE_JOURNAL", "sqlite:./conformance.db"),
		ModelBaseURL: getenv("ENGINE_MODEL_BASE_URL", "https://api.openai.com/v1"),
		ModelAPIKey:  os.Getenv("ENGINE_MODEL_API_KEY"),
		ModelName:    getenv("ENGINE_MODEL_NAME", "gpt-4o-mini"),
		Password:     getenv("ENGINE_DEMO_PASSWORD", "correct horse battery staple"),
		Instance:     getenv("ENGINE_INSTANCE", host),
		Logger:       logger,
	}
	if e.BodyTimeout, err = time.ParseDuration(getenv("ENGINE_BODY_TIMEOUT", "10s")); err != nil {
		return nil, fmt.Errorf("ENGINE_BODY_TIMEOUT: %w", err)
	}
	for _, o := range strings.Split(os.Getenv("ENGINE_TRUSTED_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o != "" {
			e.TrustedOrigins = append(e.TrustedOrigins, o)
		}
	}
	db, err := openDB(e)
	if err != nil {
		return nil, err
	}
	e.DB = db
	e.closers = append(e.closers, func(context.Context) error { return db.Close() })
	return e, nil
}

// openDB opens the application database named by ENGINE_JOURNAL: the journal and the
// app's own tables share it. memory gets a private in-memory SQLite database.
func openDB(e *env) (*bun.DB, error) {
	const pragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	switch j := e.Journal; {
	case j == "memory":
		name := fmt.Sprintf("file:conformance-%d?mode=memory&cache=shared&_pragma=busy_timeout(5000)&_txlock=immediate", time.Now().UnixNano())
		sqldb, err := sql.Open("sqlite", name)
		if err != nil {
			return nil, err
		}
		sqldb.SetMaxOpenConns(1)
		return bun.NewDB(sqldb, sqlitedialect.New()), nil
	case strings.HasPrefix(j, "sqlite:"):
		sqldb, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(j, "sqlite:")+"?"+pragmas)
		if err != nil {
			return nil, err
		}
		sqldb.SetMaxOpenConns(4) // one writer at a time anyway; see journal/drivers/sqlite
		sqldb.SetMaxIdleConns(4) // keep them: a new connection re-reads the schema
		return bun.NewDB(sqldb, sqlitedialect.New()), nil
	case strings.HasPrefix(j, "postgres://"), strings.HasPrefix(j, "postgresql://"):
		pool, err := pgxpool.New(context.Background(), j)
		if err != nil {
			return nil, err
		}
		e.Postgres, e.DSN = true, j
		return bun.NewDB(stdlib.OpenDBFromPool(pool), pgdialect.New()), nil
	}
	return nil, fmt.Errorf("ENGINE_JOURNAL: want memory, sqlite:<path> or postgres://…, got %q", e.Journal)
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		if err := e.closers[i](context.Background()); err != nil {
			e.Logger.Warn("conformance: closing", "err", err)
		}
	}
}

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
