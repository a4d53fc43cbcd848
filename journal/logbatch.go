package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// logBatch commits the log of every live stream of a journal together. A [LogWriter]
// whose commit interval has passed hands its queued rows here instead of committing them
// itself; every window (100 ms, or the smallest CommitInterval of the writers waiting
// when that is shorter) the batch stores all of them with one [Driver.AppendBatch], so the commits a
// second do not grow with the number of streams. A writer keeps writing while its rows
// are in the batch; what must be stored at once (an ending event, a seq past the
// reservation, Flush, Close, a step's write) first waits for them, and asks the batch
// to go at once rather than at the end of its window.
//
// One append's failure is its writer's alone: a lost lease fails that writer and no
// other. An append that failed because the database was away is tried again on its own,
// as every write of the journal is ([Options.WriteRetry]).
type logBatch struct {
	j *Journal

	mu       sync.Mutex
	waiting  []batched
	interval time.Duration // the window: see window
	timer    *time.Timer   // the next flush, when one is due
	due      time.Time
	flushing bool
	urgent   bool // a writer waits for its rows: flush as soon as the batch is free
	last     time.Time
	// storing names the streams of the flush under way, and stored is closed once their
	// writers are settled (their rows in the tails): a follower the driver woke at the
	// commit waits for that instead of reading the rows back from the database.
	storing map[string]bool
	stored  chan struct{}
}

// batched is one writer's rows in the batch.
type batched struct {
	w  *LogWriter
	fa FencedAppend
}

// add queues a writer's rows for the next flush.
func (b *logBatch) add(w *LogWriter, fa FencedAppend) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting = append(b.waiting, batched{w, fa})
	if len(b.waiting) == 1 || window(w) < b.interval {
		b.interval = window(w)
	}
	b.schedule()
}

// schedule arms the flush at the end of the window, or at once when urgent, unless the
// batch is flushing (it schedules the next itself) or a flush is armed no later. b.mu
// must be held.
func (b *logBatch) schedule() {
	if b.flushing || len(b.waiting) == 0 {
		return
	}
	now := time.Now()
	at := b.last.Add(b.interval)
	if b.urgent || at.Before(now) {
		at = now
	}
	if b.timer != nil {
		if !b.due.After(at) || !b.timer.Stop() {
			return // armed no later, or firing now
		}
	}
	b.due = at
	b.timer = time.AfterFunc(at.Sub(now), b.flush)
}

// kick makes the batch flush as soon as it can: a writer waits for its rows.
func (b *logBatch) kick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.urgent = true
	b.schedule()
}

// flush stores every waiting writer's rows in one AppendBatch and settles each writer.
func (b *logBatch) flush() {
	b.mu.Lock()
	if b.flushing {
		b.mu.Unlock()
		return
	}
	b.timer = nil
	items := b.waiting
	b.waiting = nil
	b.flushing, b.urgent = true, false
	var stored chan struct{}
	if len(items) > 0 {
		stored = make(chan struct{})
		b.storing, b.stored = make(map[string]bool, len(items)), stored
		for _, it := range items {
			b.storing[it.fa.Append.StreamID] = true
		}
	}
	b.mu.Unlock()

	if len(items) > 0 {
		b.store(items)
	}

	b.mu.Lock()
	if stored != nil {
		close(stored)
		b.storing, b.stored = nil, nil
	}
	b.flushing = false
	b.last = time.Now()
	if len(b.waiting) > 0 {
		b.interval = window(b.waiting[0].w)
		for _, it := range b.waiting[1:] {
			b.interval = min(b.interval, window(it.w))
		}
	}
	b.schedule()
	b.mu.Unlock()
}

// maxWindow bounds the batch's window: a writer's rows reach the batch once its own
// CommitInterval has passed, so a long interval (a writer that stores rarely) must not
// hold back the rows of the window it joins.
const maxWindow = 100 * time.Millisecond

// window is how long the batch may gather after its last flush for w's rows.
func window(w *LogWriter) time.Duration { return min(w.opts.CommitInterval, maxWindow) }

// store writes items and settles their writers.
func (b *logBatch) store(items []batched) {
	ctx := context.Background()
	batch := make([]FencedAppend, len(items))
	for i, it := range items {
		batch[i] = it.fa
	}
	start := time.Now()
	errs := b.j.d.AppendBatch(ctx, batch)
	if f := b.j.batchObserver.Load(); f != nil {
		(*f)(len(batch), time.Since(start))
	}
	if len(errs) != len(batch) {
		err := fmt.Errorf("journal: the driver's AppendBatch gave %d results for %d appends", len(errs), len(batch))
		errs = make([]error, len(batch))
		for i := range errs {
			errs[i] = err
		}
	}
	for i, it := range items {
		err := errs[i]
		switch {
		case transient(ctx, err):
			// The database is away: this writer's rows are tried again on their own, as
			// any write is, while the batch goes on with the others.
			b.j.fault()
			go it.w.commitAlone(it.fa.Append, err)
			continue
		case errors.Is(err, ErrLeaseLost) && it.w.run != nil:
			it.w.run.lose()
		}
		it.w.settleBatch(it.fa.Append, err)
	}
}

// storingStream returns a channel closed once the flush under way has settled the
// writer of stream id, or nil when no flush under way holds its rows.
func (b *logBatch) storingStream(id string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.storing[id] {
		return b.stored
	}
	return nil
}
