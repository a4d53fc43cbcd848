// Command agentbench measures agent streaming outside `go test`: N concurrent
// agent runs of M text deltas on the scripted provider, over loopback, against a raw SSE
// handler writing the same frames, and the memory an idle open stream holds. The targets
// are raw, agent-unlogged (the plain flow in an app without a journal, so without an event
// log), agent (plain, with the journal -driver names) and agent-durable. It prints a
// progress line on stderr while it runs and the table of medians on stdout.
//
//	go run ./bench/cmd/agentbench                          # N=16, M=200, memory journal, 5 rounds
//	go run ./bench/cmd/agentbench -n 64 -m 50 -pace 1ms -driver sqlite
//	ENGINE_TEST_POSTGRES_DSN=postgres://… go run ./bench/cmd/agentbench -driver postgres
//
// With -url it measures an app of yours instead: N concurrent streams of its streaming
// route (POST, with -body and any -header), against the raw handler replaying the frames
// of one of its streams; with -pid (the app's process on this machine) the CPU per frame
// counts the app's CPU too:
//
//	go run ./bench/cmd/agentbench -url http://127.0.0.1:8080/chat -body '{"message":"hi"}' \
//	    -header 'Authorization: Bearer …' -pid 12345
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
)

type config struct {
	n, m, rounds, idle              int
	pace, sample                    time.Duration
	driver, cpuProfile, heapProfile string
	noTail                          bool
	app                             agentbench.External
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 16, "concurrent runs per batch")
	flag.IntVar(&c.m, "m", 200, "text deltas per run")
	flag.DurationVar(&c.pace, "pace", 0, "the scripted model's wait before every chunk (0: as fast as the loop goes)")
	flag.DurationVar(&c.sample, "sample", 100*time.Millisecond, "how long each target streams per round, in back-to-back batches")
	flag.StringVar(&c.driver, "driver", agentbench.Memory, "journal driver: memory, sqlite or postgres ($"+agentbench.PostgresEnv+")")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds of one batch per target; the table shows medians")
	flag.IntVar(&c.idle, "idle", 500, "idle streams held open per target for the memory figure (0 skips it)")
	flag.BoolVar(&c.noTail, "no-tail", false, "turn off the journal's in-process follow tail (as on an instance that did not run the runs)")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	flag.StringVar(&c.heapProfile, "heapprofile", "", "write a heap profile per target while its idle streams are open, to this prefix + -<target>.pprof")
	hdr := agentbench.HeaderFlag{}
	flag.StringVar(&c.app.URL, "url", "", "measure your app's streaming route (POST) instead of the harness's agent")
	flag.StringVar(&c.app.Body, "body", `{"message":"go"}`, "with -url: the request body")
	flag.Var(hdr, "header", "with -url: a request header 'Name: value' (repeatable)")
	flag.IntVar(&c.app.PID, "pid", 0, "with -url: the app's process id, so its CPU counts in its CPU per frame")
	flag.Parse()
	c.app.Header = http.Header(hdr)
	if c.n <= 0 || c.m <= 0 || c.rounds <= 0 || c.idle < 0 || c.pace < 0 || c.sample <= 0 {
		fmt.Fprintln(os.Stderr, "agentbench: -n, -m, -rounds and -sample must be positive; -idle and -pace must not be negative")
		os.Exit(2)
	}
	if c.heapProfile != "" {
		runtime.MemProfileRate = 512 // every stream's few KiB, not a sample of them; slows the run
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "\n"+err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out, progress io.Writer) error {
	start := time.Now()
	status := func(format string, args ...any) {
		line := fmt.Sprintf("[%5.1fs] "+format, append([]any{time.Since(start).Seconds()}, args...)...)
		fmt.Fprintf(progress, "\r%-72s", line) // padded so a shorter line covers a longer one
	}
	if c.app.URL != "" {
		status("capturing a stream of %s", c.app.URL)
	} else {
		status("starting the harness (%s journal)", c.driver)
	}
	e, err := agentbench.New(ctx, agentbench.Options{Deltas: c.m, Pace: c.pace, Driver: c.driver, NoTail: c.noTail, SampleTime: c.sample, App: c.app})
	if err != nil {
		return err
	}
	defer e.Close()
	if c.heapProfile != "" {
		e.WhileIdle = func(t agentbench.Target) { writeHeapProfile(fmt.Sprintf("%s-%s.pprof", c.heapProfile, t), progress) }
	}
	status("warming up")
	if _, err := e.Round(ctx, c.n, 0); err != nil {
		return err
	}
	if c.cpuProfile != "" {
		stopProfile, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	var rounds [][]agentbench.Sample
	for i := range c.rounds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		status("round %d/%d: %d runs × %d frames per target", i+1, c.rounds, c.n, e.FramesPerRun())
		r, err := e.Round(ctx, c.n, i)
		if err != nil {
			return err
		}
		rounds = append(rounds, r)
	}
	sum, err := agentbench.Summarize(rounds)
	if err != nil {
		return err
	}
	idle := map[agentbench.Target]agentbench.Idle{}
	for _, t := range agentbench.Targets {
		if c.idle == 0 || c.app.URL != "" { // an app's idle memory is in its own process: see bench/lab/cmd/capacity
			break
		}
		status("holding %d idle %s streams open", c.idle, t)
		v, err := e.IdleMemory(ctx, t, c.idle)
		if err != nil {
			return err
		}
		idle[t] = v
	}
	status("done")
	fmt.Fprintln(progress)
	return printTable(out, c, e, sum, idle)
}

