// Package chaos is the fault harness of the durable promise: it runs real processes of
// the reference app (examples/conformance) on Postgres (two instances) or SQLite (one),
// drives approval conversations against them with a fake model, and in every cycle kills
// an instance with SIGKILL at a random point (before the park, right after the approval,
// in the middle of the answer's stream) and starts it again; in the DBOutage mode it cuts
// the instances off their database for a moment instead (a cut proxy to Postgres, a write
// lock held past SQLite's busy timeout); in the opt-in PostgresRestart mode it restarts
// the database server under live instances. After each cycle it
// counts, from what the clients saw and what the database holds: runs, handler
// executions per idempotency key, duplicate child runs, effects applied twice, log
// events missing against the recorded steps, and ids shown to a client whose stored row
// is another event.
//
//	go run ./bench/cmd/chaos -driver sqlite -cycles 1000
//
// TestChaos runs a bounded version; see bench/README.md for the long runs.
package chaos

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read what the instances stored
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"

	"github.com/bbc28f59/engine/internal/testenv"
)

// Config is one chaos run.
type Config struct {
	// Driver is "sqlite" (one instance) or "postgres" (two instances on PostgresDSN).
	Driver string
	// PostgresDSN is the server the postgres driver uses; the run creates a schema of its
	// own there and drops it at the end.
	PostgresDSN string
	// Cycles is how many fault cycles to run. Default 20.
	Cycles int
	// Conversations is how many chats each cycle runs at once. Default 6.
	Conversations int
	// PostgresRestart restarts the Postgres server in every cycle (with RestartPostgres)
	// instead of killing an instance. It disturbs every user of that server: opt in only.
	PostgresRestart bool
	// DBOutage makes every cycle's fault a short outage of the database seen by the
	// instances only, instead of a kill: on Postgres the harness cuts every connection of
	// the proxy the instances reach the server through and refuses new ones for a while;
	// on SQLite it holds the write lock longer than the instances' busy timeout. No
	// process dies, so the journal's write retries must carry every run through: any
	// re-execution is a failure, as with PostgresRestart. Other users of the server are
	// not disturbed.
	DBOutage bool
	// RestartPostgres restarts the server; required with PostgresRestart.
	RestartPostgres func(ctx context.Context) error
	// LeaseTTL is the instances' lease TTL (ENGINE_LEASE_TTL). Default 1s when killing,
	// 10s when restarting Postgres (longer than a restart, so live owners keep their runs).
	LeaseTTL time.Duration
	// Seed makes the kill points reproducible. Default: random (reported).
	Seed uint64
	// Dir is where the binary, the SQLite database and transcripts go. Required.
	Dir string
	// Bin is a built examples/conformance binary; built into Dir when empty.
	Bin string
	// AGUIVerify is the path of the AG-UI verifier's verify.mjs; when set, every
	// conversation's transcript (as seen and as stored) is checked with it.
	AGUIVerify string
	// Logf receives progress lines. Default: none.
	Logf func(format string, args ...any)
}

// Report is what a chaos run counted.
type Report struct {
	Driver, Mode string
	Seed         uint64
	Cycles       int
	Faults       map[string]int // kill points (or restarts) by phase
	Elapsed      time.Duration

	Conversations int // chats driven
	Unfinished    int // chats whose run did not end completed
	Reposts       int // chats posted again because their instance died before it began the run
	ChildRuns     int // tools.transfer runs
	StepsChecked  int // recorded steps whose events were looked for in the log

	DuplicateChildRuns int // tools.transfer runs beyond one per tool call
	Effects            int // transfers rows
	MissingEffects     int // completed chats without their transfer
	EffectsTwice       int // transfers made more than once for one tool call (different keys)
	HandlerExecutions  int // executions of the transfer handler, summed over keys
	ReExecutions       int // executions beyond the first, per key
	ExcessExecutions   int // executions beyond the one re-execution a cycle's one kill allows

	MissingEvents     int // events of recorded steps absent from the stored log
	IDsShown          int // ids a client was shown
	IDsNeverStored    int // of those, ids whose row was never stored (their instance died first)
	ChangedIDs        int // ids whose stored row is another event than the one shown
	LostEvents        int // stored rows after a client's resume point that never reached it
	BadRunSequences   int // transcripts (seen or stored) where a run starts inside a run or an event falls outside one
	InvalidSequences  int // cycles whose transcripts the AG-UI verifier refused
	Failures          []string
	Notes             []string
	truncatedFailures int
}

