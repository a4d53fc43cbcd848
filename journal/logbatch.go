package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
// On a journal whose writes are commits ([CapDurable]) the batch also creates streams and
// ends them with their last rows (see [logBatch.now]): a conversation's start and end
// join the commit of every live stream's rows instead of each costing one. A flush
// asked for at once then still waits until a gap after the last one has passed, so
// that the starts, ends and writers waiting for their rows in that time share one
// commit: gapPerStream for each live stream, at most maxGap. A few streams wait
// microseconds; a thousand make at most 50 such commits a second.
//
// One append's failure is its writer's alone: a lost lease fails that writer and no
// other. An append that failed because the database was away is tried again on its own,
// as every write of the journal is ([Options.WriteRetry]).
type logBatch struct {
	j *Journal
	// group says the batch creates and ends streams too, and keeps a gap between
	// flushes: the driver's writes are commits.
	group bool
	// live counts the journal's open log writers.
	live atomic.Int64

	mu       sync.Mutex
	waiting  []batched
	interval time.Duration // the window: see window
	timer    *time.Timer   // the next flush, when one is due
	due      time.Time
	flushing bool
	urgent   bool // a writer waits for its rows: flush as soon as the batch is free
	last     time.Time
}

// batched is one writer's rows in the batch, or a stream's creation or end whose caller
// waits on done for the outcome.
type batched struct {
	w    *LogWriter
	fa   FencedAppend
	done chan error
}

// The gap between flushes asked for at once: see logBatch.
const (
	gapPerStream = 20 * time.Microsecond
	maxGap       = 20 * time.Millisecond
)

// add queues a writer's rows for the next flush.
func (b *logBatch) add(w *LogWriter, fa FencedAppend) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting = append(b.waiting, batched{w: w, fa: fa})
	if len(b.waiting) == 1 || window(w) < b.interval {
		b.interval = window(w)
	}
	b.schedule()
}

// now stores fa (a stream's creation, or its end with its last rows) with the next
// flush, asking for it at once, and returns its outcome. When the flush may go now it
// runs on the caller, which saves handing the write to another goroutine and back.
func (b *logBatch) now(fa FencedAppend) error {
	done := make(chan error, 1)
	b.mu.Lock()
	b.waiting = append(b.waiting, batched{fa: fa, done: done})
	if len(b.waiting) == 1 {
		b.interval = maxWindow
	}
	b.urgent = true
	t := time.Now()
	inline := !b.flushing && !b.at(t).After(t)
	if inline && b.timer != nil {
		if inline = b.timer.Stop(); inline { // else it is firing, and takes fa
			b.timer = nil
		}
	}
	if !inline {
		b.schedule()
	}
	b.mu.Unlock()
	if inline {
		b.flush()
	}
	return <-done
}

// at is when the next flush is due: the end of the window, or, when urgent, now (or
// the gap after the last flush, on a journal that commits). b.mu must be held.
func (b *logBatch) at(now time.Time) time.Time {
	at := b.last.Add(b.interval)
	if b.urgent {
		at = now
		if b.group {
			at = b.last.Add(min(maxGap, time.Duration(b.live.Load())*gapPerStream))
		}
	}
	if at.Before(now) {
		at = now
	}
	return at
}

// schedule arms the flush when it is due (see at), unless the batch is flushing (it
// schedules the next itself) or a flush is armed no later. b.mu must be held.
func (b *logBatch) schedule() {
	if b.flushing || len(b.waiting) == 0 {
		return
	}
	now := time.Now()
	at := b.at(now)
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
	b.mu.Unlock()

	if len(items) > 0 {
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = it.fa.StreamID
		}
		b.j.tails.begin(ids)
		b.store(items)
		b.j.tails.end(ids)
	}

	b.mu.Lock()
	b.flushing = false
	b.last = time.Now()
	if len(b.waiting) > 0 {
		b.interval = maxWindow
		for _, it := range b.waiting {
			if it.w != nil {
				b.interval = min(b.interval, window(it.w))
			}
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
		if it.done != nil {
			if err == nil {
				b.tail(it.fa)
			}
			it.done <- err // its caller retries, and settles a lost lease
			continue
		}
		switch {
		case transient(ctx, err):
			// The database is away: this writer's rows are tried again on their own, as
			// any write is, while the batch goes on with the others.
			b.j.fault()
			b.retryAlone(it.w, it.fa.Append, err)
			continue
		case errors.Is(err, ErrLeaseLost) && it.w.run != nil:
			it.w.run.lose()
		}
		it.w.settleBatch(it.fa.Append, err)
	}
}

// retryAlone has w store a on its own, on a goroutine of its own, after the batch's
// attempt failed with err because the database was away. The rows stay marked as being
// stored until that write ends: they may have landed, and a follower must not be told
// that nothing is committed. (A function of its own: a closure in store's loop would
// move each item to the heap and grow the frame under which a handler's stream opens.)
func (b *logBatch) retryAlone(w *LogWriter, a Append, err error) {
	ids := w.storing(a)
	b.j.tails.begin(ids)
	go func() {
		defer b.j.tails.end(ids)
		w.commitAlone(a, err)
	}()
}

// tail puts the rows of a stored creation, end or flush in the follow tail (and the end
// with them) before the flush is settled, as a writer's rows are: a follower woken at
// the commit then reads them there, not from the database. The stream's last seq after
// an end is its last row's ([FencedAppend.Finish]).
func (b *logBatch) tail(fa FencedAppend) {
	if len(fa.Rows) == 0 {
		return
	}
	if fa.Finish.IsZero() {
		b.j.tails.add(fa.StreamID, fa.Rows, b.j.now())
		return
	}
	b.j.tails.commit(fa.StreamID, fa.Rows, fa.Rows[len(fa.Rows)-1].Seq, fa.Finish)
}
