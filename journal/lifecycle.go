package journal

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// schedulerLease is the named lease that elects the one instance running clean-up jobs.
const schedulerLease = "scheduler"

// recoverBatch bounds the work one recovery pass takes on.
const recoverBatch = 100

// Start runs the background work until [Journal.Close]: the recovery loop (every
// PollInterval), lease renewal of held runs (every LeaseTTL/3) and, on the instance that
// holds the scheduler lease, retention (every CleanupInterval). ctx only bounds Start
// itself; the loops stop at Close.
func (j *Journal) Start(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if j.started {
		return errors.New("journal: already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	j.started = true
	loopCtx, cancel := context.WithCancel(context.Background())
	j.stopLoops = cancel
	j.every(loopCtx, j.opts.LeaseTTL/3, j.renewAll)
	j.every(loopCtx, j.opts.PollInterval, func(ctx context.Context) { _, _ = j.RecoverOnce(ctx) })
	j.every(loopCtx, j.opts.CleanupInterval, func(ctx context.Context) { _, _ = j.CleanupOnce(ctx) })
	return nil
}

// every runs fn every d until ctx ends.
func (j *Journal) every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	j.loops.Add(1)
	go func() {
		defer j.loops.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn(ctx)
			}
		}
	}()
}

// Close stops the loops, waits for running resumers (cancelling them when ctx ends first)
// and releases every lease this instance holds so others can take over at once.
func (j *Journal) Close(ctx context.Context) error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	stop := j.stopLoops
	j.mu.Unlock()
	if stop != nil {
		stop()
	}
	j.loops.Wait()

	done := make(chan struct{})
	go func() { j.resumers.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		j.cancelBase()
		<-done
	}
	j.cancelBase()
	rel := context.WithoutCancel(ctx)
	for _, r := range j.heldRuns() {
		if rerr := r.Release(rel); rerr != nil && err == nil {
			err = rerr
		}
	}
	if rerr := j.d.ReleaseLease(rel, schedulerLease, j.opts.Owner); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// RenewOnce extends the lease of every run this instance holds, as the background loop
// does every LeaseTTL/3. Tests call it with a fake clock.
func (j *Journal) RenewOnce(ctx context.Context) { j.renewAll(ctx) }

// renewAll extends the lease of every run this instance holds: in one call when the
// driver is a [LeaseRenewer] (the SQL drivers renew a hundred runs a statement), else
// with a write a run. A run whose lease was lost ends its execution; a database that
// failed counts as a fault (see [Journal.RecoverOnce]).
func (j *Journal) renewAll(ctx context.Context) {
	held := j.heldRuns()
	runs := make(map[string]*Run, len(held))
	fences := make([]Fence, 0, len(held))
	for _, r := range held {
		r.mu.Lock()
		if !r.done {
			runs[r.ID] = r
			fences = append(fences, r.fence)
		}
		r.mu.Unlock()
	}
	if len(fences) == 0 {
		return
	}
	lost, err := renewLeases(ctx, j.d, fences, j.now().Add(j.opts.LeaseTTL))
	for _, f := range lost {
		if r := runs[f.RunID]; r != nil && r.fenceIs(f) {
			r.lose()
		}
	}
	if transient(ctx, err) {
		j.fault()
	}
}

// RecoverOnce runs one recovery pass: it stores a timeout decision for every pending park
// whose deadline passed, then claims and resumes every run that needs an owner (all parks
// decided, or a running run whose owner's lease expired). It returns how many runs it
// resumed. Without a resumer nothing is claimed, but timeouts are still stored.
//
// For one lease TTL after this instance last saw the database fail, nothing is claimed:
// the owners of runs whose leases expired meanwhile were most likely cut off too and are
// alive, and taking their runs over would run their steps again. Given the time to renew,
// they finish what they hold.
func (j *Journal) RecoverOnce(ctx context.Context) (int, error) {
	if err := j.checkOpen(); err != nil {
		return 0, err
	}
	now := j.now()
	parks, err := j.d.ExpiredParks(ctx, now, recoverBatch)
	if err != nil {
		if transient(ctx, err) {
			j.fault()
		}
		return 0, fmt.Errorf("journal: expired parks: %w", err)
	}
	for _, p := range parks {
		d := Decision{Kind: DecisionTimeout, Payload: []byte(`{"reason":"timeout"}`), DecidedAt: now}
		_, err := j.d.Decide(ctx, p.RunID, p.Key, j.opts.Owner, d, now)
		if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrLeaseBusy) && !errors.Is(err, ErrNotFound) {
			if transient(ctx, err) {
				j.fault()
			}
			return 0, fmt.Errorf("journal: timeout decision: %w", err)
		}
	}
	j.mu.Lock()
	hasResumer := j.resumer != nil
	j.mu.Unlock()
	if !hasResumer || j.inGrace(now) {
		return 0, nil
	}
	ids, err := j.d.RecoverableRuns(ctx, now, recoverBatch)
	if err != nil {
		if transient(ctx, err) {
			j.fault()
		}
		return 0, fmt.Errorf("journal: recoverable runs: %w", err)
	}
	n := 0
	for _, id := range ids {
		if j.tryResume(ctx, id) {
			n++
		}
	}
	return n, nil
}
