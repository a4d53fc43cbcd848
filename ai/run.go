package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/google/uuid"
)

// RunOptions are the options of [Run] and [Stream].
type RunOptions struct {
	// ThreadID is sent in RUN_STARTED and RUN_FINISHED; the default is the input's
	// threadId, else the run id, which is unique (never a per-process counter).
	ThreadID string
}

// RunResult is the outcome of a finished run: what [Stream] returns to a streaming
// flow's handler (and a durable run of the flow records), and what [AgentRun.Result]
// holds ([agui.RunOutput]).
type RunResult = agui.RunOutput

// AgentRun is one run of an agent that [Run] ran to its end without streaming. Inside a
// durable flow every model call and tool call is a journal step, so a resumed run does
// not call the model or the tools again.
type AgentRun struct {
	fx         *engine.Fx
	agent      *AgentDef
	opts       RunOptions
	messages   []Message
	tools      []ToolSpec
	wireNames  map[string]string // model-facing tool name → flow id
	client     map[string]string // model-facing name → name of each client tool (RunAgentInput.tools)
	context    []ContextItem
	state      runState // the AG-UI state: the client's, then what tools set
	id         string
	threadID   string
	durable    *journal.Run
	log        *journal.LogWriter // opened by the run id's step in a durable streaming run
	follow     *resumePoint       // a resume: the response relays the parked run's log from here
	aguiClient bool               // the input named an AG-UI runId: message ids carry the run id
	live       bool               // a client reads the run's events as they happen

	finished   bool
	parked     bool
	aborted    bool
	result     RunResult
	interrupts []agui.Interrupt
	err        error

	// stoppedEarlier: an earlier execution ended the log as stopped before the journal
	// recorded the run's end; this one records it and does nothing else.
	stoppedEarlier bool
	// stops watches for a stop of a run whose log's stream did not exist yet when the
	// watch began (see subscribeStop); execute takes it over.
	stops *stopWatch
}

// HeaderOmitDone is the request header with which a caller asks an agent stream to leave
// out the final data: [DONE] frame, which stock AG-UI clients reject ([engine.HeaderOmitDone]).
const HeaderOmitDone = engine.HeaderOmitDone

// Run runs agent with input to its end and returns the run: input is a string, an
// [Input] ({message} or {messages}, or AG-UI's RunAgentInput), or any value encoding to
// one. Its error is the run's: [engine.ErrParked] (wrapped) when it parked for an
// approval, a [*RunError] when it failed. A run's events still reach its event log when
// the flow is durable; to stream them to the caller, use [Stream] in a streaming flow.
//
// An input that answers interrupts (RunAgentInput.resume) decides them and waits for the
// resumed run (which runs under its own durable run) to end: with its result when it
// finishes; when it parks again, the returned run's [AgentRun.Interrupts] are the new
// ones and the error an [*engine.AcceptedError] naming the parked run, so a flow returning
// it is answered 202 as a call whose run parked.
func Run(fx *engine.Fx, agent *AgentDef, input any, opts RunOptions) (*AgentRun, error) {
	r, err := prepare(fx, agent, input, opts, false)
	if err != nil {
		return nil, err
	}
	r.execute(fx.Context(), nil)
	switch {
	case r.parked:
		return r, fmt.Errorf("%w: agent %s waits for approval", engine.ErrParked, agent.name)
	case r.err == nil && len(r.interrupts) > 0:
		return r, r.parkedAgain()
	}
	return r, r.err
}

// parkedAgain is the answer of a resume whose relayed run parked again: that run waits,
// under its own id, while this flow's call (and its durable run) is over.
func (r *AgentRun) parkedAgain() error {
	run, _, err := agui.ParseInterruptID(r.interrupts[0].ID)
	if err != nil {
		return err
	}
	return &engine.AcceptedError{RunID: run}
}

