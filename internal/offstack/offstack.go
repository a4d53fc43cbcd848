// Package offstack runs a call off the caller's stack, on a goroutine whose stack has
// already grown, so that a deep call grows neither the caller's stack nor a fresh one.
//
// Go grows a goroutine's stack by copying it to one twice the size, and shrinks it back
// only once a quarter of it holds what is in use: a deep call made by a goroutine that
// then waits for minutes (an agent stream waiting on its model) leaves it holding the
// larger stack all that time. Running the call on a goroutine of its own avoids that,
// but a new goroutine starts on a small stack and copies it on the way down each time:
// net/http writing a response's headers needs a frame of nearly 3 KiB, database/sql
// and the SQL drivers under it tens of KiB. [Run] keeps the goroutines between calls,
// so their stacks grow once.
//
// Each goroutine is driven as a coroutine ([iter.Pull]): a call switches to it and back
// without the scheduler. Handing calls to goroutines over channels woke an idle
// processor twice a call.
//
// The runtime throws when a goroutine locked to its OS thread switches to a coroutine
// another goroutine made, so [Run] is not for a goroutine that called
// runtime.LockOSThread.
package offstack

import (
	"iter"
	"slices"
	"sync"
	"time"
)

// The goroutines: at most maxIdle wait for calls, and those idle for idleFor end, so an
// idle process keeps none. A call that finds none waiting starts one: calls never queue
// behind each other here.
const (
	maxIdle = 16
	idleFor = 30 * time.Second
)

// worker runs calls on a goroutine of its own, one at a time, driven as a coroutine.
type worker struct {
	call func()
	next func() (struct{}, bool)
	stop func()
	used time.Time // when its last call ended
}

func newWorker() *worker {
	w := &worker{}
	w.next, w.stop = iter.Pull(func(yield func(struct{}) bool) {
		for {
			w.call()
			w.call = nil
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return w
}

var workers struct {
	mu    sync.Mutex
	idle  []*worker // the most recently used last
	sweep *time.Timer
}

// Run runs call on a goroutine whose stack has grown before (on a new one when none is
// free) and returns when call has. A panic in call is raised again in Run's caller, and
// the goroutine it ran on ends.
func Run(call func()) {
	workers.mu.Lock()
	var w *worker
	if n := len(workers.idle); n > 0 {
		w = workers.idle[n-1]
		workers.idle = workers.idle[:n-1]
	}
	workers.mu.Unlock()
	if w == nil {
		w = newWorker()
	}
	w.call = call
	w.next()
	w.used = time.Now()
	workers.mu.Lock()
	if len(workers.idle) == maxIdle {
		workers.mu.Unlock()
		w.stop()
		return
	}
	workers.idle = append(workers.idle, w)
	if workers.sweep == nil {
		workers.sweep = time.AfterFunc(idleFor, sweep)
	}
	workers.mu.Unlock()
}

// sweep ends the goroutines idle for idleFor, and comes back while any is left.
func sweep() {
	workers.mu.Lock()
	now := time.Now()
	k := 0
	for k < len(workers.idle) && now.Sub(workers.idle[k].used) >= idleFor {
		k++
	}
	old := slices.Clone(workers.idle[:k])
	workers.idle = slices.Delete(workers.idle, 0, k)
	workers.sweep = nil
	if len(workers.idle) > 0 {
		workers.sweep = time.AfterFunc(idleFor-now.Sub(workers.idle[0].used), sweep)
	}
	workers.mu.Unlock()
	for _, w := range old {
		w.stop()
	}
}
