package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
)

// Tick is the input of a scheduled flow: the tick's scheduled time (not when it fired),
// the same on every instance and every execution of the tick's run.
type Tick struct {
	At time.Time `json:"at"`
}

// Missed says what a schedule does with the ticks that fell while no instance ran.
type Missed int

const (
	// SkipMissed runs only the latest missed tick, once, then goes on with the schedule.
	// It suits work that looks at the present (a cleanup, a report of current state).
	SkipMissed Missed = iota
	// RunMissed runs every missed tick, oldest first, each with its own scheduled time,
	// up to [MaxCatchUp] of them (the latest ones). It suits work that must account for
	// every period (billing, per-interval aggregates).
	RunMissed
)

// MaxCatchUp bounds the ticks [RunMissed] runs after an outage.
const MaxCatchUp = 1000

// Schedule says when a scheduled flow runs: a fixed interval or a cron expression in a
// time zone, and what to do with missed ticks (default [SkipMissed]).
type Schedule struct {
	every  time.Duration
	cron   cron.Schedule
	spec   string
	missed Missed
}

// Every is a schedule of ticks every d, aligned to multiples of d since the Unix epoch,
// so every instance computes the same ticks.
func Every(d time.Duration) (Schedule, error) {
	if d <= 0 {
		return Schedule{}, fmt.Errorf("durable: Every: the interval must be positive, got %s", d)
	}
	return Schedule{every: d, spec: "@every " + d.String()}, nil
}

// Cron is a schedule of the standard five-field cron expression spec (minute, hour, day
// of month, month, day of week; or a descriptor such as @daily) in time zone loc (nil:
// UTC), parsed by github.com/robfig/cron/v3.
func Cron(spec string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	p := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	s, err := p.Parse(spec)
	if err != nil {
		return Schedule{}, fmt.Errorf("durable: Cron %q: %w", spec, err)
	}
	switch c := s.(type) {
	case *cron.SpecSchedule:
		c.Location = loc
	case cron.ConstantDelaySchedule:
		return Schedule{}, fmt.Errorf("durable: Cron %q: use Every for a fixed interval", spec)
	}
	return Schedule{cron: s, spec: spec + " " + loc.String()}, nil
}

// WithMissed returns the schedule with policy m for missed ticks.
func (s Schedule) WithMissed(m Missed) Schedule { s.missed = m; return s }

// String describes the schedule, as the descriptor shows it.
func (s Schedule) String() string { return s.spec }

// NextTick returns the first tick of s strictly after t.
func NextTick(s Schedule, t time.Time) time.Time { return s.next(t) }

var unixEpoch = time.Unix(0, 0).UTC()

// next returns the first tick strictly after t.
func (s Schedule) next(t time.Time) time.Time {
	if s.every > 0 {
		since := t.Sub(unixEpoch)
		n := since / s.every
		if since < 0 && since%s.every != 0 {
			n-- // floor, before the epoch
		}
		return unixEpoch.Add((n + 1) * s.every)
	}
	return s.cron.Next(t)
}

// Clock binds h to flow f and runs it on schedule s: each tick once across every
// instance sharing the journal, as a durable run keyed by (flow, scheduled time), so a
// crash mid-tick resumes it (recorded steps replay) and no instance starts it twice.
// The flow must be durable ([engine.Durable]); the app needs [With]. The flow is bound
// [engine.ServerOnly]: it has no route (clients get NotFound), the descriptor lists it
// under "server" with its schedule in tags.schedule, and in-process calls other than its
// ticks are Forbidden {gate: "clock"}. A tick runs with no principal and the tick's
// scheduled time as input.
// Ticks start with [engine.App.Start] and stop with [engine.App.Close].
func Clock[Out any](f *engine.Flow[Tick, Out], s Schedule, h func(fx *engine.Fx, in Tick) (Out, error), opts ...engine.BindOption) engine.Option {
	if f == nil || (s.every <= 0 && s.cron == nil) {
		return engine.InvalidOption(errors.New("durable: Clock: a flow and a schedule from Every or Cron are needed"))
	}
	c := &clock{flow: f.ID(), sched: s}
	refuse := func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			return nil, engine.Forbidden("clock", "flow "+f.ID()+" runs on its schedule only")
		}
	}
	return engine.Options(
		engine.Bind(f, h, append(opts, engine.ServerOnly(), engine.Use(refuse), engine.Tag("schedule", s.String()))...),
		engine.Validate(func(app *engine.App) error {
			if !f.Def().Durable() {
				return fmt.Errorf("durable: Clock: flow %s must be durable (engine.Durable())", f.ID())
			}
			set, ok := clocksKey.App(app)
			if !ok || JournalOf(app) == nil {
				return fmt.Errorf("durable: Clock: flow %s needs durable.With", f.ID())
			}
			set.add(c)
			return nil
		}),
	)
}

// clockSet is the schedules of an app, started after its journal and stopped before.
type clockSet struct {
	mu     sync.Mutex
	clocks []*clock
}

var clocksKey = engine.NewKey[*clockSet]("durable clocks")