// Stream runs agent with input (as [Run] takes it) in the handler of a streaming flow,
// writing the run's AG-UI events to out as they happen: one event per data: frame, the
// stored log's seq as its id: when the app has a journal, then data: [DONE]. It returns
// when the run is over:
//
//   - finished: its result (RUN_FINISHED carried it too);
//   - parked for an approval: an error wrapping [engine.ErrParked], after the RUN_FINISHED
//     that carries the interrupts — return it from the handler, and the durable run
//     waits for the decision;
//   - failed: a [*RunError], after the RUN_ERROR that said so.
//
// A failure before the first event (a bad input, an agent declared wrongly) returns an
// error with nothing sent, so the caller is answered with the envelope.
//
//	engine.BindStream(Ask, func(fx *engine.Fx, in ai.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
//		return ai.Stream(fx, assistant, in, out, ai.RunOptions{})
//	})
func Stream(fx *engine.Fx, agent *AgentDef, input any, out *engine.Stream[agui.Event], opts RunOptions) (RunResult, error) {
	if out == nil {
		return RunResult{}, errors.New("ai: Stream: nil stream")
	}
	r, err := prepare(fx, agent, input, opts, true)
	if err != nil {
		return RunResult{}, refuse(err, func() wire { return aguiWire{out.SSE()} }, out)
	}
	if err := r.streamTo(out.Live(), aguiWire{out.SSE()}, out); err != nil {
		return RunResult{}, err
	}
	return r.result, nil
}

// streamTo runs the prepared run in a streaming flow's handler, writing its events to w,
// ends the stream (its Done), and returns the error [Stream] returns; without one, Stream
// returns r.result. (Only the error: the stream opens under this frame and its caller's,
// and a result held in each would grow the stack the handler keeps while it waits.)
func (r *AgentRun) streamTo(live bool, w wire, stream interface{ Done() error }) error {
	r.live = live
	ctx := r.fx.Context()
	if r.agent.continueOnDisconnect && r.durable != nil {
		ctx = context.WithoutCancel(ctx) // the client may leave: the run goes on
	}
	r.execute(ctx, w)
	_ = stream.Done()
	switch {
	case r.follow != nil && r.err == nil && len(r.interrupts) > 0 && !live:
		// Nobody saw the interrupts: answer as a call whose run parks, naming that run.
		return r.parkedAgain()
	case r.follow != nil && r.err == nil:
		// A resume's own flow run ends here even when the run it relayed parked again:
		// that run waits under its own id, answered by the next resume.
		return nil
	case r.parked:
		return fmt.Errorf("%w: agent %s waits for approval", engine.ErrParked, r.agent.name)
	}
	return r.err
}

// prepare checks the agent and the input and begins the run: its id (a step, so a
// resumed run keeps its id and its log) and its tools.
func prepare(fx *engine.Fx, agent *AgentDef, input any, opts RunOptions, stream bool) (*AgentRun, error) {
	if err := agent.validate(); err != nil {
		return nil, err
	}
	in, err := conversation(input)
	if err != nil {
		return nil, err
	}
	if opts.ThreadID == "" {
		opts.ThreadID = in.threadID
	}
	if len(in.resume) > 0 {
		return resume(fx, agent, in.resume, opts)
	}
	if j := durable.JournalOf(fx.App()); j != nil && stream && opts.ThreadID != "" {
		// AG-UI 1.0: no new run beside one parked on interrupts; a replay was checked.
		if run := durable.RunOf(fx); run == nil || !run.Replaying() {
			if err := checkThread(fx.Context(), j, opts.ThreadID); err != nil {
				return nil, err
			}
		}
	}
	r := &AgentRun{fx: fx, agent: agent, opts: opts, messages: in.messages, durable: durable.RunOf(fx), wireNames: map[string]string{},
		context: in.context, state: runState{doc: in.state}, aguiClient: in.clientRunID != ""}
	for _, name := range agent.tools {
		def, ok := fx.App().Lookup(name)
		if !ok {
			return nil, fmt.Errorf("ai: agent %s: tool flow %s is not bound in this app", agent.name, name)
		}
		spec, err := toolSpec(fx.Context(), fx.App(), def)
		if err != nil {
			return nil, fmt.Errorf("ai: agent %s: %w", agent.name, err)
		}
		r.wireNames[spec.Name] = name
		r.tools = append(r.tools, spec)
	}
	r.addClientTools(in.tools)
	// A durable run that streams creates its log's stream in the same journal write as
	// the run id's step.
	if r.durable != nil && stream {
		// The stop watch of a new run begins before its stream exists, so it needs no
		// read of the stop state; a replayed step returns the stream it created before.
		id := newRunID()
		sw := subscribeStop(fx.Context(), durable.JournalOf(fx.App()), id)
		r.log, err = r.durable.CreateLogStep(fx.Context(), "agent-run:"+agent.name,
			func() journal.Stream { return r.stream(id) }, logOptions)
		if err == nil {
			r.id = r.log.StreamID()
		}
		if r.stops = sw; err != nil || r.id != id {
			r.dropStops()
		}
	} else {
		r.id, err = durable.Step(fx, "agent-run:"+agent.name, func(context.Context) (string, error) { return newRunID(), nil })
	}
	if err != nil {
		return nil, err
	}
	r.threadID = r.thread(r.id)
	return r, nil
}

