package journal

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Write retries: a write whose result the run has already produced (a step's result, a
// run's end, the rows of its log) is not thrown away when the database fails for a
// moment. It is tried again, with backoff, until it lands, fails for good (the lease is
// lost to another owner, the journal closes), or [Options.WriteRetry] passes.
const (
	retryFirst = 20 * time.Millisecond
	retryMax   = time.Second
)

// IsTransient reports whether err, from a [Driver] or a [Journal] call, may go away when
// the call is tried again: any error but the journal's own outcomes (a lost lease, a
// conflict, a stored seq, ...) and cancellation. Callers that drive the journal
// themselves retry such errors with backoff, as the journal does with its writes.
func IsTransient(err error) bool { return transient(context.Background(), err) }

// transient reports whether a driver error may go away when the write is tried again:
// any error but the journal's own outcomes (a lost lease, a conflict, a stored seq...)
// and the end of the caller's context.
func transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	for _, final := range []error{ErrLeaseLost, ErrStepExists, ErrConflict, ErrNotFound, ErrSeqExists, ErrSeqGap,
		ErrRunFinished, ErrNonDeterministic, ErrClosed, ErrLeaseBusy, context.Canceled} {
		if errors.Is(err, final) {
			return false
		}
	}
	return true
}

// persist runs write until it succeeds or fails for good. A write that failed
// transiently may have landed all the same (the commit went through, its acknowledgement
// did not): when a later attempt then fails for good, landed is asked whether the
// earlier one did, and a yes counts as success. landed may be nil.
func (j *Journal) persist(ctx context.Context, what string, write func() error, landed func(err error) bool) (err error) {
	if o, ok := TracerOf(ctx).(WriteObserver); ok {
		start := time.Now()
		defer func() { o.JournalWrite(ctx, writeKind(what), time.Since(start), err) }()
	}
	err = write()
	if !transient(ctx, err) {
		return err
	}
	return j.retry(ctx, what, err, write, landed)
}

// retry is persist after write failed with the transient err. It is kept out of
// persist, under which every write runs: a goroutine's stack grows with the deepest it
// ever gets, and an agent stream waits on its model for minutes with that stack.
//
//go:noinline
func (j *Journal) retry(ctx context.Context, what string, err error, write func() error, landed func(err error) bool) error {
	j.fault()
	deadline := time.Now().Add(j.opts.WriteRetry)
	delay := retryFirst
	for attempt := 1; ; attempt++ {
		if attempt == 1 || attempt%20 == 0 {
			j.opts.Logger.Warn("journal: write failed; trying again", "write", what, "attempt", attempt, "err", err)
		}
		if !time.Now().Add(delay).Before(deadline) {
			j.opts.Logger.Error("journal: write failed; giving up", "write", what, "attempts", attempt, "err", err)
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-t.C:
		case <-j.baseCtx.Done():
			t.Stop()
			return err
		case <-ctx.Done():
			t.Stop()
			return err
		}
		delay = min(2*delay, retryMax)
		err = write()
		switch {
		case err == nil:
			j.opts.Logger.Info("journal: write landed after retrying", "write", what, "attempts", attempt+1)
			return nil
		case transient(ctx, err):
			j.fault()
			continue
		case landed != nil && landed(err):
			j.opts.Logger.Info("journal: an earlier attempt of the write had landed", "write", what, "attempts", attempt+1)
			return nil
		}
		return err
	}
}

// fault notes that the database failed just now: for one lease TTL from here the
// recovery loop takes over no run, so owners that were cut off from the database as
// well get to renew their leases before anyone takes their runs (see [Journal.RecoverOnce]).
func (j *Journal) fault() {
	now := j.now()
	j.mu.Lock()
	if now.After(j.lastFault) {
		j.lastFault = now
	}
	j.mu.Unlock()
}

// inGrace reports whether the database failed less than a lease TTL ago.
func (j *Journal) inGrace(now time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.lastFault.IsZero() && now.Sub(j.lastFault) < j.opts.LeaseTTL
}
