package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RampOptions configure a ramp. The zero value gives the defaults.
type RampOptions struct {
	// Pace is every conversation's pace (its Seed and Tool are drawn per conversation). A
	// zero Tokens or Rate means 300 tokens at 50 tokens/s; Jitter and FirstToken are
	// taken as given (the command's defaults are 0.5 and 500 ms).
	Pace Pace
	// ToolShare is the share of conversations whose model first calls a tool (which on a
	// durable flow needs an approval the client gives, then follows the resumed run).
	// Default 0.2; negative means none.
	ToolShare float64
	// Threshold is the token delay the p99 must stay within. Default 50ms.
	Threshold time.Duration
	// StartThreshold is the p99 from a conversation's request to its first frame that a
	// level must stay within: a server that takes in conversations late is not holding
	// them, however well it streams the ones it took. Default 1s.
	StartThreshold time.Duration
	// Start is the first level's number of concurrent conversations. Default 50.
	Start int
	// Max is the largest level tried. Default 4000.
	Max int
	// Growth multiplies a level while its p99 is under half the threshold; nearer the
	// threshold levels grow by a fifth. Default 1.5.
	Growth float64
	// Refine is the number of bisections between the last level that held and the first
	// that did not. Default 2.
	Refine int
	// Warmup is how long a level runs before its window: new conversations start, the
	// server settles. Default 3s.
	Warmup time.Duration
	// Window is how long a level is measured. Default 6s.
	Window time.Duration
	// Budget bounds the ramp: no level starts after it. Default 2m.
	Budget time.Duration
	// Progress, when set, is called after every level.
	Progress func(Level)
}

func (o *RampOptions) defaults() error {
	if o.Pace.Tokens == 0 {
		o.Pace.Tokens = 300
	}
	if o.Pace.Rate == 0 {
		o.Pace.Rate = 50
	}
	if err := o.Pace.validate(); err != nil {
		return err
	}
	if o.ToolShare == 0 {
		o.ToolShare = 0.2
	}
	o.ToolShare = min(o.ToolShare, 1) // negative stays negative: none, and defaults can run again
	if o.Threshold == 0 {
		o.Threshold = 50 * time.Millisecond
	}
	if o.StartThreshold == 0 {
		o.StartThreshold = time.Second
	}
	if o.Start == 0 {
		o.Start = 50
	}
	if o.Max == 0 {
		o.Max = 4000
	}
	if o.Growth == 0 {
		o.Growth = 1.5
	}
	if o.Refine == 0 {
		o.Refine = 2
	}
	if o.Warmup == 0 {
		o.Warmup = 3 * time.Second
	}
	if o.Window == 0 {
		o.Window = 6 * time.Second
	}
	if o.Budget == 0 {
		o.Budget = 2 * time.Minute
	}
	if o.Threshold < 0 || o.StartThreshold < 0 || o.Start < 1 || o.Max < o.Start || o.Growth <= 1 || o.Refine < 0 || o.Warmup < 0 || o.Window <= 0 || o.Budget < 0 {
		return fmt.Errorf("capacity: bad ramp options (threshold %s, start %d, max %d, growth %g, refine %d, warmup %s, window %s, budget %s)",
			o.Threshold, o.Start, o.Max, o.Growth, o.Refine, o.Warmup, o.Window, o.Budget)
	}
	return nil
}