// ID returns the agent run id: the storage key of its event log and the runId of its
// events (not the durable flow's run id).
func (r *AgentRun) ID() string { return r.id }

// Result returns the outcome of a finished run.
func (r *AgentRun) Result() RunResult { return r.result }

// Interrupts returns the approval interrupts of a parked run.
func (r *AgentRun) Interrupts() []agui.Interrupt { return r.interrupts }

// MarshalJSON encodes the run's result.
func (r *AgentRun) MarshalJSON() ([]byte, error) { return json.Marshal(r.result) }

// UnmarshalJSON decodes a run's result as [AgentRun.MarshalJSON] encodes it, so that a
// client calling a flow whose output is *AgentRun (clientx.Call) gets the run's outcome
// from [AgentRun.Result]. The decoded value is a record of a finished run on the server,
// not a run: its [AgentRun.ID] is "" and it has no interrupts (a run that parks answers
// 202 with no data instead).
func (r *AgentRun) UnmarshalJSON(b []byte) error {
	var res RunResult
	if err := json.Unmarshal(b, &res); err != nil {
		return err
	}
	*r = AgentRun{result: res, finished: true}
	return nil
}

// execute runs the loop once, with the event log when the app has a journal and the run
// streams, and with CUSTOM notices on the parent run when this is a subagent.
func (r *AgentRun) execute(ctx context.Context, sse wire) {
	if r.follow != nil {
		r.relay(ctx, sse)
		return
	}
	parent := emitterFrom(r.fx.Context())
	em := &emitter{ctx: ctx, sse: sse, parent: parent}
	if parent != nil {
		parent.custom(agui.CustomSubagentStarted, map[string]any{"agent": r.agent.name, "runId": r.id})
	}
	if j := durable.JournalOf(r.fx.App()); j != nil && sse != nil {
		if r.durable == nil {
			// The run's id is new and its stream not created yet: watch from now.
			r.stops = subscribeStop(ctx, j, r.id)
		}
		w, err := r.openLog(ctx, j)
		if err != nil {
			r.dropStops()
			r.err = err
			em.emit(agui.RunError{Message: "ai: opening the run's event log: " + err.Error()})
			return
		}
		em.log = w
		if w == nil && r.stoppedEarlier {
			r.dropStops()
			r.endStopped()
			return
		}
	}
	if w := em.log; w != nil {
		defer func() {
			// The run's last event normally ended the stream already (emitter.end).
			ctx := context.WithoutCancel(ctx)
			var err error
			if r.parked || errors.Is(r.err, journal.ErrLeaseLost) {
				err = w.Close(ctx) // the stream continues when the run resumes
			} else {
				err = w.Finish(ctx)
			}
			if err != nil && !errors.Is(err, journal.ErrLeaseLost) {
				r.fx.Logger().Error("ai: closing the run's event log", "run", r.id, "err", err)
			}
		}()
	}
	lctx := ctx
	if em.log != nil {
		var stop func()
		if r.stops != nil {
			lctx, stop = r.stops.attach(ctx)
			r.stops = nil
		} else {
			lctx, stop = watchStop(ctx, durable.JournalOf(r.fx.App()), r.id, configOf(r.fx.App()).FollowPoll)
		}
		defer stop()
	} else {
		r.dropStops()
	}
	r.loop(lctx, em)
	if parent != nil {
		switch {
		case r.err != nil:
			parent.custom(agui.CustomSubagentError, map[string]any{"agent": r.agent.name, "runId": r.id, "message": r.err.Error()})
		case r.finished:
			parent.custom(agui.CustomSubagentFinished, map[string]any{"agent": r.agent.name, "runId": r.id, "result": r.result})
		}
	}
}