// Failed reports whether the run broke a promise: a duplicate child run, an effect made
// twice or never, a missing event, an id whose meaning changed, a lost event, an invalid
// sequence, or a chat that did not finish. With PostgresRestart, any re-execution too.
func (r Report) Failed() bool {
	return len(r.Failures) > 0 || r.truncatedFailures > 0 || (r.Mode == "postgres-restart" || r.Mode == "db-outage") && r.ReExecutions > 0
}

// String is the report as a table.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: driver %s, mode %s, seed %d, %d cycles in %s, faults %v\n", r.Driver, r.Mode, r.Seed, r.Cycles, r.Elapsed.Round(time.Second), r.Faults)
	row := func(name string, v int) { fmt.Fprintf(&b, "  %-52s %d\n", name, v) }
	row("conversations", r.Conversations)
	row("  unfinished", r.Unfinished)
	row("  posted again (instance died before the run began)", r.Reposts)
	row("tools.transfer runs", r.ChildRuns)
	row("  duplicate child runs", r.DuplicateChildRuns)
	row("transfers made", r.Effects)
	row("  missing", r.MissingEffects)
	row("  made twice (different keys)", r.EffectsTwice)
	row("transfer handler executions", r.HandlerExecutions)
	row("  re-executions (same key)", r.ReExecutions)
	row("  beyond one re-execution per fault", r.ExcessExecutions)
	row("recorded steps checked against the log", r.StepsChecked)
	row("  events missing from the log", r.MissingEvents)
	row("ids shown to clients", r.IDsShown)
	row("  never stored (instance died first)", r.IDsNeverStored)
	row("  stored as another event", r.ChangedIDs)
	row("stored events that never reached a resuming client", r.LostEvents)
	row("transcripts whose runs do not pair up", r.BadRunSequences)
	row("cycles with a transcript the AG-UI verifier refused", r.InvalidSequences)
	fmt.Fprintf(&b, "  %-52s %d\n", "failures", len(r.Failures)+r.truncatedFailures)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "    - %s\n", f)
	}
	return b.String()
}

// harness is one run's state.
type harness struct {
	cfg    Config
	ctx    context.Context
	rng    *rand.Rand // instance picks from concurrent goroutines: their order varies
	plan   *rand.Rand // the cycles' plans (phase, victim, delays), drawn in order: the seed replays them
	store  *store
	client *http.Client
	insts  []*instance

	dbProxy *dbProxy // postgres: the instances' way to the server

	mu        sync.Mutex
	tok       string
	report    Report
	approvals atomic.Int64
	onApprove chan struct{}
	onTurnEnd chan struct{}
}

// Run runs cfg and reports what it counted. An error means the harness itself could not
// run (a build, a database, an instance that never started) or stopped early; broken
// promises are in the report ([Report.Failed]). With an error, the report holds the
// cycles that completed before it (Report.Cycles, possibly 0): a caller shows its
// figures only for those, never a report of a run that did not happen.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	h := &harness{cfg: cfg, ctx: ctx, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		plan:   rand.New(rand.NewPCG(cfg.Seed^0x5851f42d4c957f2d, cfg.Seed)),
		client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	h.report = Report{Driver: cfg.Driver, Mode: "kill", Seed: cfg.Seed, Faults: map[string]int{}}
	if cfg.PostgresRestart {
		h.report.Mode = "postgres-restart"
	}
	if cfg.DBOutage {
		h.report.Mode = "db-outage"
	}
	start := time.Now()
	cleanup, err := h.setUp(ctx)
	defer cleanup()
	if err != nil {
		return h.report, err
	}
	for cycle := 1; cycle <= cfg.Cycles && ctx.Err() == nil; cycle++ {
		if err := h.cycle(ctx, cycle); err != nil {
			h.report.Elapsed = time.Since(start)
			return h.report, fmt.Errorf("cycle %d: %w", cycle, err)
		}
		h.report.Cycles = cycle
		if cycle%10 == 0 || cycle == cfg.Cycles {
			h.logf("chaos: %d/%d cycles, %d conversations, %d failures, %d re-executions", cycle, cfg.Cycles, h.report.Conversations, len(h.report.Failures), h.report.ReExecutions)
		}
	}
	h.report.Elapsed = time.Since(start)
	return h.report, ctx.Err()
}

