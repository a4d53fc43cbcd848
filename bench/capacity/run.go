package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
	"github.com/bbc28f59/engine/internal/testenv"
)

// Targets are the repository's own targets, in the order tables show them: the raw SSE
// handler, the engine with no journal (so no event log), and each journal driver with
// the chat flow plain and durable.
var Targets = []string{"raw", "none", "memory", "memory-durable", "sqlite", "sqlite-durable", "postgres", "postgres-durable"}

// ServerConfigOf returns the server of a target named in [Targets].
func ServerConfigOf(target string) (ServerConfig, error) {
	switch target {
	case "raw":
		return ServerConfig{Raw: true}, nil
	case "none":
		return ServerConfig{}, nil
	}
	driver, durable := strings.CutSuffix(target, "-durable")
	switch driver {
	case agentbench.Memory, agentbench.SQLite, agentbench.Postgres:
		return ServerConfig{Journal: driver, Durable: durable}, nil
	}
	return ServerConfig{}, fmt.Errorf("capacity: unknown target %q (want one of %s)", target, strings.Join(Targets, ", "))
}

// Options configure [Run].
type Options struct {
	// Targets to measure, from [Targets]. Default all.
	Targets []string
	// Endpoint, when its URL is set, is measured instead of the repository's targets: an
	// app of yours, already running. PID, when set, is its process, for CPU and memory.
	Endpoint Endpoint
	PID      int
	// Ramp configures every ramp.
	Ramp RampOptions
	// Idle is the number of idle streams opened per target. Default 2000; negative skips.
	Idle int
	// PostgresDSN is the server of the Postgres targets; default $ENGINE_TEST_POSTGRES_DSN.
	// Each target gets a database of its own there, dropped afterwards.
	PostgresDSN string
	// PostgresPool is the most connections each Postgres target's pool opens; 0 keeps
	// pgxpool's default, max(4, CPUs).
	PostgresPool int
	// Server is the executable started as each target's server; it must call
	// [MaybeServe] first thing. Default: this process's own executable.
	Server string
	// SlowToken is passed to the raw target's server ([ServerConfig.SlowToken]).
	SlowToken time.Duration
	// Interleave measures the targets together ([RunInterleaved]): their servers run side
	// by side and every level is held on each in turn, so a drift of the machine's speed
	// reaches every target's knee alike. It needs two targets or more and no Endpoint.
	Interleave bool
	// Progress, when set, receives a line per step.
	Progress func(target, line string)
}

// Result is one target's figures, or why it has none.
type Result struct {
	Target  string `json:"target"`
	Ramp    *Ramp  `json:"ramp,omitempty"`
	Idle    *Idle  `json:"idle,omitempty"`
	Commits string `json:"commits,omitempty"` // what the commit figure counts
	// Error says why the target could not be measured; a target with an error has no
	// figures. IdleError is the same for the idle end alone.
	Error     string `json:"error,omitempty"`
	IdleError string `json:"idleError,omitempty"`
}

// Report is a capacity run.
type Report struct {
	Label      string        `json:"label,omitempty"` // what was measured, e.g. a commit
	Started    time.Time     `json:"started"`
	Elapsed    time.Duration `json:"elapsedNs"`
	Go         string        `json:"go"`
	CPUs       int           `json:"cpus"`
	LoadBefore float64       `json:"loadBefore"`
	LoadAfter  float64       `json:"loadAfter"`
	// Nice is the scheduling niceness of the benchmark's autogroup (Linux groups a
	// session's processes; the target servers are in the load client's), as set with
	// [SetPriority]: against neighbours in other sessions only the group's niceness counts.
	Nice      int           `json:"nice"`
	Pace      Pace          `json:"pace"`
	ToolShare float64       `json:"toolShare"`
	Threshold time.Duration `json:"thresholdNs"`
	// Interleaved says the targets were ramped together ([Options.Interleave]).
	Interleaved bool     `json:"interleaved,omitempty"`
	Results     []Result `json:"results"`
}

