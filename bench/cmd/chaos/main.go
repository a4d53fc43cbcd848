// Command chaos runs the fault harness of package bench/chaos for as many cycles as asked
// and prints what it counted:
//
//	go run ./bench/cmd/chaos -driver sqlite -cycles 1000
//	go run ./bench/cmd/chaos -driver postgres -cycles 1000          # $ENGINE_TEST_POSTGRES_DSN
//	go run ./bench/cmd/chaos -driver postgres -restart-postgres -cycles 20 \
//	    -restart-cmd 'pg_ctlcluster --skip-systemctl-redirect 15 main restart'
//
// -restart-postgres restarts the Postgres server under live instances in every cycle: it
// disturbs every other user of that server, so it is never on by default. The exit status
// is 1 when a promise was broken and 2 when the harness could not run (then it prints
// why and no figures) or stopped early (then the report says so).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/bbc28f59/engine/bench/chaos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs the harness and prints its report to stdout; progress and errors
// go to stderr. It returns the exit status: 0, 1 when a promise was broken, 2 when the
// harness could not run or stopped early. A run that did not happen prints no figures,
// only why: a report of zeros would read as a clean run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	logger := log.New(stderr, "", log.LstdFlags)
	cfg := chaos.Config{Logf: logger.Printf}
	var restartCmd string
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Driver, "driver", "sqlite", "journal driver: sqlite (one instance) or postgres (two instances)")
	fs.StringVar(&cfg.PostgresDSN, "dsn", os.Getenv("ENGINE_TEST_POSTGRES_DSN"), "Postgres server for -driver postgres")
	fs.IntVar(&cfg.Cycles, "cycles", 20, "fault cycles")
	fs.IntVar(&cfg.Conversations, "conversations", 6, "chats per cycle")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the fault points (0: random)")
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", 0, "instances' lease TTL (default 1s, 10s with -restart-postgres)")
	fs.BoolVar(&cfg.PostgresRestart, "restart-postgres", false, "restart Postgres under live instances instead of killing one (disturbs the server)")
	fs.BoolVar(&cfg.DBOutage, "db-outage", false, "make each cycle's fault a short database outage the instances see (a cut proxy on Postgres, a held write lock on SQLite) instead of a kill")
	fs.StringVar(&restartCmd, "restart-cmd", "pg_ctlcluster --skip-systemctl-redirect 15 main restart", "command that restarts Postgres")
	fs.StringVar(&cfg.AGUIVerify, "agui-verify", os.Getenv("AGUI_VERIFY"), "verify.mjs of the AG-UI verifier (optional)")
	fs.StringVar(&cfg.Dir, "dir", "", "working directory, which must exist (default: a new temporary one)")
	fs.StringVar(&cfg.Bin, "bin", "", "a built examples/conformance binary (default: build one into -dir)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "chaos-")
		if err != nil {
			fmt.Fprintln(stderr, "chaos:", err)
			return 2
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	if cfg.PostgresRestart {
		cfg.RestartPostgres = func(ctx context.Context) error {
			args := strings.Fields(restartCmd)
			out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %v\n%s", restartCmd, err, out)
			}
			return waitPostgres(ctx, cfg.PostgresDSN)
		}
	}
	rep, err := chaos.Run(ctx, cfg)
	if err != nil && rep.Cycles == 0 {
		fmt.Fprintln(stderr, "chaos: no cycle completed, so there is nothing to report:", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stdout, "chaos: INCOMPLETE, stopped after %d of %d cycles (%v); the counts below cover those cycles and part of the one that stopped\n", rep.Cycles, cfg.Cycles, err)
	}
	fmt.Fprint(stdout, rep.String())
	for _, n := range rep.Notes {
		fmt.Fprintln(stdout, "  note:", n)
	}
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	if rep.Failed() {
		return 1
	}
	return 0
}

// waitPostgres waits until the server accepts connections again.
func waitPostgres(ctx context.Context, dsn string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := chaos.Ping(ctx, dsn); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("postgres did not come back within 60s")
}