// Level is one step of a ramp: a number of concurrent conversations held for a window.
// A figure that could not be read is NaN (in JSON, null), never 0.
type Level struct {
	Conversations int      `json:"conversations"`
	Tokens        int64    `json:"tokens"` // tokens that arrived in the window
	TokensPerSec  Figure   `json:"tokensPerSec"`
	DelayP50      Figure   `json:"delayP50Ms"` // token delay on the live streams, ms
	DelayP99      Figure   `json:"delayP99Ms"`
	DelayMax      Figure   `json:"delayMaxMs"`
	FollowTokens  int      `json:"followTokens"` // tokens read by followers after an approval
	FollowP99     Figure   `json:"followP99Ms"`  // their delay (they arrive in stored rows, coalesced)
	StartP99      Figure   `json:"startP99Ms"`   // request sent → first frame
	Completed     int64    `json:"completed"`    // conversations that ended in the window
	Approvals     int64    `json:"approvals"`    // approvals given in the window
	Errors        int64    `json:"errors"`       // failed conversations over the whole level
	ErrorText     []string `json:"errorText,omitempty"`
	ServerCores   Figure   `json:"serverCores"`   // server CPU seconds per second
	CPUPerToken   Figure   `json:"cpuPerTokenUs"` // server CPU µs per token
	ClientCores   Figure   `json:"clientCores"`   // the load client's CPU seconds per second
	// OtherCores is the machine's busy CPU seconds per second less the server's and the
	// client's: what everything else took (neighbours on a shared machine, and a
	// database server's own processes).
	OtherCores    Figure `json:"otherCores"`
	RSS           Figure `json:"rssBytes"`         // server resident memory at the window's end
	Heap          Figure `json:"heapBytes"`        // server HeapInuse+StackInuse at the window's end
	RSSPerConv    Figure `json:"rssPerConvBytes"`  // (RSS − the idle server's) ÷ conversations
	HeapPerConv   Figure `json:"heapPerConvBytes"` // the same for heap+stack
	CommitsPerSec Figure `json:"commitsPerSec"`
	DBConnections Figure `json:"dbConnections"` // the server's connections to its Postgres database at the window's end
	Load          Figure `json:"load"`          // 1-minute load average at the window's end
	OK            bool   `json:"ok"`            // p99 within the threshold and no error
	// Windows is 2 when the level failed on delay alone in its first window and was
	// measured once more; its figures are then the better window's.
	Windows int `json:"windows"`
}

// Ramp is a ramp's outcome.
type Ramp struct {
	Levels []Level `json:"levels"`
	// Knee is the most concurrent conversations a level held (p99 within the threshold,
	// no error); 0 when none did.
	Knee int `json:"knee"`
	// Bounded says the knee is a lower bound: the ramp reached Max or its budget before
	// any level failed.
	Bounded bool `json:"bounded"`
	// Stop says why the ramp ended.
	Stop string `json:"stop"`
	// BaseRSS and BaseHeap are the server's figures before the first level.
	BaseRSS  Figure `json:"baseRssBytes"`
	BaseHeap Figure `json:"baseHeapBytes"`
}

// KneeLevel returns the level the knee was measured at.
func (r Ramp) KneeLevel() (Level, bool) {
	for _, l := range r.Levels {
		if l.OK && l.Conversations == r.Knee {
			return l, true
		}
	}
	return Level{}, false
}

// RunRamp raises the number of concurrent conversations against ep until the token
// delay p99 passes the threshold or conversations fail, then bisects between the last
// level that held and the first that did not. Each level keeps its conversations going
// back to back (a closed loop: a conversation that ends is followed by a new one), runs
// Warmup, then measures Window. An error means the ramp could not run; a level whose
// conversations failed is a result (Level.Errors), not an error.
func RunRamp(ctx context.Context, ep Endpoint, probe Probe, opts RampOptions) (Ramp, error) {
	if err := opts.defaults(); err != nil {
		return Ramp{}, err
	}
	c, err := newClient(ep)
	if err != nil {
		return Ramp{}, err
	}
	defer c.close()
	if err := warm(ctx, c, opts); err != nil {
		return Ramp{}, fmt.Errorf("capacity: the first conversations failed, so the target cannot be measured: %w", err)
	}
	base, err := probe.Read(ctx, true)
	if err != nil {
		return Ramp{}, err
	}
	r := Ramp{BaseRSS: nan(base.HasCPU, float64(base.RSS)), BaseHeap: nan(base.HasHeap, float64(base.Heap))}
	ld := &loader{c: c, opts: opts}
	defer ld.stop()
	deadline := time.Now().Add(opts.Budget)
	n, good, bad, refined := opts.Start, 0, 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			r.Stop = fmt.Sprintf("budget of %s spent", opts.Budget)
			if bad > 0 {
				r.Stop += fmt.Sprintf("; the knee lies between %d and %d", good, bad)
			}
			break
		}
		lv, err := ld.level(ctx, n, probe, base, true)
		if err != nil {
			return r, err
		}
		r.Levels = append(r.Levels, lv)
		if opts.Progress != nil {
			opts.Progress(lv)
		}
		if lv.OK {
			good = max(good, n)
		} else if bad == 0 || n < bad {
			bad = n
		}
		switch {
		case bad == 0 && n >= opts.Max:
			r.Stop = fmt.Sprintf("reached the largest level, %d", opts.Max)
		case bad == 0:
			g := opts.Growth
			if !(float64(lv.DelayP99) <= ms(opts.Threshold)/2) {
				g = min(g, 1.2)
			}
			n = min(opts.Max, max(n+1, int(math.Ceil(float64(n)*g))))
			continue
		case good == 0 && n == 1:
			r.Stop = "even one conversation passed the threshold or failed"
		case good == 0:
			n = max(1, n/2)
			continue
		case refined < opts.Refine && bad-good > max(1, good/20):
			n = (good + bad) / 2
			refined++
			continue
		default:
			r.Stop = fmt.Sprintf("the knee lies between %d and %d", good, bad)
		}
		break
	}
	r.Knee, r.Bounded = good, bad == 0
	return r, nil
}

