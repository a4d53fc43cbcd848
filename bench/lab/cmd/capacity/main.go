// Command capacity measures how many live conversations a server holds: simulated
// conversations streaming at a model's pace over real HTTP, ramped until the token delay
// p99 passes a threshold or conversations fail. It prints a table, writes every level as
// JSON and CSV, and draws the plots (gonum/plot) into -out.
//
// Without -url it measures this repository's targets, each on a server process of its
// own (this executable started again as the server): the raw SSE handler, the engine
// with no journal, and the memory, SQLite and Postgres journals with the chat flow plain
// and durable. With -url it loads your app's streaming route instead:
//
//	cd bench/lab
//	go run ./cmd/capacity                                   # every target, about 15-20 min
//	go run ./cmd/capacity -targets raw,sqlite-durable -budget 1m
//	go run ./cmd/capacity -targets raw,none -interleave -start 575 -idle -1
//	go run ./cmd/capacity -url http://127.0.0.1:8080/chat \
//	    -header 'Authorization: Bearer …' -body '{"message":{{message}}}' -pid 12345
//	go run ./cmd/capacity -from out/capacity.json           # the table and plots of a saved run
//	go run ./cmd/capacity -pg-ceiling                       # Postgres commits and NOTIFY ceilings
//
// bench/README.md ("Capacity") explains the figures and the guide for your own app.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/bbc28f59/engine/bench/capacity"
	"github.com/bbc28f59/engine/bench/internal/agentbench"
	"github.com/bbc28f59/engine/bench/lab/capacityplot"
)

func main() {
	capacity.MaybeServe() // this executable is also every target's server
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command: it returns the exit status (0; 1 when a target could not be
// measured; 2 when nothing was, which prints only why).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		o                   capacity.Options
		targets, out, label string
		replot              string
		pgCeiling           bool
		priority            int
		hdr                 = agentbench.HeaderFlag{}
	)
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&targets, "targets", strings.Join(capacity.Targets, ","), "targets to measure, in order")
	fs.IntVar(&o.Ramp.Pace.Tokens, "tokens", 300, "tokens of a reply")
	fs.Float64Var(&o.Ramp.Pace.Rate, "rate", 50, "the model's pace, tokens/s per conversation")
	fs.Float64Var(&o.Ramp.Pace.Jitter, "jitter", 0.5, "each gap between tokens is (1 ± jitter) / rate, uniformly")
	fs.Float64Var(&o.Ramp.Pace.FirstToken, "first-token", 500, "the model's time to first token, ms")
	fs.Float64Var(&o.Ramp.ToolShare, "tool-share", 0.2, "share of conversations that call a tool (with an approval on durable flows); 0 for none")
	fs.DurationVar(&o.Ramp.Threshold, "threshold", 50*time.Millisecond, "token delay p99 a level must stay within")
	fs.DurationVar(&o.Ramp.StartThreshold, "start-threshold", time.Second, "request → first frame p99 a level must stay within")
	fs.IntVar(&o.Ramp.Start, "start", 50, "concurrent conversations of the first level")
	fs.IntVar(&o.Ramp.Max, "max", 4000, "largest level")
	fs.Float64Var(&o.Ramp.Growth, "growth", 1.5, "level growth while the p99 is under half the threshold")
	fs.IntVar(&o.Ramp.Refine, "refine", 2, "bisections between the last level that held and the first that did not")
	fs.DurationVar(&o.Ramp.Warmup, "warmup", 3*time.Second, "time a level runs before it is measured")
	fs.DurationVar(&o.Ramp.Window, "window", 6*time.Second, "time a level is measured")
	fs.DurationVar(&o.Ramp.Budget, "budget", 200*time.Second, "no level starts after this much of a target's ramp")
	fs.IntVar(&o.Idle, "idle", 2000, "idle streams opened per target (negative: skip)")
	fs.IntVar(&o.PostgresPool, "pg-pool", 0, "most connections of each Postgres target's pool (0: pgxpool's default, max(4, CPUs))")
	fs.StringVar(&o.PostgresDSN, "dsn", os.Getenv("ENGINE_TEST_POSTGRES_DSN"), "Postgres server of the postgres targets (each gets a database of its own)")
	fs.StringVar(&o.Endpoint.URL, "url", "", "your app's streaming route (POST); measured instead of -targets")
	fs.StringVar(&o.Endpoint.Body, "body", `{"message":{{message}}}`, "request body; {{message}} is the pace as a JSON string, {{conversation}} a number")
	fs.Var(hdr, "header", "a request header 'Name: value' (repeatable)")
	fs.StringVar(&o.Endpoint.Schedule, "schedule", capacity.ScheduleStamp, "stamp: tokens carry their scheduled time (the capacity model); pace: due at first token + i/rate")
	fs.StringVar(&o.Endpoint.TokenFrame, "token-frame", "TEXT_MESSAGE_CONTENT", "text that marks a token's frame")
	fs.StringVar(&o.Endpoint.APIBase, "api-base", "", "base URL of the approval and follow routes (default: the -url's origin)")
	fs.IntVar(&o.PID, "pid", 0, "with -url: the app's process id, for server CPU and memory")
	fs.StringVar(&out, "out", "capacity-out", "directory for capacity.json, levels.csv and the plots")
	fs.StringVar(&label, "label", "", "what is measured, shown on the table and plots (default: git describe)")
	fs.StringVar(&replot, "from", "", "print the table of this capacity.json, draw its plots into -out, and exit")
	fs.BoolVar(&pgCeiling, "pg-ceiling", false, "measure the Postgres server's commit and NOTIFY ceilings and connection budget instead")
	fs.BoolVar(&o.Interleave, "interleave", false, "ramp the targets together: every level held on each target in turn, so a drift of the machine's speed reaches all alike")
	fs.IntVar(&priority, "nice", 0, "run the benchmark (client and servers) at this niceness, e.g. -10 on a shared machine (negative needs root)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if priority != 0 {
		if err := capacity.SetPriority(priority); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}
	if len(hdr) > 0 {
		o.Endpoint.Header = http.Header(hdr)
	}
	if pgCeiling {
		return ceiling(ctx, o.PostgresDSN, stdout, stderr)
	}
	if replot != "" {
		return redraw(replot, out, stdout, stderr)
	}
	if o.Endpoint.URL == "" {
		o.Targets = strings.Split(targets, ",")
	}
	if o.Ramp.ToolShare == 0 {
		o.Ramp.ToolShare = -1 // 0 on the command line means none
	}
	o.Progress = func(target, line string) {
		fmt.Fprintf(stderr, "%s %-16s %s\n", time.Now().Format("15:04:05"), target, line)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(stderr, "capacity:", err)
		return 2
	}
	rep, err := capacity.Run(ctx, o)
	if label == "" {
		label = describe()
	}
	rep.Label = label
	measured := 0
	for _, r := range rep.Results {
		if r.Error == "" {
			measured++
		}
	}
	if measured == 0 {
		fmt.Fprintln(stderr, "capacity: nothing was measured, so there are no figures:")
		if err != nil {
			fmt.Fprintln(stderr, "  "+err.Error())
		}
		for _, r := range rep.Results {
			fmt.Fprintf(stderr, "  %s: %s\n", r.Target, r.Error)
		}
		return 2
	}
	if err != nil {
		fmt.Fprintf(stdout, "capacity: INCOMPLETE, stopped early (%v); the targets below were measured before it\n", err)
	}
	if werr := write(rep, out, stdout, stderr); werr != nil {
		fmt.Fprintln(stderr, "capacity:", werr)
		return 2
	}
	if err != nil || measured < len(rep.Results) {
		return 1
	}
	return 0
}

