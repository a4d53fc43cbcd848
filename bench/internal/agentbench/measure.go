package agentbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sample is one target's measurement in one round.
type Sample struct {
	Target         Target
	FramesPerSec   float64
	AllocsPerFrame float64 // whole process (server, client reader, journal) per delivered frame
	BytesPerFrame  float64
	CPUPerFrame    time.Duration // process CPU time (user+system) per delivered frame
	WritesPerFrame float64       // server socket writes (flushes) per frame
	FirstFrame     time.Duration // median time to first frame of single streams on a quiet server
	RowsPer1k      float64       // stored log rows per 1,000 deltas (0 for raw)
	DeltaRowsPer1k float64       // of which rows holding text deltas
}

// Round measures every target once: batches of n concurrent streams, one after another,
// until the target has streamed for at least the harness's sample time
// ([Options.SampleTime]). A batch alone lasts a few milliseconds, so whichever target's
// batch a garbage collection or a neighbour's burst fell into would pay for all of it;
// over a longer sample each target pays for its own allocations. The order of targets
// rotates with round so none always runs on a warmer or colder process.
func (e *Env) Round(ctx context.Context, n, round int) ([]Sample, error) {
	targets := e.Targets()
	out := make([]Sample, len(targets))
	for k := range targets {
		i := (k + round) % len(targets)
		t := targets[i]
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0, w0 := e.cpuTime(t), e.writes.Load()
		var frames float64
		var elapsed time.Duration
		var runIDs []string
		for elapsed < e.sampleTime || runIDs == nil {
			b, err := e.RunBatch(ctx, t, n)
			if err != nil {
				return nil, err
			}
			frames += float64(b.Frames)
			elapsed += b.Elapsed
			if runIDs == nil {
				runIDs = b.RunIDs // the first batch's logs stand for the others
			}
		}
		cpu1, w1 := e.cpuTime(t), e.writes.Load()
		runtime.ReadMemStats(&after)
		s := Sample{
			Target:         t,
			FramesPerSec:   frames / elapsed.Seconds(),
			AllocsPerFrame: float64(after.Mallocs-before.Mallocs) / frames,
			BytesPerFrame:  float64(after.TotalAlloc-before.TotalAlloc) / frames,
			CPUPerFrame:    time.Duration(float64(cpu1-cpu0) / frames),
			WritesPerFrame: float64(w1-w0) / frames,
		}
		var err error
		if s.FirstFrame, err = e.firstFrame(ctx, t, 3); err != nil {
			return nil, err
		}
		if t.Logged() {
			rows, deltaRows, err := e.LogRows(ctx, runIDs)
			if err != nil {
				return nil, err
			}
			deltas := float64(len(runIDs) * e.Deltas)
			s.RowsPer1k = float64(rows) / deltas * 1000
			s.DeltaRowsPer1k = float64(deltaRows) / deltas * 1000
		}
		out[i] = s
	}
	return out, nil
}

// firstFrame is the median time to first frame of k streams of t read one after another,
// so the figure is the stream's latency rather than a queue behind a busy batch.
func (e *Env) firstFrame(ctx context.Context, t Target, k int) (time.Duration, error) {
	ds := make([]time.Duration, k)
	for i := range ds {
		res, err := e.readStream(ctx, t, false)
		if err != nil {
			return 0, err
		}
		ds[i] = res.FirstFrame
	}
	return MedianDuration(ds), nil
}

// cpuTime is the CPU time so far of what serves and reads t's streams: this process's
// user plus system time, and for an app of yours its process's too (when its PID is
// given). CPU per frame does not depend on what else the shared machine runs, unlike
// frames per second.
func (e *Env) cpuTime(t Target) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if t == App && e.app.PID > 0 {
		app, _, err := ProcessStat(e.app.PID)
		if err == nil {
			cpu += app
		}
	}
	return cpu
}

// ProcessStat reads a process's CPU time (utime+stime of /proc/<pid>/stat, in clock
// ticks of 1/100 s, Linux's USER_HZ) and resident memory (VmRSS of /proc/<pid>/status).
func ProcessStat(pid int) (cpu time.Duration, rss uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("agentbench: process %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: the fields that follow start after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("agentbench: /proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("agentbench: /proc/%d/stat: %w", pid, err)
	}
	cpu = time.Duration(utime+stime) * (time.Second / 100)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("agentbench: VmRSS %q: %w", v, err)
			}
			return cpu, kb << 10, nil
		}
	}
	return 0, 0, fmt.Errorf("agentbench: /proc/%d/status has no VmRSS", pid)
}

// Summary is the median of every figure of a target over several rounds.
type Summary struct {
	Sample
	XRaw    float64 // FramesPerSec over the raw target's (1 for raw)
	XRawCPU float64 // the raw target's CPU per frame over this one's: the CPU-bound throughput ratio
}

// Summarize takes the per-round samples and returns one median row per target, with the
// throughput ratio against the raw baseline computed per round and then its median, so
// a noisy round moves both sides together.
func Summarize(rounds [][]Sample) ([]Summary, error) {
	if len(rounds) == 0 {
		return nil, fmt.Errorf("agentbench: no rounds to summarize")
	}
	out := make([]Summary, len(rounds[0]))
	for i, first := range rounds[0] {
		t := first.Target
		var fps, allocs, bytes, rows, drows, xraw, xcpu, writes []float64
		var first, cpu []time.Duration
		for _, r := range rounds {
			s := r[i]
			fps = append(fps, s.FramesPerSec)
			allocs = append(allocs, s.AllocsPerFrame)
			bytes = append(bytes, s.BytesPerFrame)
			rows = append(rows, s.RowsPer1k)
			drows = append(drows, s.DeltaRowsPer1k)
			first = append(first, s.FirstFrame)
			cpu = append(cpu, s.CPUPerFrame)
			writes = append(writes, s.WritesPerFrame)
			xraw = append(xraw, s.FramesPerSec/r[0].FramesPerSec)
			xcpu = append(xcpu, float64(r[0].CPUPerFrame)/float64(s.CPUPerFrame))
		}
		out[i] = Summary{Sample: Sample{Target: t, FramesPerSec: Median(fps), AllocsPerFrame: Median(allocs),
			BytesPerFrame: Median(bytes), FirstFrame: MedianDuration(first), RowsPer1k: Median(rows),
			DeltaRowsPer1k: Median(drows), CPUPerFrame: MedianDuration(cpu), WritesPerFrame: Median(writes)}, XRaw: Median(xraw), XRawCPU: Median(xcpu)}
	}
	return out, nil
}

// Median returns the median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MedianDuration is [Median] for durations.
func MedianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(Median(xs))
}