// warm runs a few short conversations, each kind once at least, so the first level does
// not pay for the server's first allocations and a target that cannot serve a
// conversation at all is an error rather than a ramp of failed levels.
func warm(ctx context.Context, c *client, opts RampOptions) error {
	rec := &recorder{}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			p := Pace{Tokens: 20, Rate: 400, Seed: uint64(i), Tool: i%2 == 1 && opts.ToolShare > 0}
			errs[i] = c.converse(ctx, p, int64(-1-i), rec)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loader holds the conversation loops of a ramp.
type loader struct {
	c     *client
	opts  RampOptions
	loops []*loop
	conv  atomic.Int64
	wg    sync.WaitGroup
}

type loop struct {
	cancel context.CancelFunc
	rec    recorder
}

// resize starts or ends conversation loops until n run. New loops start spread over a
// second, and each one's first conversation has a random length, so conversations that
// started together do not stay in step. Ended loops abandon their conversation.
func (ld *loader) resize(ctx context.Context, n int) {
	for len(ld.loops) > n {
		last := ld.loops[len(ld.loops)-1]
		last.cancel()
		ld.loops = ld.loops[:len(ld.loops)-1]
	}
	spread := min(time.Second, ld.opts.Warmup/2)
	for len(ld.loops) < n {
		lctx, cancel := context.WithCancel(ctx)
		l := &loop{cancel: cancel}
		ld.loops = append(ld.loops, l)
		seed := uint64(len(ld.loops))<<32 ^ uint64(time.Now().UnixNano())
		ld.wg.Go(func() { ld.run(lctx, l, seed, spread) })
	}
}

func (ld *loader) run(ctx context.Context, l *loop, seed uint64, spread time.Duration) {
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	if spread > 0 && sleepUntil(ctx, time.Now().Add(time.Duration(rng.Int64N(int64(spread))))) != nil {
		return
	}
	first := true
	for ctx.Err() == nil {
		p := ld.opts.Pace
		p.Seed = rng.Uint64()
		p.Tool = rng.Float64() < ld.opts.ToolShare
		if first {
			p.Tokens = 1 + rng.IntN(p.Tokens)
			first = false
		}
		err := ld.c.converse(ctx, p, ld.conv.Add(1), &l.rec)
		if err != nil && ctx.Err() == nil {
			l.rec.fail(err)
			_ = sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) // no hot loop against a failing server
		}
	}
}

func (ld *loader) stop() {
	ld.resize(context.Background(), 0)
	ld.wg.Wait()
}

// take merges and clears every loop's sample.
func (ld *loader) take() sample {
	var s sample
	for _, l := range ld.loops {
		t := l.rec.take()
		s.merge(&t)
	}
	return s
}

// level holds n conversations for Warmup and measures them for Window. With retry, a
// level that fails on delay alone is measured for another window at once and judged by
// the better one, so a neighbour's burst on a shared machine does not set the knee; a
// real overload fails both.
func (ld *loader) level(ctx context.Context, n int, probe Probe, base Snapshot, retry bool) (Level, error) {
	ld.resize(ctx, n)
	ld.take() // what the loops saw before this level is the last level's
	if sleepUntil(ctx, time.Now().Add(ld.opts.Warmup)) != nil {
		return Level{}, ctx.Err()
	}
	lv, err := ld.window(ctx, n, probe, base, ld.take())
	if err != nil || lv.OK || lv.Errors > 0 || !retry {
		return lv, err
	}
	again, err := ld.window(ctx, n, probe, base, sample{})
	if err != nil {
		return Level{}, err
	}
	if again.OK || float64(again.DelayP99) < float64(lv.DelayP99) {
		lv = again
	}
	lv.Windows = 2
	return lv, nil
}