func (s *clockSet) add(c *clock) {
	s.mu.Lock()
	s.clocks = append(s.clocks, c)
	s.mu.Unlock()
}

func (s *clockSet) start(app *engine.App, r *runner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clocks {
		c.start(app, r)
	}
}

// stop stops every schedule and waits for their running ticks, until ctx ends: then the
// ticks' contexts are cancelled (their runs are left to resume elsewhere) and stop
// returns ctx's error once they have returned.
func (s *clockSet) stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for _, c := range s.clocks {
		if cerr := c.stop(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// clock runs one schedule on this instance.
type clock struct {
	flow  string
	sched Schedule

	app        *engine.App
	j          *journal.Journal
	r          *runner
	cancel     context.CancelFunc // stops the schedule
	cancelRuns context.CancelFunc // cancels the running ticks, when Close cannot wait for them
	wg         sync.WaitGroup
}

// tickNamespace makes tick run ids: a name-based UUID of (flow, scheduled time), so every
// instance derives the same id and the journal's insert lets one of them begin the run.
var tickNamespace = uuid.MustParse("6f1d9a52-5c1e-4d7e-9f0b-3a8c2e6b7d41")

// TickRunID is the id of the durable run of flow's tick scheduled at at.
func TickRunID(flow string, at time.Time) string {
	return uuid.NewSHA1(tickNamespace, []byte(flow+"@"+at.UTC().Format(time.RFC3339Nano))).String()
}

// lastSignal names the signal that holds the latest tick begun, per flow: after an
// outage the first instance back finds the ticks it missed from it.
const lastSignal = "engine.clock.last"

func (c *clock) start(app *engine.App, r *runner) {
	c.app, c.j, c.r = app, JournalOf(app), r
	runs, cancelRuns := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(runs)
	c.cancel, c.cancelRuns = cancel, cancelRuns
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.loop(ctx, runs)
	}()
}

func (c *clock) stop(ctx context.Context) error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	defer c.cancelRuns()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		c.cancelRuns()
		<-done
		return ctx.Err()
	}
}

// loop fires the ticks: first the ones missed while no instance ran, by the schedule's
// policy, then each tick at its time. A timer that fires late (a busy process) fires
// every tick it passed, late: the policy is about outages, not about a slow timer.
// Ticks run on runs, which outlives ctx (the schedule's) until Close gives up waiting.
func (c *clock) loop(ctx, runs context.Context) {
	last := c.lastTick(ctx)
	policy := c.sched.missed
	for ctx.Err() == nil {
		now := c.j.Now()
		if last.IsZero() {
			last = now // first start: nothing was missed
		}
		due := c.due(last, now, policy)
		policy = RunMissed
		for _, t := range due {
			c.fire(ctx, runs, t)
			last = t
		}
		next := c.sched.next(last)
		timer := time.NewTimer(next.Sub(c.j.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// due lists the ticks after last up to now that the policy runs.
func (c *clock) due(last, now time.Time, policy Missed) []time.Time {
	var all []time.Time
	for t := c.sched.next(last); !t.After(now); t = c.sched.next(t) {
		all = append(all, t)
		if len(all) > MaxCatchUp {
			all = all[1:]
		}
	}
	if policy == SkipMissed && len(all) > 1 {
		all = all[len(all)-1:]
	}
	return all
}

// lastTick reads the latest tick begun by any instance; zero when none or unreadable.
func (c *clock) lastTick(ctx context.Context) time.Time {
	v, err := c.j.Signal(ctx, lastSignal, c.flow)
	if err != nil {
		return time.Time{}
	}
	var t time.Time
	_ = json.Unmarshal(v.Value, &t)
	return t
}

// fire begins the tick's run unless another instance did, records it as the latest tick
// begun, and runs it on runs.
func (c *clock) fire(ctx, runs context.Context, at time.Time) {
	logger := c.app.Logger()
	input, _ := json.Marshal(Tick{At: at})
	run, err := c.j.Begin(ctx, journal.NewRun{ID: TickRunID(c.flow, at), Flow: c.flow, Input: input})
	if errors.Is(err, journal.ErrConflict) {
		return // another instance has the tick; a crash mid-tick is the recovery loop's
	}
	if err != nil {
		logger.ErrorContext(ctx, "durable: beginning a tick", "flow", c.flow, "at", at, "err", err)
		return
	}
	if raw, err := json.Marshal(at); err == nil {
		_, _ = c.j.SetSignal(ctx, lastSignal, c.flow, raw, false)
	}
	fx, in, ok := c.r.prepare(runs, run, input)
	if !ok {
		return
	}
	// The tick runs beside the schedule, so a long tick does not delay the next one;
	// Close waits for it.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		rctx := runs
		defer func() {
			if v := recover(); v != nil {
				logger.ErrorContext(rctx, "durable: panic in a tick", "flow", c.flow, "at", at, "panic", fmt.Sprint(v))
				_ = run.Fail(rctx, "panic")
			}
		}()
		_, _ = c.r.handlers[c.flow](fx, in)
	}()
}
