package durable_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

var (
	jobs     = engine.NewUnit("jobs")
	tickFlow = engine.Define[durable.Tick, struct{}](jobs, "tick", engine.Durable(), engine.Public())
)

// tickLog counts the runs of each tick, and who ran it.
type tickLog struct {
	mu   sync.Mutex
	runs map[time.Time]int
	by   map[time.Time]string
}

func (l *tickLog) add(at time.Time, instance string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs, l.by = map[time.Time]int{}, map[time.Time]string{}
	}
	l.runs[at.UTC()]++
	l.by[at.UTC()] = instance
}

func (l *tickLog) snapshot() map[time.Time]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[time.Time]int{}
	for k, v := range l.runs {
		out[k] = v
	}
	return out
}

// clockApp starts an instance named instance on d with flow jobs.tick on s.
func clockApp(t *testing.T, d journal.Driver, instance string, s durable.Schedule, log *tickLog) (*engine.App, *journal.Journal) {
	t.Helper()
	j, err := journal.New(d, journal.Options{Owner: instance})
	if err != nil {
		t.Fatal(err)
	}
	app, err := engine.New(durable.With(j), durable.Clock(tickFlow, s, func(fx *engine.Fx, in durable.Tick) (struct{}, error) {
		log.add(in.At, instance)
		return struct{}{}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app, j
}

// Two instances on one journal: every tick runs exactly once, none is skipped.
func TestClockRunsEachTickOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	const every = 20 * time.Millisecond
	s, err := durable.Every(every)
	if err != nil {
		t.Fatal(err)
	}
	s = s.WithMissed(durable.RunMissed)
	d, log := memory.New(), &tickLog{}
	a, _ := clockApp(t, d, "a", s, log)
	b, _ := clockApp(t, d, "b", s, log)
	deadline := time.Now().Add(20 * time.Second)
	for len(log.snapshot()) < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d ticks ran", len(log.snapshot()))
		}
		time.Sleep(every)
	}
	_ = a.Close(context.Background())
	_ = b.Close(context.Background())
	runs := log.snapshot()
	var first, last time.Time
	for at, n := range runs {
		if n != 1 {
			t.Errorf("tick %s ran %d times", at, n)
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	for at := first; !at.After(last); at = at.Add(every) {
		if runs[at] != 1 {
			t.Errorf("tick %s between the first and the last ran %d times", at, runs[at])
		}
	}
}

// After an outage, SkipMissed runs the latest missed tick and RunMissed every one; each
// is a durable run under its (flow, scheduled time) id.
func TestClockMissedTicksFollowThePolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		policy durable.Missed
		want   int
	}{{"skip", durable.SkipMissed, 1}, {"run each", durable.RunMissed, 3}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, _ := durable.Every(time.Hour)
			s = s.WithMissed(c.policy)
			d := memory.New()
			seed, err := journal.New(d, journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The last tick any instance began was three hours ago.
			lastTick := time.Now().Truncate(time.Hour).Add(-3 * time.Hour)
			raw, _ := json.Marshal(lastTick)
			if _, err := seed.SetSignal(t.Context(), "engine.clock.last", tickFlow.ID(), raw, false); err != nil {
				t.Fatal(err)
			}
			log := &tickLog{}
			_, j := clockApp(t, d, "a", s, log)
			deadline := time.Now().Add(10 * time.Second)
			for len(log.snapshot()) < c.want && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			runs := log.snapshot()
			if len(runs) != c.want {
				t.Fatalf("%d missed ticks ran, want %d: %v", len(runs), c.want, runs)
			}
			for i := 1; i <= 3; i++ {
				at := lastTick.Add(time.Duration(i) * time.Hour).UTC()
				_, ran := runs[at]
				if want := c.policy == durable.RunMissed || i == 3; ran != want {
					t.Errorf("tick %s ran %v, want %v", at, ran, want)
				}
				if ran {
					rec, err := j.GetRun(t.Context(), durable.TickRunID(tickFlow.ID(), at))
					if err != nil || rec.Flow != tickFlow.ID() {
						t.Errorf("the run of tick %s: %+v, %v", at, rec, err)
					}
				}
			}
		})
	}
}

// A client cannot reach a scheduled flow (it has no route), in-process calls are refused,
// and the descriptor lists it as server-only information with its schedule.
func TestClockFlowIsServerOnly(t *testing.T) {
	t.Parallel()
	s, _ := durable.Cron("0 9 * * 1-5", time.UTC)
	app, _ := clockApp(t, memory.New(), "a", s, &tickLog{})
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	c, err := clientx.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res := clientx.Call(t.Context(), c, tickFlow, durable.Tick{At: time.Now()})
	if res.Error == nil || res.Error.Code != engine.CodeNotFound {
		t.Fatalf("a client call of a scheduled flow: %v, want NotFound", res.Error)
	}
	if _, err := app.Invoke(t.Context(), tickFlow.ID(), nil, json.RawMessage(`{"at":"2026-01-01T00:00:00Z"}`)); !engine.IsCode(err, engine.CodeForbidden) {
		t.Fatalf("an in-process call of a scheduled flow: %v, want Forbidden", err)
	}
	if _, ok := app.Routes()["jobs"]; ok {
		t.Fatalf("routes name the scheduled flow: %v", app.Routes())
	}
	d := app.Descriptor()
	for _, u := range d.Units {
		for _, f := range u.Flows {
			if f.ID == tickFlow.ID() {
				t.Fatalf("the descriptor lists %s among the callable flows", f.ID)
			}
		}
	}
	if len(d.Server) != 1 || d.Server[0].ID != tickFlow.ID() || d.Server[0].Tags["schedule"] != "0 9 * * 1-5 UTC" {
		t.Fatalf("descriptor server part: %+v", d.Server)
	}
}

func TestSchedulesComputeTheirTicks(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("skipped: no time zone database to load Europe/Paris from (%v)", err)
	}
	if _, err := durable.Cron("not cron", nil); err == nil {
		t.Error("a bad cron expression was accepted")
	}
	if _, err := durable.Every(0); err == nil {
		t.Error("a zero interval was accepted")
	}
	if _, err := durable.Cron("@every 1m", nil); err == nil {
		t.Error("@every was accepted as cron; it is Every's")
	}
	s, err := durable.Cron("0 9 * * *", paris)
	if err != nil {
		t.Fatal(err)
	}
	// 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer.
	for _, c := range []struct{ after, want time.Time }{
		{time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC), time.Date(2026, 1, 11, 8, 0, 0, 0, time.UTC)},
		{time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC), time.Date(2026, 7, 11, 7, 0, 0, 0, time.UTC)},
	} {
		if got := durable.NextTick(s, c.after); !got.Equal(c.want) {
			t.Errorf("next tick after %s: %s, want %s", c.after, got.UTC(), c.want)
		}
	}
	e, _ := durable.Every(15 * time.Minute)
	if got := durable.NextTick(e, time.Date(2026, 1, 1, 10, 7, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC)) {
		t.Errorf("every 15m after 10:07: %s", got)
	}
	// Aligned to the Unix epoch, a Thursday at 00:00 UTC: weekly ticks fall on Thursdays.
	w, _ := durable.Every(7 * 24 * time.Hour)
	if got := durable.NextTick(w, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("weekly after Wednesday 2026-11-25 12:00: %s (%s), want Thursday 2026-11-26 00:00", got.UTC(), got.UTC().Weekday())
	}
	if got := durable.NextTick(w, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("weekly after a tick: %s, want the one a week on (strictly after)", got.UTC())
	}
}
