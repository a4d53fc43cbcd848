package journal

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors returned by [Journal], [Run] and every [Driver]. Callers match them with
// errors.Is; drivers return them (possibly wrapped) so the journal can tell outcomes apart
// without knowing which database it talks to.
var (
	// ErrNotFound means the run, park or stream does not exist.
	ErrNotFound = errors.New("journal: not found")
	// ErrConflict means the thing was already done: a park already decided, a run id taken.
	ErrConflict = errors.New("journal: conflict")
	// ErrLeaseBusy is matched by every [*LeaseBusyError]; another owner holds the run.
	ErrLeaseBusy = errors.New("journal: lease busy")
	// ErrLeaseLost means this writer's lease expired and was claimed by another owner (or
	// released); the write was rejected so two instances never both append.
	ErrLeaseLost = errors.New("journal: lease lost")
	// ErrNonDeterministic means a replayed execution asked for a different step than the
	// one recorded at the same position.
	ErrNonDeterministic = errors.New("journal: non-deterministic replay")
	// ErrRunFinished means the run already completed or failed and cannot be claimed.
	ErrRunFinished = errors.New("journal: run finished")
	// ErrStepExists means a step was already recorded at that position.
	ErrStepExists = errors.New("journal: step already recorded")
	// ErrSeqExists means an event row with that seq is already stored for the stream.
	ErrSeqExists = errors.New("journal: event seq already exists")
	// ErrSeqGap means an append would leave a gap in the stream's seq numbers.
	ErrSeqGap = errors.New("journal: event seq gap")
	// ErrClosed means the journal or log writer was closed.
	ErrClosed = errors.New("journal: closed")
)

// LeaseBusyError reports that another owner holds an unexpired lease on a run. RetryAfter
// is the remaining lease time, which the HTTP layer turns into a Retry-After header.
type LeaseBusyError struct {
	RunID      string
	Owner      string
	RetryAfter time.Duration
}

// Error implements error.
func (e *LeaseBusyError) Error() string {
	return fmt.Sprintf("journal: run %s is locked by another worker (%s); retry after %s", e.RunID, e.Owner, e.RetryAfter)
}

// Is lets errors.Is(err, ErrLeaseBusy) match.
func (e *LeaseBusyError) Is(target error) bool { return target == ErrLeaseBusy }

// StepError is what a replayed step returns when its first execution failed with an
// ordinary error: only the message survives the journal, so replays stay faithful.
type StepError struct {
	Step    string
	Message string
}

// Error implements error.
func (e *StepError) Error() string { return e.Message }

// busyError builds a [*LeaseBusyError] from a lease that is still held at now.
func busyError(runID, owner string, expires, now time.Time) *LeaseBusyError {
	d := expires.Sub(now)
	if d < 0 {
		d = 0
	}
	return &LeaseBusyError{RunID: runID, Owner: owner, RetryAfter: d}
}

// BusyError is exported for drivers: it builds the [*LeaseBusyError] for a lease held by
// owner until expires, seen at now.
func BusyError(runID, owner string, expires, now time.Time) error {
	return busyError(runID, owner, expires, now)
}