// write prints the table and writes the JSON, the CSV and the plots.
func write(rep capacity.Report, out string, stdout, stderr io.Writer) error {
	if err := capacity.WriteTable(stdout, rep); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "capacity.json"), b, 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "levels.csv"))
	if err != nil {
		return err
	}
	if err := errors.Join(capacity.WriteLevels(f, rep), f.Close()); err != nil {
		return err
	}
	paths, err := capacityplot.Save(rep, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s, %s and %s\n", filepath.Join(out, "capacity.json"), filepath.Join(out, "levels.csv"), strings.Join(paths, ", "))
	return nil
}

// redraw prints the table of a saved report and draws its plots.
func redraw(path, out string, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "capacity:", err)
		return 2
	}
	var rep capacity.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		fmt.Fprintf(stderr, "capacity: %s: %v\n", path, err)
		return 2
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(stderr, "capacity:", err)
		return 2
	}
	if err := capacity.WriteTable(stdout, rep); err != nil {
		fmt.Fprintln(stderr, "capacity:", err)
		return 2
	}
	paths, err := capacityplot.Save(rep, out)
	if err != nil {
		fmt.Fprintln(stderr, "capacity:", err)
		return 2
	}
	fmt.Fprintln(stderr, "wrote", strings.Join(paths, ", "))
	return 0
}

// describe is the checkout's git describe, or "".
func describe() string {
	b, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ceiling measures the Postgres server's ceilings (see capacity.PostgresCeiling).
func ceiling(ctx context.Context, dsn string, stdout, stderr io.Writer) int {
	if dsn == "" {
		fmt.Fprintln(stderr, "capacity: -pg-ceiling needs a Postgres server: -dsn or $ENGINE_TEST_POSTGRES_DSN")
		return 2
	}
	c, err := capacity.PostgresCeiling(ctx, dsn, 3*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "capacity: the ceilings could not be measured, so there are no figures:", err)
		return 2
	}
	if err := capacity.WriteCeiling(stdout, c); err != nil {
		fmt.Fprintln(stderr, "capacity:", err)
		return 2
	}
	return 0
}
