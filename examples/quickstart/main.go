// Command quickstart is a small engine app that needs no set-up: flows over REST and RPC,
// a durable agent on an embedded SQLite journal, a human-in-the-loop approval, and a
// clock, a signal and a channel (elements.go). The
// agent's model is an offline scripted one (structured.go asks it for a typed value; the
// greeter's flows are also an MCP server's tools), so the quickstart links no provider SDK and
// needs no key; examples/provider runs an agent on OpenAI or Anthropic.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/examples/quickstart/contract"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/sqlite"
	"github.com/bbc28f59/engine/mcp"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	dbPath := flag.String("db", "quickstart.db", "SQLite file of the journal")
	flag.Parse()
	opsPassword := os.Getenv("QUICKSTART_OPS_PASSWORD") // set it to open the console
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(*addr, *dbPath, opsPassword, logger); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(addr, dbPath, opsPassword string, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	app, closeDB, err := newApp(dbPath, opsPassword, logger)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := app.Start(ctx); err != nil {
		return err
	}
	defer app.Close(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/", app.Handler()) // or mux.Handle("/api/", http.StripPrefix("/api", app.Handler()))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := engine.NewServer("", mux) // header and idle timeouts, header size: see engine.NewServer
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	printTryThis("http://"+ln.Addr().String(), opsPassword != "")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newApp builds the app: handlers bound to the contract's flows, the journal on SQLite,
// the agent routes, and the chat flow; with an operator's password, the console too
// (console.go).
func newApp(dbPath, opsPassword string, logger *slog.Logger) (*engine.App, func(), error) {
	sqldb, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	sqldb.SetMaxOpenConns(4) // one writer at a time anyway; see journal/drivers/sqlite
	sqldb.SetMaxIdleConns(4) // keep them: a new connection re-reads the schema
	db := bun.NewDB(sqldb, sqlitedialect.New())
	driver, err := sqlite.New(db, sqlite.Options{})
	if err != nil {
		return nil, nil, err
	}
	j, err := journal.New(driver, journal.Options{})
	if err != nil {
		return nil, nil, err
	}
	ops := engine.Options()
	if opsPassword != "" {
		if ops, err = operatorConsole(db, opsPassword); err != nil {
			return nil, nil, err
		}
	}
	offline := model()
	agent := ai.Agent("assistant", offline, ai.Tools(contract.Weather, contract.Transfer), 6)

	app, err := engine.New(
		engine.WithLogger(logger),
		durable.With(j),
		tracing(), // ENGINE_TRACE=stdout prints the spans (telemetry.go)
		// This demo has no sign-in: its flows, the transfer tool and the approval routes
		// are public, so anyone who can reach it, and holds an interrupt id, can approve
		// a transfer. PublicApprovals says so on purpose; a real app gates its tools
		// (gate.Auth, gate.Scopes) and leaves it off.
		ai.Install(ai.Options{PublicApprovals: true}),
		ai.Register(agent), // engine.New checks that its tools are bound
		engine.Bind(contract.Hello, func(fx *engine.Fx, in contract.HelloIn) (contract.HelloOut, error) {
			return contract.HelloOut{Message: "Hello, " + in.Name + "!"}, nil
		}),
		engine.Bind(contract.Divide, func(fx *engine.Fx, in contract.DivideIn) (contract.DivideOut, error) {
			if in.B == 0 {
				return contract.DivideOut{}, contract.DivideByZero.New(contract.DivideByZeroData{Dividend: in.A})
			}
			return contract.DivideOut{Quotient: in.A / in.B}, nil
		}),
		engine.Bind(contract.Weather, func(fx *engine.Fx, in contract.WeatherIn) (contract.WeatherOut, error) {
			return contract.WeatherOut{City: in.City, TempC: 12 + len(in.City)}, nil
		}),
		engine.Bind(contract.Transfer, func(fx *engine.Fx, in contract.TransferIn) (contract.TransferOut, error) {
			return contract.TransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
		}, ai.Approval(func(in contract.TransferIn) bool { return in.Amount > 100 })),
		engine.BindStream(contract.Ask, func(fx *engine.Fx, in contract.ChatIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, agent, in.Message, out, ai.RunOptions{})
		}),
		elements(),
		extract(offline), // structured output: structured.go
		// The greeter's flows as the tools of an MCP server at /_engine/mcp (stateless
		// streamable HTTP); any MCP client can list and call them.
		mcp.Serve(mcp.Options{Tools: []mcp.Selector{mcp.Units(contract.Greeter)}}),
		ops, // the operator's console at /_engine/console/, when QUICKSTART_OPS_PASSWORD is set
	)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	return app, func() { _ = db.Close() }, nil
}

// model is an offline scripted model that understands "weather in <city>" and
// "send <amount> to <name>". A real model is one line instead: see examples/provider.
func model() *ai.ModelDef {
	return ai.Model("offline", scripted.Func(offlineTurn), "offline")
}

var (
	weatherRe  = regexp.MustCompile(`(?i)weather in ([\p{L} ]+)`)
	transferRe = regexp.MustCompile(`(?i)send (\d+(?:\.\d+)?) to (\w+)`)
)

// offlineTurn answers like a tiny model: one tool call when the message asks for one,
// then a sentence about the tool's result.
func offlineTurn(req ai.Request) scripted.Turn {
	if asksForJSON(req) {
		return offlineJSON(req.Messages[0].Content)
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == ai.RoleTool {
		return scripted.Turn{Text: "Done: " + last.Content, Delay: 20 * time.Millisecond}
	}
	if m := weatherRe.FindStringSubmatch(last.Content); m != nil {
		return scripted.Turn{Text: "Let me check.", ToolCalls: []ai.ToolCall{{ID: "call_weather", Name: "tools_weather",
			Arguments: fmt.Sprintf(`{"city":%q}`, strings.TrimSpace(m[1]))}}}
	}
	if m := transferRe.FindStringSubmatch(last.Content); m != nil {
		amount, _ := strconv.ParseFloat(m[1], 64)
		return scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_transfer", Name: "tools_transfer",
			Arguments: fmt.Sprintf(`{"to":%q,"amount":%v}`, m[2], amount)}}}
	}
	return scripted.Turn{Text: "Offline model here. Try: \"weather in Paris\" or \"send 500 to bob\".", Delay: 20 * time.Millisecond}
}