func (c *Config) defaults() error {
	switch c.Driver {
	case "sqlite":
	case "postgres":
		if c.PostgresDSN == "" {
			return errors.New("chaos: the postgres driver needs PostgresDSN")
		}
	default:
		return fmt.Errorf("chaos: driver %q: want sqlite or postgres", c.Driver)
	}
	if c.PostgresRestart && (c.Driver != "postgres" || c.RestartPostgres == nil) {
		return errors.New("chaos: PostgresRestart needs the postgres driver and RestartPostgres")
	}
	if c.Dir == "" {
		return errors.New("chaos: Config.Dir is required")
	}
	if fi, err := os.Stat(c.Dir); err != nil {
		return fmt.Errorf("chaos: Config.Dir: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("chaos: Config.Dir %s is not a directory", c.Dir)
	}
	if c.Cycles <= 0 {
		c.Cycles = 20
	}
	if c.Conversations <= 0 {
		c.Conversations = 6
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = time.Second
		if c.PostgresRestart || c.DBOutage {
			c.LeaseTTL = 10 * time.Second
		}
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return nil
}

func (h *harness) logf(format string, args ...any) { h.cfg.Logf(format, args...) }

// fail records a broken promise (the first 200 in full).
func (h *harness) fail(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.report.Failures) >= 200 {
		h.report.truncatedFailures++
		return
	}
	h.report.Failures = append(h.report.Failures, fmt.Sprintf(format, args...))
}

// note records something worth reading that breaks no promise (the first 50).
func (h *harness) note(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.report.Notes) < 50 {
		h.report.Notes = append(h.report.Notes, fmt.Sprintf(format, args...))
	}
}

// setUp builds the app, opens its database, starts the model and the instances.
func (h *harness) setUp(ctx context.Context) (func(), error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if h.cfg.Bin == "" {
		h.cfg.Bin = filepath.Join(h.cfg.Dir, "conformance")
		build := exec.CommandContext(ctx, "go", "build", "-o", h.cfg.Bin, "./examples/conformance")
		build.Dir = moduleRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return cleanup, fmt.Errorf("chaos: go build ./examples/conformance: %v\n%s", err, out)
		}
	}
	journal := ""
	switch h.cfg.Driver {
	case "sqlite":
		path := filepath.Join(h.cfg.Dir, "chaos.db")
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			_ = os.Remove(f)
		}
		journal = "sqlite:" + path
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
		if err != nil {
			return cleanup, err
		}
		undo = append(undo, func() { _ = db.Close() })
		h.store = &store{db: db}
	case "postgres":
		dsn, drop, err := testenv.NewSchema(ctx, h.cfg.PostgresDSN, "chaos_")
		if err != nil {
			return cleanup, err
		}
		undo = append(undo, drop)
		journal = dsn
		if h.cfg.DBOutage {
			px, pdsn, err := newDBProxy(dsn)
			if err != nil {
				return cleanup, err
			}
			undo = append(undo, px.close)
			h.dbProxy, journal = px, pdsn
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return cleanup, err
		}
		undo = append(undo, func() { _ = db.Close() })
		h.store = &store{db: db, dollar: true}
	}
	model := newModel()
	undo = append(undo, model.Close)
	// The instances reach the model through a proxy that tells the harness when a turn's
	// stream ended, so a kill can land just after a model step was recorded.
	proxy := httptest.NewServer(h.turnWatcher(strings.TrimSuffix(model.URL(), "/v1")))
	undo = append(undo, proxy.Close)
	env := []string{
		"ENGINE_JOURNAL=" + journal,
		"ENGINE_MODEL_BASE_URL=" + proxy.URL + "/v1",
		"ENGINE_MODEL_API_KEY=chaos",
		"ENGINE_LEASE_TTL=" + h.cfg.LeaseTTL.String(),
		"ENGINE_JWT_KEY=chaos-harness-signing-key-0123456789abcdef",
		// The transfer handler lingers after the money moved: a kill then lands between
		// its effect and its recorded result, where only the idempotency key saves it.
		"ENGINE_TRANSFER_DELAY=" + transferDelay.String(),
	}
	names := []string{"a"}
	if h.cfg.Driver == "postgres" {
		names = []string{"a", "b"}
	}
	for _, name := range names {
		in := &instance{name: name, bin: h.cfg.Bin, env: env, logFile: filepath.Join(h.cfg.Dir, "instance-"+name+".log")}
		if err := in.start(); err != nil {
			cleanup()
			return func() {}, err
		}
		h.insts = append(h.insts, in)
		undo = append(undo, func() { in.stop(10 * time.Second) })
	}
	return cleanup, nil
}

// live returns a running instance at random, or nil.
func (h *harness) live() *instance {
	var up []*instance
	for _, in := range h.insts {
		if _, ok := in.base(); ok {
			up = append(up, in)
		}
	}
	if len(up) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return up[h.rng.IntN(len(up))]
}

func (h *harness) token() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tok
}