// Run measures every target in turn, each on a fresh server process (and a fresh one
// again for its idle end, so the ramp's heap does not hide the idle streams' growth). A
// target that cannot be measured gets an error in its result and the run goes on; Run
// itself fails only on bad options or when ctx ends.
func Run(ctx context.Context, opts Options) (Report, error) {
	if err := opts.Ramp.defaults(); err != nil {
		return Report{}, err
	}
	if opts.Idle == 0 {
		opts.Idle = 2000
	}
	if opts.Endpoint.URL == "" {
		if len(opts.Targets) == 0 {
			opts.Targets = Targets
		}
		for _, t := range opts.Targets {
			if _, err := ServerConfigOf(t); err != nil {
				return Report{}, err
			}
		}
		if opts.Server == "" {
			exe, err := os.Executable()
			if err != nil {
				return Report{}, err
			}
			opts.Server = exe
		}
	} else if err := opts.Endpoint.defaults(); err != nil {
		return Report{}, err
	}
	if opts.Interleave && (opts.Endpoint.URL != "" || len(opts.Targets) < 2) {
		return Report{}, errors.New("capacity: interleaving ramps two of the repository's targets or more together, not an app's endpoint")
	}
	if opts.PostgresDSN == "" {
		opts.PostgresDSN = os.Getenv(agentbench.PostgresEnv)
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, string) {}
	}
	rep := Report{Started: time.Now(), Go: runtime.Version(), CPUs: runtime.NumCPU(), LoadBefore: LoadAverage(), Nice: niceness(),
		Pace: opts.Ramp.Pace, ToolShare: max(0, opts.Ramp.ToolShare), Threshold: opts.Ramp.Threshold, Interleaved: opts.Interleave}
	switch {
	case opts.Endpoint.URL != "":
		rep.Results = append(rep.Results, runEndpoint(ctx, opts, progress))
	case opts.Interleave:
		rep.Results = runInterleaved(ctx, opts, progress)
	}
	for _, t := range opts.Targets {
		if opts.Endpoint.URL != "" || opts.Interleave {
			break
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, runTarget(ctx, opts, t, progress))
	}
	rep.Elapsed, rep.LoadAfter = time.Since(rep.Started), LoadAverage()
	return rep, ctx.Err()
}