func printTryThis(base string, console bool) {
	fmt.Printf(`engine quickstart listening on %[1]s

Try:
  curl %[1]s/hello/world                                   # REST
  curl -X POST %[1]s/_engine/greeter/divide -d '{"a":1,"b":0}'   # RPC and a declared error
  curl %[1]s/_engine/client.json                            # the descriptor
  curl -N -X POST %[1]s/chat -d '{"message":"weather in Paris"}'  # an agent stream (AG-UI over SSE)
  curl -N -X POST %[1]s/chat -d '{"message":"send 500 to bob"}'   # parks: copy the interrupt id and RUN_STARTED's runId
  curl -X POST %[1]s/agent/approvals/approve -d '{"id":"<interrupt id>"}'
  curl -N %[1]s/agent/runs/<RUN_STARTED runId>/events         # follow the agent run, resumable with Last-Event-ID
  curl -X POST %[1]s/_engine/board/post -d '"hello"'          # a channel; the clock posts every minute
  curl -X POST %[1]s/_engine/board/read -d '0'                # its history after seq 0
  curl -X POST %[1]s/_engine/orders/place -d '"tea"'          # parks until paid: copy meta.runId (a durable run's id)
  curl -X POST %[1]s/_engine/orders/pay -d '"<meta.runId>"'   # the signal the order waits for
  curl %[1]s/_engine/runs/<meta.runId>                      # the order's state and result
  curl -X POST %[1]s/_engine/extract/weather -d '{"text":"It is 21 degrees in Lisbon"}'  # structured output
  curl -X POST %[1]s/_engine/mcp -H 'Accept: application/json, text/event-stream' \
    -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'  # the MCP server
  go run ./examples/quickstart/client -url %[1]s             # the typed Go client
`, base)
	if console {
		fmt.Printf("\nThe console: %s/_engine/console/ (sign in as ops@example.com with QUICKSTART_OPS_PASSWORD)\n", base)
	} else {
		fmt.Println("\nSet QUICKSTART_OPS_PASSWORD to open the operator's console at /_engine/console/.")
	}
}