// window measures the running conversations for Window; warm is what they saw before
// it, whose errors count against the level too.
func (ld *loader) window(ctx context.Context, n int, probe Probe, base Snapshot, warm sample) (Level, error) {
	ld.take()
	s0, err := probe.Read(ctx, false)
	if err != nil {
		return Level{}, err
	}
	c0, m0 := selfCPU(), machineBusy()
	if sleepUntil(ctx, time.Now().Add(ld.opts.Window)) != nil {
		return Level{}, ctx.Err()
	}
	s := ld.take()
	c1, m1 := selfCPU(), machineBusy()
	s1, err := probe.Read(ctx, false)
	if err != nil {
		return Level{}, err
	}
	secs := s1.At.Sub(s0.At).Seconds()
	lv := Level{
		Conversations: n,
		Windows:       1,
		Tokens:        s.tokens,
		TokensPerSec:  Figure(float64(s.tokens) / secs),
		FollowTokens:  len(s.follow),
		Completed:     s.conversations,
		Approvals:     s.approvals,
		Errors:        warm.errors + s.errors,
		ErrorText:     append(warm.errorText, s.errorText...),
		ClientCores:   Figure((c1 - c0).Seconds() / secs),
		Load:          Figure(LoadAverage()),
	}
	lv.DelayP50, lv.DelayP99, lv.DelayMax = quantile(s.live, 0.5), quantile(s.live, 0.99), quantile(s.live, 1)
	lv.FollowP99, lv.StartP99 = quantile(s.follow, 0.99), quantile(s.starts, 0.99)
	cpu := (s1.CPU - s0.CPU).Seconds()
	lv.ServerCores = nan(s1.HasCPU, cpu/secs)
	lv.OtherCores = nan(s1.HasCPU && m0 >= 0 && m1 >= 0, ((m1-m0).Seconds()-cpu-(c1-c0).Seconds())/secs)
	lv.CPUPerToken = nan(s1.HasCPU && s.tokens > 0, cpu/float64(s.tokens)*1e6)
	lv.RSS = nan(s1.HasCPU, float64(s1.RSS))
	lv.RSSPerConv = nan(s1.HasCPU, (float64(s1.RSS)-float64(base.RSS))/float64(n))
	lv.Heap = nan(s1.HasHeap, float64(s1.Heap))
	lv.HeapPerConv = nan(s1.HasHeap, (float64(s1.Heap)-float64(base.Heap))/float64(n))
	lv.CommitsPerSec = nan(s1.HasCommits, float64(s1.Commits-s0.Commits)/secs)
	lv.DBConnections = nan(probe.Database != "", float64(s1.Backends))
	if len(lv.ErrorText) > 5 {
		lv.ErrorText = lv.ErrorText[:5]
	}
	lv.OK = lv.Errors == 0 && lv.Tokens > 0 && float64(lv.DelayP99) <= ms(ld.opts.Threshold) &&
		float64(lv.StartP99) <= ms(ld.opts.StartThreshold)
	return lv, nil
}

// quantile is the q-quantile of delays in µs, in ms (nearest rank); NaN for none.
func quantile(delays []int32, q float64) Figure {
	if len(delays) == 0 {
		return Figure(math.NaN())
	}
	slices.Sort(delays)
	i := int(math.Ceil(q*float64(len(delays)))) - 1
	return Figure(float64(delays[max(0, min(i, len(delays)-1))]) / 1000)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// nan is v when known, else NaN: a figure that could not be read is never shown as 0.
func nan(known bool, v float64) Figure {
	if !known {
		return Figure(math.NaN())
	}
	return Figure(v)
}

// Figure is a measured value; NaN means it could not be measured, and is written as null
// in JSON (and "-" in tables), so an unknown never reads as zero.
type Figure float64

// Known reports whether f was measured.
func (f Figure) Known() bool { return !math.IsNaN(float64(f)) }

// MarshalJSON writes null for an unknown figure.
func (f Figure) MarshalJSON() ([]byte, error) {
	if !f.Known() || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// UnmarshalJSON reads null as unknown.
func (f *Figure) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Figure(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*f = Figure(v)
	return err
}
