package capacity

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Side is one endpoint of an interleaved ramp: the server, how to read it, and what to
// call after each of its levels (nil for nothing).
type Side struct {
	Endpoint Endpoint
	Probe    Probe
	Progress func(Level)
}

// RunInterleaved ramps several endpoints together, for comparing them on a machine whose
// speed drifts: every level is held on each endpoint in turn, from no conversations up
// (the previous endpoint's conversations ended first, so only one is loaded at a time),
// and the order rotates from level to level. Each endpoint's ramp is judged as
// [RunRamp] judges one (a level that fails on delay alone gets a second window; the
// knee is the largest level that held; an endpoint is held at a level above one it
// failed without a second window), but the levels are shared: they grow while any
// endpoint still holds, by the smaller step as soon as one of those nears the
// threshold, and then bisect each endpoint's bracket, holding every endpoint at each
// midpoint so that every figure has its peers from the same minutes. The budget is
// opts.Budget per endpoint. An endpoint that fails the first level gets no knee: start
// below where the slowest one holds.
//
// Starting every level from none costs each level a burst of new conversations, which
// the warmup absorbs; a ramp that grows in place ([RunRamp]) does not pay it, so knees
// from the two are not to be mixed.
func RunInterleaved(ctx context.Context, sides []Side, opts RampOptions) ([]Ramp, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if len(sides) < 2 {
		return nil, fmt.Errorf("capacity: interleaving needs two endpoints or more, not %d", len(sides))
	}
	type arm struct {
		ld               *loader
		probe            Probe
		progress         func(Level)
		base             Snapshot
		good, bad, tries int
	}
	arms := make([]*arm, len(sides))
	ramps := make([]Ramp, len(sides))
	defer func() {
		for _, a := range arms {
			if a != nil {
				a.ld.stop()
				a.ld.c.close()
			}
		}
	}()
	for i, sd := range sides {
		c, err := newClient(sd.Endpoint)
		if err != nil {
			return nil, err
		}
		a := &arm{ld: &loader{c: c, opts: opts}, probe: sd.Probe, progress: sd.Progress}
		arms[i] = a
		if err := warm(ctx, c, opts); err != nil {
			return nil, fmt.Errorf("capacity: the first conversations of %s failed, so it cannot be measured: %w", sd.Endpoint.URL, err)
		}
		if a.base, err = a.probe.Read(ctx, true); err != nil {
			return nil, err
		}
		ramps[i].BaseRSS, ramps[i].BaseHeap = nan(a.base.HasCPU, float64(a.base.RSS)), nan(a.base.HasHeap, float64(a.base.Heap))
	}
	deadline := time.Now().Add(opts.Budget * time.Duration(len(sides)))
	round := 0
	// hold measures level n on every endpoint, the order rotated by round, and records
	// each result in its ramp and bracket. It returns the largest delay p99 of the
	// endpoints that have not failed a level.
	hold := func(n int) (float64, error) {
		worst := 0.0
		for k := range arms {
			i := (k + round) % len(arms)
			a := arms[i]
			// An endpoint that failed a smaller level is held at this one too, so that
			// every level has its peers, but without a second window: it cannot hold.
			lv, err := a.ld.level(ctx, n, a.probe, a.base, a.bad == 0 || n < a.bad)
			a.ld.stop() // the next endpoint's level starts on an idle machine
			if err == nil {
				err = quiesce(ctx, a.probe, a.base)
			}
			if err != nil {
				return 0, err
			}
			ramps[i].Levels = append(ramps[i].Levels, lv)
			if a.progress != nil {
				a.progress(lv)
			}
			switch {
			case lv.OK && (a.bad == 0 || n < a.bad):
				a.good = max(a.good, n)
			case !lv.OK && n > a.good:
				if a.bad == 0 || n < a.bad {
					a.bad = n
				}
			}
			if a.bad == 0 { // the growth follows the endpoints that still hold
				worst = math.Max(worst, float64(lv.DelayP99))
				if math.IsNaN(float64(lv.DelayP99)) {
					worst = math.Inf(1)
				}
			}
		}
		round++
		return worst, nil
	}
	over := func() bool { return time.Now().After(deadline) || ctx.Err() != nil }
	// Grow while an endpoint has not failed yet.
	n, top := opts.Start, 0
	for !over() {
		worst, err := hold(n)
		if err != nil {
			return ramps, err
		}
		top = n
		growing := false
		for _, a := range arms {
			growing = growing || a.bad == 0
		}
		if !growing || n >= opts.Max {
			break
		}
		g := opts.Growth
		if !(worst <= ms(opts.Threshold)/2) {
			g = min(g, 1.2)
		}
		n = min(opts.Max, max(n+1, int(math.Ceil(float64(n)*g))))
	}
	// Bisect each endpoint's bracket in turn, every endpoint held at each midpoint.
	for !over() {
		next := -1
		for _, a := range arms {
			if a.good > 0 && a.bad > 0 && a.tries < opts.Refine && a.bad-a.good > max(1, a.good/20) {
				next = (a.good + a.bad) / 2
				a.tries++
				break
			}
		}
		if next < 0 {
			break
		}
		if _, err := hold(next); err != nil {
			return ramps, err
		}
	}
	if err := ctx.Err(); err != nil {
		return ramps, err
	}
	for i, a := range arms {
		r := &ramps[i]
		r.Knee, r.Bounded = a.good, a.bad == 0
		switch {
		case a.bad == 0 && top >= opts.Max:
			r.Stop = fmt.Sprintf("reached the largest level, %d", opts.Max)
		case a.bad == 0:
			r.Stop = fmt.Sprintf("budget of %s per endpoint spent at %d", opts.Budget, top)
		case a.good == 0:
			r.Stop = fmt.Sprintf("the first level, %d, did not hold", opts.Start)
		default:
			r.Stop = fmt.Sprintf("the knee lies between %d and %d", a.good, a.bad)
		}
		r.Stop += " (interleaved)"
	}
	return ramps, nil
}

// quiesce waits, at most ten seconds, until the server of probe has ended the
// conversations its client abandoned: until it runs no more goroutines than when it was
// idle (base) plus a few, or, for a server whose goroutines cannot be read, a second.
func quiesce(ctx context.Context, probe Probe, base Snapshot) error {
	if !base.HasHeap {
		return sleepUntil(ctx, time.Now().Add(time.Second))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := probe.Read(ctx, false)
		if err != nil {
			return err
		}
		if s.Goroutines <= base.Goroutines+8 || time.Now().After(deadline) {
			return nil
		}
		if err := sleepUntil(ctx, time.Now().Add(50*time.Millisecond)); err != nil {
			return err
		}
	}
}