// niceness is the nice value of this process's autogroup (/proc/self/autogroup), or of
// the process where autogroups are off.
func niceness() int {
	if b, err := os.ReadFile("/proc/self/autogroup"); err == nil {
		if _, v, ok := strings.Cut(strings.TrimSpace(string(b)), " nice "); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - prio // the kernel's getpriority returns 20 − nice
}

// SetPriority sets the niceness of this process's autogroup (on Linux, the scheduler
// shares the CPU between sessions first, so a process's own nice value does not count
// against a neighbour's build in another session) and of the process. The target
// servers started afterwards are in the same group. A negative value needs root.
func SetPriority(nice int) error {
	if err := os.WriteFile("/proc/self/autogroup", []byte(strconv.Itoa(nice)), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("capacity: setting the autogroup's nice to %d: %w", nice, err)
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice); err != nil {
		return fmt.Errorf("capacity: setting the nice value to %d: %w", nice, err)
	}
	return nil
}

// runEndpoint measures an app of the user's.
func runEndpoint(ctx context.Context, opts Options, progress func(string, string)) Result {
	name := opts.Endpoint.URL
	res := Result{Target: name}
	probe := Probe{PID: opts.PID}
	ramp, err := RunRamp(ctx, opts.Endpoint, probe, withProgress(opts.Ramp, name, progress))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Ramp = &ramp
	if opts.Idle > 0 {
		progress(name, fmt.Sprintf("opening %d idle streams", opts.Idle))
		idle, err := IdleStreams(ctx, opts.Endpoint, probe, opts.Idle)
		if err != nil {
			res.IdleError = err.Error()
		} else {
			res.Idle = &idle
		}
	}
	return res
}

// runTarget measures one of the repository's targets on servers of its own.
func runTarget(ctx context.Context, opts Options, name string, progress func(string, string)) Result {
	res := Result{Target: name}
	t, err := newTarget(ctx, opts, name)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer t.close()
	res.Commits = t.probe.Commits()
	progress(name, "starting its server")
	proc, ep, p, err := t.start(opts.Server)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	ramp, err := RunRamp(ctx, ep, p, withProgress(opts.Ramp, name, progress))
	proc.Stop(10 * time.Second)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Ramp = &ramp
	t.idle(ctx, opts, progress, &res)
	return res
}

// runInterleaved measures the repository's targets together ([RunInterleaved]), each on
// a server of its own, the servers running side by side, then, once they are stopped,
// each one's idle end on a fresh server.
func runInterleaved(ctx context.Context, opts Options, progress func(string, string)) []Result {
	res := make([]Result, len(opts.Targets))
	var (
		ts     []*target
		procs  []*testenv.Process
		sides  []Side
		failed error
	)
	stopAll := func() {
		for _, p := range procs {
			p.Stop(10 * time.Second)
		}
		procs = nil
	}
	defer stopAll()
	for i, name := range opts.Targets {
		res[i].Target = name
		t, err := newTarget(ctx, opts, name)
		if err != nil {
			failed = err
			break
		}
		defer t.close()
		res[i].Commits = t.probe.Commits()
		progress(name, "starting its server")
		proc, ep, p, err := t.start(opts.Server)
		if err != nil {
			failed = err
			break
		}
		procs, ts = append(procs, proc), append(ts, t)
		sides = append(sides, Side{Endpoint: ep, Probe: p, Progress: withProgress(opts.Ramp, name, progress).Progress})
	}
	var ramps []Ramp
	if failed == nil {
		ramps, failed = RunInterleaved(ctx, sides, opts.Ramp)
	}
	stopAll() // the idle ends below run on fresh servers, alone
	if failed != nil {
		for i := range res {
			res[i].Error = "interleaved: " + failed.Error()
		}
		return res
	}
	for i, t := range ts {
		res[i].Ramp = &ramps[i]
		t.idle(ctx, opts, progress, &res[i])
	}
	return res
}

// target is one of the repository's targets, ready to start servers of.
type target struct {
	name  string
	cfg   ServerConfig
	probe Probe
	close func() // drops its Postgres database, if it has one
}

func newTarget(ctx context.Context, opts Options, name string) (*target, error) {
	cfg, _ := ServerConfigOf(name)
	if cfg.Raw {
		cfg.SlowToken = opts.SlowToken
	}
	t := &target{name: name, cfg: cfg, probe: Probe{SQLite: cfg.Journal == agentbench.SQLite}, close: func() {}}
	if cfg.Journal == agentbench.Postgres {
		if opts.PostgresDSN == "" {
			return nil, agentbench.ErrNoPostgres
		}
		dsn, db, drop, err := newDatabase(ctx, opts.PostgresDSN, opts.PostgresPool)
		if err != nil {
			return nil, err
		}
		t.cfg.PostgresDSN, t.probe.PostgresDSN, t.probe.Database, t.close = dsn, opts.PostgresDSN, db, drop
	}
	return t, nil
}

// start starts a server of the target from the executable server.
func (t *target) start(server string) (*testenv.Process, Endpoint, Probe, error) {
	spec, _ := json.Marshal(t.cfg)
	proc, err := testenv.Start(server, testenv.ProcessOptions{Env: []string{ServerEnv + "=" + string(spec)}, Ready: 2 * time.Minute})
	if err != nil {
		return nil, Endpoint{}, Probe{}, fmt.Errorf("capacity: starting the %s server: %w", t.name, err)
	}
	p := t.probe
	p.PID, p.StatsURL = proc.Pid(), proc.URL+StatsPath
	return proc, Endpoint{URL: proc.URL + ChatPath}, p, nil
}

// idle measures the target's idle end on a fresh server, so a ramp's heap does not hide
// the idle streams' growth, into res.
func (t *target) idle(ctx context.Context, opts Options, progress func(string, string), res *Result) {
	if opts.Idle < 0 {
		return
	}
	progress(t.name, fmt.Sprintf("opening %d idle streams on a fresh server", opts.Idle))
	proc, ep, p, err := t.start(opts.Server)
	if err != nil {
		res.IdleError = err.Error()
		return
	}
	defer proc.Stop(10 * time.Second)
	idle, err := IdleStreams(ctx, ep, p, opts.Idle)
	if err != nil {
		res.IdleError = err.Error()
		return
	}
	res.Idle = &idle
}

func withProgress(o RampOptions, target string, progress func(string, string)) RampOptions {
	o.Progress = func(l Level) {
		verdict := "held"
		if !l.OK {
			verdict = "did not hold"
		}
		progress(target, fmt.Sprintf("%d conversations: %.0f tokens/s, delay p99 %s ms, %d errors, server %s cores: %s",
			l.Conversations, float64(l.TokensPerSec), show(l.DelayP99, 1), l.Errors, show(l.ServerCores, 2), verdict))
	}
	return o
}

// newDatabase creates a database of its own on the server of dsn and returns its DSN, its
// name, and a function that drops it (ending any connection left to it).
func newDatabase(ctx context.Context, dsn string, pool int) (string, string, func(), error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", "", nil, fmt.Errorf("capacity: connecting to Postgres: %w", err)
	}
	defer conn.Close(ctx)
	name := "capacity_" + testenv.RandomHex(4)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", nil, fmt.Errorf("capacity: creating a database of the target's own: %w", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", "", nil, err
	}
	u.Path = "/" + name
	if pool > 0 {
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(pool))
		u.RawQuery = q.Encode()
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), name, drop, nil
}
