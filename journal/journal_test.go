package journal_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	if _, err := journal.New(nil, journal.Options{}); err == nil {
		t.Fatal("nil driver accepted")
	}
	for name, o := range map[string]journal.Options{
		"LeaseTTL":         {LeaseTTL: -1},
		"PollInterval":     {PollInterval: -time.Second},
		"ApprovalDeadline": {ApprovalDeadline: -time.Hour},
	} {
		if _, err := journal.New(memory.New(), o); err == nil {
			t.Errorf("negative %s accepted", name)
		}
	}
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Owner() == "" {
		t.Fatal("no default owner")
	}
	j2, _ := journal.New(memory.New(), journal.Options{})
	if j.Owner() == j2.Owner() {
		t.Fatalf("two instances share the default owner %q", j.Owner())
	}
}

func TestLeaseBusyErrorMatches(t *testing.T) {
	t.Parallel()
	err := journal.BusyError("r1", "other", time.Unix(100, 0), time.Unix(97, 0))
	var busy *journal.LeaseBusyError
	if !errors.Is(err, journal.ErrLeaseBusy) || !errors.As(err, &busy) || busy.RetryAfter != 3*time.Second {
		t.Fatalf("err = %#v", err)
	}
	if errors.Is(err, journal.ErrLeaseLost) {
		t.Fatal("busy matches lease lost")
	}
	if err := journal.BusyError("r1", "other", time.Unix(90, 0), time.Unix(97, 0)); err.(*journal.LeaseBusyError).RetryAfter != 0 {
		t.Fatal("negative RetryAfter")
	}
}

func TestStartRunsRecoveryUntilClose(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	resumed := make(chan string, 1)
	j, err := journal.New(memory.New(), journal.Options{PollInterval: time.Millisecond,
		Resumer: func(ctx context.Context, r *journal.Run) {
			d := r.Decision("k")
			_ = r.Complete(ctx, nil)
			resumed <- string(d.Kind)
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := j.Begin(ctx, journal.NewRun{Flow: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Park(ctx, "k", time.Now().Add(-time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Start(ctx); err == nil {
		t.Fatal("second Start accepted")
	}
	select { // the background recovery loop stores the timeout and resumes
	case kind := <-resumed:
		if kind != string(journal.DecisionTimeout) {
			t.Fatalf("resumed with %q", kind)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the recovery loop never resumed the expired park")
	}
	if err := j.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := j.Start(ctx); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

// TestBlockingIODriversRunOffTheCallersStack checks that the journal wraps a driver that
// declares CapBlockingIO, so its calls run on the journal's workers, and leaves others as
// they are.
func TestBlockingIODriversRunOffTheCallersStack(t *testing.T) {
	t.Parallel()
	blocking := &capDriver{Driver: memory.New(), caps: journal.CapDurable | journal.CapBlockingIO}
	j, err := journal.New(blocking, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Driver() == journal.Driver(blocking) {
		t.Fatal("a CapBlockingIO driver must be wrapped")
	}
	caller := goroutineID()
	if _, err := j.Driver().GetRun(context.Background(), "missing"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("GetRun through the wrapper: %v", err)
	}
	if blocking.lastGoroutine == caller || blocking.lastGoroutine == 0 {
		t.Fatalf("the driver call ran on the caller's goroutine (%d)", caller)
	}
	plain := memory.New()
	j2, err := journal.New(plain, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if j2.Driver() != journal.Driver(plain) {
		t.Fatal("a driver without CapBlockingIO must be used as is")
	}
}

// Blocking calls never wait for each other in the journal: with more calls in flight
// than there are workers, each still runs at once. Here every call blocks until all of
// them have started, which would hang if any queued behind another.
func TestBlockingIOCallsNeverQueue(t *testing.T) {
	t.Parallel()
	const calls = 64 // more than the journal keeps workers
	var started sync.WaitGroup
	started.Add(calls)
	blocking := &capDriver{Driver: memory.New(), caps: journal.CapBlockingIO, block: func() {
		started.Done()
		started.Wait()
	}}
	j, err := journal.New(blocking, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := j.Driver().GetRun(context.Background(), "missing")
			errs <- err
		}()
	}
	timeout := time.After(10 * time.Second)
	for range calls {
		select {
		case err := <-errs:
			if !errors.Is(err, journal.ErrNotFound) {
				t.Fatalf("GetRun: %v", err)
			}
		case <-timeout:
			t.Fatal("blocking driver calls waited for each other")
		}
	}
}

// capDriver overrides a driver's capabilities and records which goroutine GetRun ran on.
type capDriver struct {
	journal.Driver
	caps          journal.Capability
	lastGoroutine uint64
	block         func() // when set, GetRun calls it first
}

func (c *capDriver) Capabilities() journal.Capability { return c.caps }

func (c *capDriver) GetRun(ctx context.Context, id string) (journal.RunRecord, error) {
	if c.block != nil {
		c.block()
	} else {
		c.lastGoroutine = goroutineID()
	}
	return c.Driver.GetRun(ctx, id)
}

// goroutineID reads the current goroutine's id from its stack header.
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	fields := strings.Fields(strings.TrimPrefix(string(buf), "goroutine "))
	id, _ := strconv.ParseUint(fields[0], 10, 64)
	return id
}

// A follower woken by the write that stores a run's last rows and ends its stream reads
// the follow tail: it must see those rows together with the end, or neither. Rows
// without the end would leave it waiting for a wake-up that already came (until the
// follow route's poll). A reader spins on the tail while the write happens.
func TestTailShowsAStreamsLastRowsWithItsEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	j, err := journal.New(memory.New(), journal.Options{TailBytes: 1 << 20, LogPolicy: &journal.LogPolicy{Ends: []string{"done"}}})
	if err != nil {
		t.Fatal(err)
	}
	opts := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour}
	for i := range 300 {
		id := "s" + strconv.Itoa(i)
		w, err := j.CreateLog(ctx, journal.Stream{ID: id}, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteTyped(ctx, "start", []byte(`{"type":"start"}`)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() {
			_, err := w.WriteEnd(ctx, "done", []byte(`{"type":"done"}`))
			ended <- err
		}()
		for {
			st, rows, err := j.ReadStream(ctx, id, 1, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) > 0 && st.FinishedAt == nil {
				t.Fatalf("stream %s: read its last row without its end", id)
			}
			if st.FinishedAt != nil {
				break
			}
			runtime.Gosched()
		}
		if err := <-ended; err != nil {
			t.Fatal(err)
		}
	}
}