// openLog returns the writer of the run's log: the one the run id's step opened (a
// durable run), or one on the stream it creates here (once; a resumed run finds it),
// continuing after its last row. When the last stored event of an earlier execution is
// not a run end, that execution died mid-run: the log gets a RUN_ERROR with code
// WorkerLost so it stays a valid AG-UI sequence before the resumed run starts. It returns
// nil when an earlier execution already ended the log (it died after storing the run's
// last event, before the journal recorded the run's end): the replay adds nothing to it.
func (r *AgentRun) openLog(ctx context.Context, j *journal.Journal) (*journal.LogWriter, error) {
	w := r.log
	if w == nil {
		var err error
		if w, err = j.CreateLog(ctx, r.stream(r.id), r.durable, logOptions); err != nil {
			return nil, err
		}
	}
	if st, _ := w.Opened(); st.FinishedAt != nil {
		if row, ok := w.LastRow(); ok && endedStopped(row.Event) {
			r.stoppedEarlier = true
		}
		return nil, w.Close(ctx)
	}
	if row, ok := w.LastRow(); ok {
		if !endsRun(row.Event) {
			ev, _ := json.Marshal(agui.RunError{Message: "ai: the worker running this agent stopped; the run resumes on another worker", Code: CodeWorkerLost})
			if _, err := w.Write(ctx, ev); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// stream is the record of the run's event log under id.
//
// The stream names the run's thread, so the write that creates it also records it as the
// thread's next run: what a thread's follower reads.
func (r *AgentRun) stream(id string) journal.Stream {
	st := journal.Stream{ID: id, Flow: r.fx.Flow().ID(), Tenant: r.fx.Tenant(), ThreadID: r.thread(id)}
	if p := r.fx.Principal(); p != nil {
		st.PrincipalID = p.ID
	}
	if r.durable != nil {
		st.RunID = r.durable.ID
	}
	return st
}

// dropStops ends the stop watch of a run that ends, or goes on without its log, before
// it watched.
func (r *AgentRun) dropStops() {
	if r.stops != nil {
		r.stops.unsubscribe()
		r.stops = nil
	}
}

// thread is the conversation thread of the run with the id: the one the input named, or
// a thread of its own with the run's id.
func (r *AgentRun) thread(id string) string {
	if r.opts.ThreadID != "" {
		return r.opts.ThreadID
	}
	return id
}

// endsRun reports whether a stored event ends its run; relays test every row they pass.
func endsRun(ev json.RawMessage) bool {
	t := agui.TypeOf(ev)
	return t == agui.TypeRunFinished || t == agui.TypeRunError
}

// wireName is the tool name the model sees: providers accept only [A-Za-z0-9_-], so the
// dot of a flow id becomes an underscore.
func wireName(flowID string) string { return strings.ReplaceAll(flowID, ".", "_") }

// flowOf maps a tool name the model used back to its flow id.
func (r *AgentRun) flowOf(wire string) string {
	if id, ok := r.wireNames[wire]; ok {
		return id
	}
	if name, ok := r.client[wire]; ok {
		return name
	}
	return wire
}

// newRunID makes an agent run id, which is also its event log's stream id: "run_" and a
// UUIDv7, time-ordered, so the log's rows go to the right edge of the stream indexes.
func newRunID() string { return "run_" + uuid.Must(uuid.NewV7()).String() }
