package flowbench

import (
	"sync"
	"syscall"
	"testing"
	"time"
)

// Subject is one side of a comparison: a name ("raw", "engine", "connect") and one
// checked call.
type Subject struct {
	Name string
	Call func() error
}

// Options size a measurement; the zero value means the defaults.
type Options struct {
	// Callers is the number of concurrent callers; 32 by default.
	Callers int
	// Batch is how many calls a subject makes in its turn of a round, spread over the
	// callers; 512 by default. Large enough that a turn outlasts the scheduler's noise,
	// small enough that a round sees every subject under the same load.
	Batch int
}

// Tally is what one subject did over the measured rounds.
type Tally struct {
	Calls  int
	Wall   time.Duration // summed over its batches
	CPU    time.Duration // process user + system time during its batches
	Allocs float64       // whole-process allocations of one call made alone
}

// PerSecond is the subject's throughput under the concurrent callers.
func (t Tally) PerSecond() float64 { return float64(t.Calls) / t.Wall.Seconds() }

// CPUPerCall is the process CPU time (client and server) one call cost.
func (t Tally) CPUPerCall() time.Duration { return t.CPU / time.Duration(t.Calls) }

// Measure runs b.N rounds; in each round every subject makes one batch of calls from
// the concurrent callers, in an order rotated every round, so no subject always follows
// another and each meets the same load. The first subject is the baseline; every other
// one is reported as a ratio to it: "<name>-x-<base>" is its throughput as a fraction of
// the baseline's (1.0 is as fast), "<name>-cpu-x-<base>" the same in CPU time per call.
// Each subject also gets its CPU µs per call and the whole-process allocations of one
// call made alone ("<name>-allocs/call"; the client's share is the same for every
// subject). Measure returns the tallies, by name, for ratios between other pairs.
func Measure(b *testing.B, opts Options, subjects ...Subject) map[string]Tally {
	b.Helper()
	if opts.Callers <= 0 {
		opts.Callers = 32
	}
	if opts.Batch <= 0 {
		opts.Batch = 512
	}
	perCaller := max(1, opts.Batch/opts.Callers)
	tallies := make([]Tally, len(subjects))
	for i, s := range subjects {
		if _, _, err := batch(s.Call, opts.Callers, perCaller); err != nil { // warm connections and caches
			b.Fatalf("%s: %v", s.Name, err)
		}
		var failed error
		tallies[i].Allocs = testing.AllocsPerRun(200, func() {
			if err := s.Call(); err != nil && failed == nil {
				failed = err
			}
		})
		if failed != nil {
			b.Fatalf("%s: %v", s.Name, failed)
		}
	}
	b.ResetTimer()
	for round := 0; b.Loop(); round++ {
		for k := range subjects {
			i := (round + k) % len(subjects)
			wall, cpu, err := batch(subjects[i].Call, opts.Callers, perCaller)
			if err != nil {
				b.Fatalf("%s: %v", subjects[i].Name, err)
			}
			tallies[i].Calls += opts.Callers * perCaller
			tallies[i].Wall += wall
			tallies[i].CPU += cpu
		}
	}
	out := make(map[string]Tally, len(subjects))
	base := tallies[0]
	for i, s := range subjects {
		t := tallies[i]
		out[s.Name] = t
		b.ReportMetric(t.PerSecond()/1e3, s.Name+"-kcalls/s")
		b.ReportMetric(float64(t.CPUPerCall().Nanoseconds())/1e3, s.Name+"-cpu-µs/call")
		b.ReportMetric(t.Allocs, s.Name+"-allocs/call")
		if i > 0 {
			b.ReportMetric(t.PerSecond()/base.PerSecond(), s.Name+"-x-"+subjects[0].Name)
			b.ReportMetric(float64(base.CPUPerCall())/float64(t.CPUPerCall()), s.Name+"-cpu-x-"+subjects[0].Name)
		}
	}
	return out
}

// batch makes calls calls from each of callers goroutines at once and returns the wall
// and process CPU time they took, and the first error.
func batch(call func() error, callers, calls int) (wall, cpu time.Duration, err error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	c0, t0 := cpuTime(), time.Now()
	for range callers {
		wg.Go(func() {
			for range calls {
				if err := call(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(t0), cpuTime() - c0, first
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
