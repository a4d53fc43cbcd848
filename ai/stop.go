package ai

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
)

// StopPath is the stop route's trigger.
const StopPath = "/agent/runs/:runId/stop"

// StopIn is the input of POST /agent/runs/:runId/stop: the agent run id, as in
// RUN_STARTED.runId.
type StopIn struct {
	RunID string `json:"runId"`
}

// StopFlow is the built-in stop route. It is public so the request can arrive; who may
// stop a run is who may follow it.
var StopFlow = engine.Define[StopIn, Decided](agentUnit, "stop", engine.POST(StopPath), engine.Public(),
	engine.Describe("Stop a running or parked agent run from any instance: it ends with RUN_FINISHED, outcome cancelled."))

// errStopped is the cause of a run's context when a stop of the run was requested.
var errStopped = errors.New("ai: the run was stopped")

// stopped reports whether ctx was cancelled because the run was stopped.
func stopped(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errStopped) }

// Stop stops the agent run id (RUN_STARTED.runId) as the caller of fx, exactly like the
// stop route: the request is stored in the journal and the instance running the run,
// whichever it is, cancels the model call and the tool calls in flight; the run ends
// with RUN_FINISHED, outcome cancelled and stop reason cancelled, the text produced so
// far kept in its log. A parked run is cancelled: its pending approvals are answered
// Conflict. Errors: NotFound for an unknown run or one the caller may not follow,
// Conflict for a finished one.
func Stop(fx *engine.Fx, id string) error {
	ctx, app := fx.Context(), fx.App()
	if id == "" {
		return engine.Invalid(engine.ValidationIssue{Path: "runId", Message: "required"})
	}
	j := durable.JournalOf(app)
	if j == nil {
		return engine.NotFound("no run %s", id)
	}
	st, err := j.GetStream(ctx, id)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		return err
	}
	if err := mayFollow(ctx, app, fx.Principal(), st, err == nil, engine.NotFound("no run %s", id)); err != nil {
		return err
	}
	switch err := j.RequestStop(ctx, id); {
	case errors.Is(err, journal.ErrRunFinished):
		return engine.Conflict("run %s has already finished", id)
	case errors.Is(err, journal.ErrNotFound):
		return engine.NotFound("no run %s", id)
	default:
		return err
	}
}

// bindStop binds the stop route.
func bindStop() engine.Option {
	return engine.Bind(StopFlow, func(fx *engine.Fx, in StopIn) (Decided, error) {
		if err := Stop(fx, in.RunID); err != nil {
			return Decided{}, err
		}
		return Decided{OK: true}, nil
	})
}

// watchStop returns ctx cancelled with cause errStopped as soon as a stop of the run id
// is requested, on any instance: the journal wakes the subscription (a Postgres
// notification across processes), and a driver shared by processes without wake-ups is
// polled every poll. The request is read once at the start too, so an execution that
// begins after the stop (a resumed or taken-over run) stops at once; a run whose watch
// began before its stream existed ([subscribeStop]) needs no such read. stop ends the
// watch.
//
// Unless it polls, the watch holds no goroutine while the run goes on: each wake-up, and
// the first read when it does I/O, run on a short-lived one, so an idle run costs its
// handler's goroutine only.
func watchStop(ctx context.Context, j *journal.Journal, id string, poll time.Duration) (_ context.Context, stop func()) {
	if sw := subscribeStop(ctx, j, id); sw != nil {
		if j.Driver().Capabilities().Has(journal.CapBlockingIO) {
			go sw.check()
		} else {
			sw.check() // a read in memory: cheaper here than on a goroutine of its own
		}
		return sw.attach(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	caps := j.Driver().Capabilities()
	polled := caps.Has(journal.CapMultiProcess) && !caps.Has(journal.CapCrossProcessWakeups)
	wake, unsubscribe := j.SubscribeStop(id)
	done := make(chan struct{})
	var ticker *time.Ticker
	var tick <-chan time.Time
	if polled {
		ticker = time.NewTicker(poll)
		tick = ticker.C
	}
	go func() {
		defer unsubscribe()
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			if ok, _ := j.StopRequested(ctx, id); ok {
				cancel(errStopped)
				return
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-wake:
			case <-tick:
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
	}
}

// stop ends a run that was stopped: the step it was in ends, and RUN_FINISHED carries
// the outcome cancelled and the stop reason cancelled. A durable run records the end
// as cancelled.
func (s *loopState) stop() {
	if s.stepOpen {
		s.closeStep("step-" + strconv.Itoa(s.step))
	}
	s.outcome = &agui.Outcome{Type: agui.OutcomeCancelled}
	s.finish(agui.StopCancelled)
	if s.r.durable != nil {
		s.r.durable.MarkStopped()
	}
}

// endedStopped reports whether a stored event is the RUN_FINISHED of a stopped run.
func endedStopped(ev json.RawMessage) bool {
	if agui.TypeOf(ev) != agui.TypeRunFinished {
		return false
	}
	var fin struct {
		Outcome *agui.Outcome `json:"outcome"`
	}
	return json.Unmarshal(ev, &fin) == nil && fin.Outcome != nil && fin.Outcome.Type == agui.OutcomeCancelled
}

// endStopped ends an execution whose log an earlier one ended as stopped: the run's
// outcome is a stopped one, and a durable run records it as cancelled.
func (r *AgentRun) endStopped() {
	r.result = RunResult{StopReason: string(agui.StopCancelled)}
	r.finished = true
	if r.durable != nil {
		r.durable.MarkStopped()
	}
}

// stopWatch is a run's subscription to its stop requests, made by [subscribeStop]
// before the run has a context to cancel: a request seen before [stopWatch.attach] is
// kept for it.
type stopWatch struct {
	j           *journal.Journal
	ctx         context.Context // for the reads of the request
	id          string
	unsubscribe func()

	mu        sync.Mutex
	requested bool
	cancel    context.CancelCauseFunc
}

// subscribeStop subscribes to the stop requests of the stream id, each wake-up read on a
// short-lived goroutine. Made before the stream is created, it needs no first read: a stop
// can be asked only of a stream that exists, so every request wakes it. It returns nil
// when the driver polls or cannot call back ([watchStop] then watches).
func subscribeStop(ctx context.Context, j *journal.Journal, id string) *stopWatch {
	caps := j.Driver().Capabilities()
	if caps.Has(journal.CapMultiProcess) && !caps.Has(journal.CapCrossProcessWakeups) {
		return nil
	}
	sw := &stopWatch{j: j, ctx: context.WithoutCancel(ctx), id: id}
	unsubscribe, ok := j.SubscribeStopFunc(id, sw.check)
	if !ok {
		return nil
	}
	sw.unsubscribe = unsubscribe
	return sw
}

// check reads whether a stop was requested and, if so, cancels the attached context (or
// keeps the request for attach).
func (sw *stopWatch) check() {
	if ok, _ := sw.j.StopRequested(sw.ctx, sw.id); !ok {
		return
	}
	sw.mu.Lock()
	sw.requested = true
	cancel := sw.cancel
	sw.mu.Unlock()
	if cancel != nil {
		cancel(errStopped)
	}
}

// attach returns ctx cancelled with cause errStopped once a stop is requested (at once if
// one was), and the function that ends the watch.
func (sw *stopWatch) attach(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	sw.mu.Lock()
	sw.cancel = cancel
	requested := sw.requested
	sw.mu.Unlock()
	if requested {
		cancel(errStopped)
	}
	return ctx, func() {
		sw.unsubscribe()
		cancel(nil)
	}
}
