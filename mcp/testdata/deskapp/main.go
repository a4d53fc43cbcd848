// Command deskapp is the app of package mcp's kill test: a durable chat flow whose agent
// has the transfer tool of an MCP server (DESK_BANK_URL), on a Postgres journal
// (DESK_JOURNAL, a DSN) that several processes share. DESK_DELAY (a Go duration) holds
// every answer of the remote tool that long before the run records it, so a test can kill
// the process after the tool answered and before its step was recorded. It listens on
// ENGINE_ADDR and says "listening on http://<addr>" when ready.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/mcp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

var (
	desk = engine.NewUnit("desk")
	chat = engine.DefineStream[struct {
		Message string `json:"message"`
	}, agui.Event, ai.RunResult](desk, "chat", engine.POST("/desk/chat"), engine.Public(), engine.Durable())
)

// everyone signs every request in as the same teller: the remote tool is a gated flow.
type everyone struct{}

func (everyone) Authenticate(*http.Request) (*engine.Principal, error) {
	return &engine.Principal{ID: "teller", Tenant: "t1"}, nil
}

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	dsn := os.Getenv("DESK_JOURNAL")
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	db := bun.NewDB(stdlib.OpenDBFromPool(pool), pgdialect.New())
	drv, err := postgres.New(db, postgres.Options{TablePrefix: os.Getenv("DESK_PREFIX"),
		Listener: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }})
	if err != nil {
		return err
	}
	j, err := journal.New(drv, journal.Options{Owner: os.Getenv("ENGINE_INSTANCE"), LeaseTTL: time.Second,
		PollInterval: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	delay, _ := time.ParseDuration(os.Getenv("DESK_DELAY"))
	prov, err := openai.New(openai.Options{BaseURL: os.Getenv("DESK_MODEL_URL")})
	if err != nil {
		return err
	}
	bank := mcp.NewRemote(engine.NewUnit("bank"), mcp.HTTP(os.Getenv("DESK_BANK_URL"), nil), "transfer")
	teller := ai.Agent("teller", ai.Model("default", prov, "gpt-test"), bank.Tools(), 0)
	hold := engine.Use(func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			out, err := next(fx, in)
			time.Sleep(delay) // the tool answered; its step is not recorded yet
			return out, err
		}
	})
	app, err := engine.New(
		engine.WithAuthenticator(everyone{}),
		durable.With(j),
		ai.Install(ai.Options{}),
		bank.Bind(mcp.Each(hold)),
		engine.BindStream(chat, func(fx *engine.Fx, in struct {
			Message string `json:"message"`
		}, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, teller, in.Message, out, ai.RunOptions{})
		}),
	)
	if err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", os.Getenv("ENGINE_ADDR"))
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	return http.Serve(ln, app)
}