// startCPUProfile profiles the process into path until the returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeHeapProfile writes the live heap, after a GC, to path; a failure is reported, not fatal.
func writeHeapProfile(path string, progress io.Writer) {
	runtime.GC()
	f, err := os.Create(path)
	if err == nil {
		err = pprof.WriteHeapProfile(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(progress, "\nagentbench: heap profile: %v\n", err)
	}
}

func printTable(out io.Writer, c config, e *agentbench.Env, sum []agentbench.Summary, idle map[agentbench.Target]agentbench.Idle) error {
	if c.app.URL != "" {
		fmt.Fprintf(out, "agentbench: N=%d concurrent streams of %s (%d frames in the captured stream, replayed by raw), %d rounds of %s per target (medians); %s, GOMAXPROCS=%d\n",
			c.n, c.app.URL, e.FramesPerRun(), c.rounds, c.sample, runtime.Version(), runtime.GOMAXPROCS(0))
		note := "app: allocations, bytes and writes are counted in this process only, so they are shown for raw alone"
		if c.app.PID == 0 {
			note += "; CPU per frame needs -pid"
		} else {
			note += fmt.Sprintf("; the app's CPU is read from process %d", c.app.PID)
		}
		fmt.Fprintln(out, note)
		fmt.Fprintln(out)
	} else {
		fmt.Fprintf(out, "agentbench: N=%d concurrent runs × M=%d deltas (%d frames a run), pace %s, %s journal, %d rounds of %s per target (medians); %s, GOMAXPROCS=%d\n\n",
			c.n, c.m, e.FramesPerRun(), c.pace, c.driver, c.rounds, c.sample, runtime.Version(), runtime.GOMAXPROCS(0))
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tframes/s\tx-raw\tCPU/frame\tx-raw (CPU)\tallocs/frame\tB/frame\twrites/frame\tfirst frame\trows/1k deltas\tdelta rows/1k\t")
	for _, s := range sum {
		rows, drows := "-", "-"
		if s.Target.Logged() {
			rows, drows = fmt.Sprintf("%.1f", s.RowsPer1k), fmt.Sprintf("%.1f", s.DeltaRowsPer1k)
		}
		cpu, xcpu := s.CPUPerFrame.Round(10*time.Nanosecond).String(), fmt.Sprintf("%.2f", s.XRawCPU)
		allocs, bytes, writes := fmt.Sprintf("%.1f", s.AllocsPerFrame), fmt.Sprintf("%.0f", s.BytesPerFrame), fmt.Sprintf("%.3f", s.WritesPerFrame)
		if !s.Target.Local() {
			allocs, bytes, writes = "-", "-", "-"
			if c.app.PID == 0 {
				cpu, xcpu = "-", "-"
			}
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Target, s.FramesPerSec, s.XRaw,
			cpu, xcpu, allocs, bytes, writes, s.FirstFrame.Round(time.Microsecond), rows, drows)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(idle) == 0 {
		return nil
	}
	fmt.Fprintf(out, "\nidle streams: %d open per target; HeapInuse+StackInuse growth per stream after a GC\n\n", c.idle)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tB/stream\theap\tstack\tx-raw\t")
	raw := idle[agentbench.Raw].Total()
	for _, t := range agentbench.Targets {
		v := idle[t]
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.2f\t\n", t, v.Total(), v.Heap, v.Stack, v.Total()/raw)
	}
	return tw.Flush()
}