func (h *harness) approved() {
	h.approvals.Add(1)
	h.mu.Lock()
	ch := h.onApprove
	h.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

// turnWatcher proxies the model at target and signals onTurnEnd when a turn's stream ended.
func (h *harness) turnWatcher(target string) http.Handler {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(w, r)
		h.mu.Lock()
		ch := h.onTurnEnd
		h.mu.Unlock()
		select {
		case ch <- struct{}{}:
		default:
		}
	})
}

// randDur returns a random duration in [lo, hi) of the cycle's plan.
func (h *harness) randDur(lo, hi time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return lo + time.Duration(h.plan.Int64N(int64(hi-lo)))
}

// transferDelay is how long the transfer handler waits after its effect.
const transferDelay = 60 * time.Millisecond

// The points of a cycle at which the fault strikes.
var phases = []string{"before-park", "after-turn", "after-approval", "mid-stream"}

// cycle runs one round of conversations with one fault and checks what it left.
func (h *harness) cycle(ctx context.Context, n int) error {
	if err := h.signIn(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	phase := phases[h.plan.IntN(len(phases))]
	victim := h.insts[h.plan.IntN(len(h.insts))]
	onApprove := make(chan struct{}, 1)
	h.onApprove = onApprove
	onTurnEnd := make(chan struct{}, 1)
	h.onTurnEnd = onTurnEnd
	h.mu.Unlock()

	cctx, cancel := context.WithTimeout(ctx, 90*time.Second+10*h.cfg.LeaseTTL)
	defer cancel()
	convs := make([]*conversation, h.cfg.Conversations)
	var wg sync.WaitGroup
	started := time.Now()
	for i := range convs {
		convs[i] = newConversation(h, n, i)
		wg.Go(func() { convs[i].run(cctx) })
	}
	// Strike at the phase's point, plus a random delay.
	switch phase {
	case "before-park":
		sleep(cctx, h.randDur(0, 300*time.Millisecond))
	case "after-turn":
		// Just after the cycle's first model turn ended: its step is being recorded, and
		// the rows it queued wait for the step's write or the writer's next commit.
		select {
		case <-onTurnEnd:
		case <-cctx.Done():
		}
		sleep(cctx, h.randDur(0, 120*time.Millisecond))
	case "after-approval":
		select {
		case <-onApprove:
		case <-cctx.Done():
		}
		sleep(cctx, h.randDur(0, 120*time.Millisecond))
	case "mid-stream":
		select {
		case <-onApprove:
		case <-cctx.Done():
		}
		sleep(cctx, h.randDur(150*time.Millisecond, 600*time.Millisecond))
	}
	if err := h.strike(cctx, phase, victim); err != nil {
		return err
	}
	wg.Wait()
	h.logf("chaos: cycle %d: %s at %s, %s", n, h.report.Mode, phase, time.Since(started).Round(time.Millisecond))
	return h.check(ctx, n, convs)
}

// strike applies the cycle's fault: kill the victim and start it again, or restart
// Postgres under every instance.
func (h *harness) strike(ctx context.Context, phase string, victim *instance) error {
	h.mu.Lock()
	h.report.Faults[phase]++
	h.mu.Unlock()
	if h.cfg.PostgresRestart {
		return h.cfg.RestartPostgres(ctx)
	}
	if h.cfg.DBOutage {
		return h.outage(ctx)
	}
	victim.kill()
	sleep(ctx, h.randDur(0, 300*time.Millisecond))
	if err := victim.start(); err != nil {
		return err
	}
	return nil
}

// signIn gets alice's access token (tokens last 15 minutes; a cycle signs in again).
func (h *harness) signIn(ctx context.Context) error {
	for range 100 {
		in := h.live()
		if in == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		base, _ := in.base()
		status, body, err := h.postJSON(ctx, base+"/_engine/auth/signInEmail", `{"email":"alice@example.com","password":"correct horse battery staple"}`)
		if err != nil || status != http.StatusOK {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		var env struct {
			Data struct {
				AccessToken string `json:"accessToken"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil || env.Data.AccessToken == "" {
			return fmt.Errorf("chaos: sign-in reply %s", body)
		}
		h.mu.Lock()
		h.tok = env.Data.AccessToken
		h.mu.Unlock()
		return nil
	}
	return errors.New("chaos: could not sign in")
}

// postJSON posts body with the token and returns the status and body.
func (h *harness) postJSON(ctx context.Context, u, body string) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tok := h.token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := h.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(bytes.TrimSpace(b)), err
}

// verify runs the AG-UI verifier over follow-stream files.
func (h *harness) verify(files []string) (string, error) {
	args := append([]string{h.cfg.AGUIVerify, "--no-done"}, files...)
	out, err := exec.Command("node", args...).CombinedOutput()
	return string(out), err
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// Ping reports whether the Postgres server at dsn accepts a connection.
func Ping(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}
