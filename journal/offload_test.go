package journal

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOffTurnsADriverPanicIntoAnError(t *testing.T) {
	v, err := off(func() (int, error) { panic("boom") })
	if v != 0 || err == nil || !strings.Contains(err.Error(), "driver panic: boom") {
		t.Fatalf("off of a panicking call = %d, %v", v, err)
	}
	// The worker the panic ran on is still usable.
	if v, err := off(func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("the next call = %d, %v", v, err)
	}
}

// Calls never wait for each other: more calls at once than there are kept workers all
// run together, and afterwards at most maxWorkers workers wait for calls.
func TestOffRunsConcurrentCallsTogether(t *testing.T) {
	const n = 2 * maxWorkers
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	var calls sync.WaitGroup
	for i := range n {
		calls.Add(1)
		go func() {
			defer calls.Done()
			v, err := off(func() (int, error) {
				started.Done()
				release.Wait()
				return i, nil
			})
			if v != i || err != nil {
				t.Errorf("call %d returned %d, %v", i, v, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("calls waited for each other")
	}
	release.Done()
	calls.Wait()
	workers.mu.Lock()
	idle := len(workers.idle)
	workers.mu.Unlock()
	if idle > maxWorkers {
		t.Fatalf("%d workers kept, want at most %d", idle, maxWorkers)
	}
}

// Workers idle for workerIdle end, so an idle process keeps none.
func TestIdleWorkersEnd(t *testing.T) {
	if _, err := off(func() (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	workers.mu.Lock()
	if len(workers.idle) == 0 {
		workers.mu.Unlock()
		t.Fatal("no worker kept after a call")
	}
	for _, w := range workers.idle {
		w.used = time.Now().Add(-workerIdle)
	}
	workers.mu.Unlock()
	sweepWorkers()
	workers.mu.Lock()
	defer workers.mu.Unlock()
	if len(workers.idle) != 0 {
		t.Fatalf("%d idle workers left after the sweep", len(workers.idle))
	}
}
