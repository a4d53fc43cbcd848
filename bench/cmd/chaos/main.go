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
// is 1 when a promise was broken.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/bbc28f59/engine/bench/chaos"
)

func main() {
	cfg := chaos.Config{Logf: log.Printf}
	var restartCmd string
	flag.StringVar(&cfg.Driver, "driver", "sqlite", "journal driver: sqlite (one instance) or postgres (two instances)")
	flag.StringVar(&cfg.PostgresDSN, "dsn", os.Getenv("ENGINE_TEST_POSTGRES_DSN"), "Postgres server for -driver postgres")
	flag.IntVar(&cfg.Cycles, "cycles", 20, "fault cycles")
	flag.IntVar(&cfg.Conversations, "conversations", 6, "chats per cycle")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed of the fault points (0: random)")
	flag.DurationVar(&cfg.LeaseTTL, "lease-ttl", 0, "instances' lease TTL (default 1s, 10s with -restart-postgres)")
	flag.BoolVar(&cfg.PostgresRestart, "restart-postgres", false, "restart Postgres under live instances instead of killing one (disturbs the server)")
	flag.BoolVar(&cfg.DBOutage, "db-outage", false, "make each cycle's fault a short database outage the instances see (a cut proxy on Postgres, a held write lock on SQLite) instead of a kill")
	flag.StringVar(&restartCmd, "restart-cmd", "pg_ctlcluster --skip-systemctl-redirect 15 main restart", "command that restarts Postgres")
	flag.StringVar(&cfg.AGUIVerify, "agui-verify", os.Getenv("AGUI_VERIFY"), "verify.mjs of the AG-UI verifier (optional)")
	flag.StringVar(&cfg.Dir, "dir", "", "working directory (default: a new temporary one)")
	flag.StringVar(&cfg.Bin, "bin", "", "a built examples/conformance binary (default: build one into -dir)")
	flag.Parse()
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "chaos-")
		if err != nil {
			log.Fatal(err)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := chaos.Run(ctx, cfg)
	fmt.Print(rep.String())
	for _, n := range rep.Notes {
		fmt.Println("  note:", n)
	}
	if err != nil {
		log.Print(err)
		os.Exit(2)
	}
	if rep.Failed() {
		os.Exit(1)
	}
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
