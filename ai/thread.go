package ai

import (
	"context"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/journal"
)

// CodeInterruptPending is the RUN_ERROR code of an input on a thread whose earlier run
// waits for the answer to an interrupt: AG-UI 1.0 asks the client to answer it (resume)
// before it sends anything else, and no second run starts beside the parked one.
const CodeInterruptPending = "InterruptPending"

// threadScan bounds the runs of a thread read for a pending interrupt, and threadRecent
// how many of the latest are looked at: a run parks only as its thread's latest, since
// every later input was refused while it waited.
const (
	threadScan   = 1000
	threadRecent = 3
)

// errInterruptPending is a refused input; Stream answers it with a lone RUN_ERROR.
type errInterruptPending struct{ threadID, runID string }

func (e *errInterruptPending) Error() string {
	return fmt.Sprintf("ai: thread %s has a run waiting for the answer to its interrupts (run %s): answer them with resume first", e.threadID, e.runID)
}

// checkThread refuses a new run on a thread one of whose runs is parked on interrupts.
func checkThread(ctx context.Context, j *journal.Journal, threadID string) error {
	runs, err := j.ThreadRuns(ctx, threadID, 0, threadScan)
	if err != nil {
		return err
	}
	for i := len(runs) - 1; i >= max(0, len(runs)-threadRecent); i-- {
		st, err := j.GetStream(ctx, runs[i].StreamID)
		if errors.Is(err, journal.ErrNotFound) || err == nil && (st.FinishedAt != nil || st.RunID == "") {
			continue
		}
		if err != nil {
			return err
		}
		rec, err := j.GetRun(ctx, st.RunID)
		if err != nil && !errors.Is(err, journal.ErrNotFound) {
			return err
		}
		if err == nil && rec.Status == journal.StatusParked {
			return &errInterruptPending{threadID: threadID, runID: st.ID}
		}
	}
	return nil
}

// refuse answers an input prepare refused before the run began: a pending interrupt on
// the thread gets a lone RUN_ERROR on the stream (and the flow's error, Conflict); any
// other error is returned as it is, for the envelope.
func refuse(err error, w func() wire, stream interface{ Done() error }) error {
	var pending *errInterruptPending
	if !errors.As(err, &pending) {
		return err
	}
	em := &emitter{ctx: context.Background(), sse: w()}
	em.emit(agui.RunError{Message: pending.Error(), Code: CodeInterruptPending})
	_ = stream.Done()
	return engine.Conflict("%s", pending.Error())
}
