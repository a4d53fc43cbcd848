package offstack

import (
	"sync"
	"testing"
	"time"
)

// Calls never wait for each other: more calls at once than there are kept goroutines
// all run together, and afterwards at most maxIdle goroutines wait for calls.
func TestRunRunsConcurrentCallsTogether(t *testing.T) {
	const n = 2 * maxIdle
	var started, release sync.WaitGroup
	started.Add(n)
	release.Add(1)
	var calls sync.WaitGroup
	for range n {
		calls.Go(func() {
			Run(func() {
				started.Done()
				release.Wait()
			})
		})
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
	if idle > maxIdle {
		t.Fatalf("%d goroutines kept, want at most %d", idle, maxIdle)
	}
}

// A call's panic is raised again in Run's caller, and the next call runs.
func TestRunRaisesAPanicInTheCaller(t *testing.T) {
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Fatalf("recovered %v, want the call's panic", p)
			}
		}()
		Run(func() { panic("boom") })
		t.Fatal("Run returned")
	}()
	ran := false
	Run(func() { ran = true })
	if !ran {
		t.Fatal("the call after a panic did not run")
	}
}

// A call runs on the goroutine kept last, whose stack has grown before, rather than on
// a new one.
func TestRunReusesTheGoroutineKeptLast(t *testing.T) {
	Run(func() {})
	workers.mu.Lock()
	n := len(workers.idle)
	if n == 0 {
		workers.mu.Unlock()
		t.Fatal("no goroutine kept after a call")
	}
	kept := workers.idle[n-1]
	workers.mu.Unlock()
	Run(func() {})
	workers.mu.Lock()
	defer workers.mu.Unlock()
	if len(workers.idle) != n || workers.idle[n-1] != kept {
		t.Fatal("the call did not run on the goroutine kept last")
	}
}

// Goroutines idle for idleFor end, so an idle process keeps none.
func TestIdleGoroutinesEnd(t *testing.T) {
	Run(func() {})
	workers.mu.Lock()
	if len(workers.idle) == 0 {
		workers.mu.Unlock()
		t.Fatal("no goroutine kept after a call")
	}
	for _, w := range workers.idle {
		w.used = time.Now().Add(-idleFor)
	}
	workers.mu.Unlock()
	sweep()
	workers.mu.Lock()
	defer workers.mu.Unlock()
	if len(workers.idle) != 0 {
		t.Fatalf("%d idle goroutines left after the sweep", len(workers.idle))
	}
}
