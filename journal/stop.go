package journal

import (
	"context"
	"errors"
	"net/url"
	"time"
)

// ErrStopped is what a wait ([Run.WaitSignal], [Run.Receive]) of a run that was stopped
// returns: [Journal.RequestStop] cancelled its park.
var ErrStopped = errors.New("journal: the run was stopped")

// StopTopic is the wake-up key of stop requests for the stream id: [Journal.SubscribeStop]
// listens to it.
func StopTopic(streamID string) string { return "stop/" + url.PathEscape(streamID) }

// RequestStop asks the run that writes the stream streamID (an agent run's event log) to
// stop, from any instance: the request is stored, the pending parks of the stream's
// durable run are cancelled (a decision that comes later is [ErrConflict]), and the
// instance holding the run is woken ([Journal.SubscribeStop]). A parked run it makes
// runnable is claimed and resumed here, so it ends as stopped. Errors: [ErrNotFound] for
// an unknown stream, [ErrRunFinished] for a finished one.
func (j *Journal) RequestStop(ctx context.Context, streamID string) error {
	if err := j.checkOpen(); err != nil {
		return err
	}
	if unstorable(streamID) {
		return ErrNotFound
	}
	st, err := j.d.GetStream(ctx, streamID)
	if err != nil {
		return err
	}
	res, err := j.d.RequestStop(ctx, streamID, j.now())
	if err != nil {
		return err
	}
	if res.Runnable && st.RunID != "" {
		j.tryResume(ctx, st.RunID)
	}
	return nil
}

// StopRequested reports whether a stop of the stream was requested.
func (j *Journal) StopRequested(ctx context.Context, streamID string) (bool, error) {
	if unstorable(streamID) {
		return false, nil
	}
	at, err := j.d.StopRequested(ctx, streamID)
	return !at.IsZero(), err
}

// SubscribeStop returns a channel woken (coalesced) after a stop of the stream was
// requested, on this instance or, with [CapCrossProcessWakeups], on any; and a function
// that ends the subscription. A wake-up may also come without a request (a backstop
// poll): check with [Journal.StopRequested].
func (j *Journal) SubscribeStop(streamID string) (<-chan struct{}, func()) {
	return j.d.Subscribe(StopTopic(streamID))
}

// SubscribeStopFunc is [Journal.SubscribeStop] without a goroutine waiting on a channel:
// each wake-up runs fn on a new goroutine (check with [Journal.StopRequested]) until
// the returned function is called. ok is false when the driver cannot call back; use
// SubscribeStop then.
func (j *Journal) SubscribeStopFunc(streamID string, fn func()) (unsubscribe func(), ok bool) {
	d := j.d
	if o, isOff := d.(offloaded); isOff {
		d = o.d
	}
	s, ok := d.(interface {
		SubscribeFunc(topic string, fn func()) func()
	})
	if !ok {
		return nil, false
	}
	return s.SubscribeFunc(StopTopic(streamID), fn), true
}

// MarkStopped makes the run's completion ([Run.Complete]) store [StatusCancelled]: the
// run ended because it was stopped.
func (r *Run) MarkStopped() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// RequestStop implements Driver.
func (o offloaded) RequestStop(ctx context.Context, streamID string, now time.Time) (DecideResult, error) {
	return off(func() (DecideResult, error) { return o.d.RequestStop(ctx, streamID, now) })
}

// StopRequested implements Driver.
func (o offloaded) StopRequested(ctx context.Context, streamID string) (time.Time, error) {
	return off(func() (time.Time, error) { return o.d.StopRequested(ctx, streamID) })
}
