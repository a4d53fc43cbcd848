package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/internal/jsonx"
	"github.com/bbc28f59/engine/journal"
)

// turn is what one model call produced; in a durable run it is the recorded step result,
// so a replay rebuilds the conversation without calling the model.
type turn struct {
	Text      string     `json:"text,omitempty"`
	TextIDs   int        `json:"textIds,omitempty"` // message ids its text took (text can resume after a tool call)
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	Usage     Usage      `json:"usage"`
	Finish    string     `json:"finish,omitempty"`
	// Reasoning is the turn's reasoning messages, one message id each, kept with their
	// signatures so a resumed run sends them back as the provider wants.
	Reasoning []Reasoning `json:"reasoning,omitempty"`
}

// appendJSON encodes t as json.Marshal does, without reflection: a durable run records
// every turn, and the turn holds the model's whole text.
func (t turn) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	if t.Text != "" {
		dst = jsonx.AppendString(append(dst, `"text":`...), t.Text)
		dst = append(dst, ',')
	}
	if t.TextIDs != 0 {
		dst = strconv.AppendInt(append(dst, `"textIds":`...), int64(t.TextIDs), 10)
		dst = append(dst, ',')
	}
	if len(t.ToolCalls) > 0 {
		dst = append(dst, `"toolCalls":[`...)
		for i, c := range t.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonx.AppendString(append(dst, `{"ID":`...), c.ID)
			dst = jsonx.AppendString(append(dst, `,"Name":`...), c.Name)
			dst = jsonx.AppendString(append(dst, `,"Arguments":`...), c.Arguments)
			dst = append(dst, '}')
		}
		dst = append(dst, "],"...)
	}
	dst = appendInt64Ptr(append(dst, `"usage":{"InputTokens":`...), t.Usage.InputTokens)
	dst = appendInt64Ptr(append(dst, `,"OutputTokens":`...), t.Usage.OutputTokens)
	dst = appendInt64Ptr(append(dst, `,"ReasoningTokens":`...), t.Usage.ReasoningTokens)
	dst = append(dst, `,"Cost":`...)
	if t.Usage.Cost == nil {
		dst = append(dst, "null"...)
	} else {
		var err error
		if dst, err = jsonx.AppendFloat(dst, *t.Usage.Cost); err != nil {
			return dst, fmt.Errorf("json: unsupported value: %w", err)
		}
	}
	dst = append(dst, '}')
	if t.Finish != "" {
		dst = jsonx.AppendString(append(dst, `,"finish":`...), t.Finish)
	}
	if len(t.Reasoning) > 0 {
		b, err := json.Marshal(t.Reasoning)
		if err != nil {
			return dst, err
		}
		dst = append(append(dst, `,"reasoning":`...), b...)
	}
	return append(dst, '}'), nil
}

func appendInt64Ptr(dst []byte, n *int64) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	return strconv.AppendInt(dst, *n, 10)
}

// toolOutcome is what one tool call produced, recorded like a turn.
type toolOutcome struct {
	Content string          `json:"content"`
	Output  json.RawMessage `json:"output,omitempty"`
	Threw   bool            `json:"threw,omitempty"`
	State   json.RawMessage `json:"state,omitempty"` // the run's AG-UI state after the tool changed it
}

// stopError ends a run with RUN_ERROR instead of RUN_FINISHED.
type stopError struct {
	code, msg string
}

func (e *stopError) Error() string { return e.msg }

// Codes of RUN_ERROR the loop produces.
const (
	CodeAgentLoopHalt = "AgentLoopHalt"
	CodeAbortError    = "AbortError"
	CodeProviderError = "ProviderError"
	CodeWorkerLost    = "WorkerLost"
	// CodeReplyTooLarge ends a run whose model reply passed the model's [MaxReplyBytes].
	CodeReplyTooLarge = "ReplyTooLarge"
)

// loop runs the agent until it stops, parks or fails, emitting every event. It fills
// r.result, r.parked or r.err.
func (r *AgentRun) loop(ctx context.Context, em *emitter) {
	st := &loopState{r: r, em: em, ctx: ctx, seen: map[string]bool{}}
	if r.aguiClient {
		st.ids.prefix = r.id + ":"
	}
	if st.obs = observerFrom(ctx); st.obs != nil {
		var end func(RunEnd)
		st.ctx, end = st.obs.AgentRun(ctx, RunInfo{Agent: r.agent.name, RunID: r.id, ThreadID: r.threadID,
			Model: r.agent.model.ModelID(), Provider: r.agent.model.Provider().Name(),
			Resumed: r.durable != nil && r.durable.Replaying()})
		defer func() { end(st.runEnd()) }()
	}
	st.run()
}

// runEnd describes the end of the execution to the run's observer.
func (s *loopState) runEnd() RunEnd {
	e := RunEnd{Parked: s.r.parked, Err: s.r.err, Usage: Usage{InputTokens: s.in, OutputTokens: s.out, ReasoningTokens: s.rtokens}, Cost: s.cost}
	if s.r.finished {
		e.StopReason = string(s.r.result.StopReason)
	}
	return e
}

type loopState struct {
	r        *AgentRun
	em       *emitter
	ctx      context.Context
	obs      Observer // nil when nobody observes the run
	ids      ids
	step     int
	stepOpen bool
	calls    int // tool calls made, against maxSteps
	cost     float64
	in, out  *int64
	rtokens  *int64 // reasoning tokens, part of out
	output   json.RawMessage
	text     string
	history  []Message
	seen     map[string]bool // tool call ids used in this run: each call gets its own
	pending  []string        // client tool calls left for the client to run
	outcome  *agui.Outcome   // RUN_FINISHED's outcome when not success (a stop)

	outputRetries int // final answers of a typed output asked again
}

func (s *loopState) run() {
	r := s.r
	s.em.emit(agui.RunStarted{ThreadID: r.threadID, RunID: r.id})
	if (r.durable == nil || !r.durable.Replaying()) && !r.state.empty() {
		// The state the client sent, once: a resumed run's log already has it.
		s.em.emit(agui.StateSnapshot{Snapshot: r.state.get()})
	}
	s.history = append(s.history, r.messages...)
	for _, m := range r.messages {
		for _, c := range m.ToolCalls {
			s.seen[c.ID] = true // a new call never takes the id of one in the history
		}
	}
	for {
		if err := s.em.failed(); err != nil {
			r.err = err
			return
		}
		if stopped(s.ctx) {
			s.stop()
			return
		}
		s.step++
		stepName := "step-" + strconv.Itoa(s.step)
		live := r.durable == nil || !r.durable.Replaying()
		if live {
			s.openStep(stepName)
		}
		t, err := s.modelCall(stepName)
		if err != nil {
			s.fail(err)
			return
		}
		s.remember(t)
		if c, ok := r.agent.model.Cost(t.Usage); ok {
			s.cost += c
		}
		s.addUsage(t.Usage)
		if t.Text != "" {
			s.text = t.Text
		}
		if r.agent.budget > 0 && s.cost >= r.agent.budget {
			s.closeStep(stepName)
			s.finish(agui.StopBudget)
			return
		}
		if len(t.ToolCalls) == 0 && r.agent.output != nil {
			s.closeStep(stepName)
			value, again, err := s.finalOutput(t.Text)
			if err != nil {
				s.fail(err)
				return
			}
			if again {
				continue
			}
			s.output = value
			s.finish(agui.StopCompleted)
			return
		}
		if len(t.ToolCalls) == 0 {
			s.closeStep(stepName)
			if s.output == nil {
				s.output = jsonx.AppendString(make([]byte, 0, len(t.Text)+len(t.Text)/8+2), t.Text)
			}
			s.finish(agui.StopCompleted)
			return
		}
		stop, err := s.toolCalls(stepName, t.ToolCalls)
		if err != nil {
			s.fail(err)
			return
		}
		if r.parked {
			return
		}
		s.closeStep(stepName)
		if stop != "" {
			s.finish(stop)
			return
		}
	}
}

// remember adds the model's turn to the conversation. It is kept out of run, under whose
// frame the goroutine waits on the model (see modelTurn).
//
//go:noinline
func (s *loopState) remember(t *turn) {
	s.history = append(s.history, Message{Role: RoleAssistant, Content: t.Text, ToolCalls: sendable(t.ToolCalls), Reasoning: t.Reasoning})
}

// openStep emits STEP_STARTED once per step and segment: a resumed run reopens the step
// it parked in before its first live event.
func (s *loopState) openStep(name string) {
	if !s.stepOpen {
		s.em.emit(agui.StepStarted{StepName: name})
		s.stepOpen = true
	}
}

func (s *loopState) closeStep(name string) {
	if s.stepOpen {
		s.em.emit(agui.StepFinished{StepName: name})
		s.stepOpen = false
	}
}

func (s *loopState) addUsage(u Usage) {
	if u.InputTokens != nil {
		s.in = addInt(s.in, *u.InputTokens)
	}
	if u.OutputTokens != nil {
		s.out = addInt(s.out, *u.OutputTokens)
	}
	if u.ReasoningTokens != nil {
		s.rtokens = addInt(s.rtokens, *u.ReasoningTokens)
	}
}

func addInt(p *int64, n int64) *int64 {
	v := n
	if p != nil {
		v += *p
	}
	return &v
}

// modelCall asks the model for the next turn, streaming its events live; in a durable run
// the turn is a journal step, so a replay returns it without calling the model. The turn
// is returned by pointer, so no frame the model wait sits under holds a copy of it.
func (s *loopState) modelCall(stepName string) (*turn, error) {
	r := s.r
	m := s.newModelTurn(stepName)
	var raw json.RawMessage
	var err error
	if r.durable != nil {
		raw, err = r.durable.Step(s.ctx, "model:"+r.agent.name+":"+stepName, m.call)
	} else {
		raw, err = m.call(s.ctx)
	}
	if err != nil {
		return nil, err
	}
	if m.called {
		return &m.live, nil
	}
	return s.replayTurn(raw)
}

// The helpers of modelCall below keep its frame, and the frames under it, small: the
// goroutine waits on the model under them, and its stack stays as small as a plain
// stream's only if the deepest it ever gets stays small.

// modelTurn is one model call: its request and, once the model was called, the turn it
// streamed. It lives on the heap, not in modelCall's frame.
type modelTurn struct {
	s        *loopState
	stepName string
	req      *Request
	called   bool
	live     turn
}

// newModelTurn prepares the run's next model call.
//
//go:noinline
func (s *loopState) newModelTurn(stepName string) *modelTurn {
	return &modelTurn{s: s, stepName: stepName, req: s.request()}
}

// call asks the model, streaming its events live, and returns the turn's encoding when a
// journal records it.
//
//go:noinline
func (m *modelTurn) call(ctx context.Context) (json.RawMessage, error) {
	m.called = true
	if m.s.obs != nil {
		return m.observed(ctx)
	}
	if err := m.s.streamTurn(ctx, m.stepName, m.req, &m.live); err != nil {
		return nil, err
	}
	return m.encode()
}

// observed is call under the run's observer ([WithObserver]), which sees the call begin
// and end.
//
//go:noinline
func (m *modelTurn) observed(ctx context.Context) (json.RawMessage, error) {
	s, r := m.s, m.s.r
	ctx, end := s.obs.ModelCall(ctx, ModelCallInfo{Agent: r.agent.name, Provider: r.agent.model.Provider().Name(), Step: s.step, Request: m.req})
	err := s.streamTurn(ctx, m.stepName, m.req, &m.live)
	e := ModelCallEnd{Text: m.live.Text, ToolCalls: m.live.ToolCalls, FinishReason: m.live.Finish, Usage: m.live.Usage, Err: err}
	e.Cost, _ = r.agent.model.Cost(m.live.Usage)
	end(e)
	if err != nil {
		return nil, err
	}
	return m.encode()
}

// encode is the turn's encoding when a journal records it.
func (m *modelTurn) encode() (json.RawMessage, error) {
	if m.s.r.durable == nil {
		return nil, nil // nothing records it: no need to encode
	}
	return m.live.record()
}

// request is the request of the run's next model call.
func (s *loopState) request() *Request {
	r := s.r
	req := &Request{Model: r.agent.model.ModelID(), System: r.systemPrompt(), Messages: s.history, Tools: r.tools,
		Reasoning: r.agent.model.reasoning}
	if st := r.agent.output; st != nil {
		st.apply(req, r.agent.model.Provider())
	}
	return req
}

// record encodes the turn as its step's result.
//
//go:noinline
func (t *turn) record() (json.RawMessage, error) {
	return t.appendJSON(make([]byte, 0, len(t.Text)+len(t.Text)/8+128))
}

// replayTurn decodes a recorded turn and takes the message and tool call ids it used.
//
//go:noinline
func (s *loopState) replayTurn(raw json.RawMessage) (*turn, error) {
	t := new(turn)
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("ai: decoding recorded turn: %w", err)
	}
	// A replayed turn keeps the numbering of message ids and the tool call ids it used.
	n := t.TextIDs
	if n == 0 && t.Text != "" {
		n = 1
	}
	n += len(t.Reasoning) // one message id each
	for range n {
		s.ids.next()
	}
	for _, c := range t.ToolCalls {
		s.seen[c.ID] = true
	}
	return t, nil
}

// sendable returns the calls as they can be sent back to a provider: arguments that are
// not a JSON object become {} (providers such as Anthropic refuse anything else). The
// model still learns what went wrong: the events carried its raw text and the tool's
// result carries the ValidationError.
func sendable(calls []ToolCall) []ToolCall {
	out := calls
	for i, c := range calls {
		if isJSONObject(c.Arguments) {
			continue
		}
		if &out[0] == &calls[0] {
			out = append([]ToolCall(nil), calls...)
		}
		out[i].Arguments = "{}"
	}
	return out
}

func isJSONObject(s string) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &obj) == nil && obj != nil
}

// toolCalls runs the tool calls of one step. Calls that need approval are parked first;
// while any is undecided the run parks and no tool of the step runs. It returns a stop
// reason when the loop must stop after this step.
func (s *loopState) toolCalls(stepName string, calls []ToolCall) (agui.StopReason, error) {
	r := s.r
	// Client tools are the client's to run: the run ends after this step's own tools so
	// the client can answer them in its next run. No gate or approval applies to them.
	server := make([]ToolCall, 0, len(calls))
	for _, c := range calls {
		if r.isClientTool(c.Name) {
			s.pending = append(s.pending, c.ID)
			continue
		}
		if !r.agent.hasTool(r.flowOf(c.Name)) {
			return "", &stopError{code: CodeAgentLoopHalt,
				msg: fmt.Sprintf("ai: agent %s called tool %q, which is not in its tools; add the flow to the agent's tools or stop offering it", r.agent.name, r.flowOf(c.Name))}
		}
		server = append(server, c)
	}
	// Only the calls maxSteps lets run are asked about: nobody approves a call that is
	// dropped anyway.
	runnable := server[:min(len(server), max(r.agent.maxSteps-s.calls, 0))]
	decisions, err := s.approvals(stepName, runnable)
	if err != nil || r.parked {
		return "", err
	}
	for _, c := range runnable {
		s.calls++
		out, err := s.runTool(stepName, c, decisions[c.ID])
		if err != nil {
			return "", err
		}
		s.history = append(s.history, Message{Role: RoleTool, Content: out.Content, ToolCallID: c.ID})
		if out.Threw {
			return agui.StopError, nil
		}
		if out.Output != nil {
			s.output = out.Output
		}
	}
	if len(runnable) < len(server) {
		return agui.StopMaxSteps, nil
	}
	if len(s.pending) > 0 {
		return agui.StopCompleted, nil
	}
	if s.calls >= r.agent.maxSteps {
		return agui.StopMaxSteps, nil
	}
	return "", nil
}

// runTool runs one tool call as its flow with the run's principal, so the flow's gate
// applies. In a durable run the outcome is a journal step. The TOOL_CALL_RESULT is
// emitted inside the step, so the log rows it queues are stored in the step's own write:
// a run taken over after the tool ran never lacks its result, and a replayed call emits
// nothing.
func (s *loopState) runTool(stepName string, c ToolCall, d *journal.Decision) (toolOutcome, error) {
	r := s.r
	msgID := s.ids.next()
	call := func(ctx context.Context) (json.RawMessage, error) {
		ts := &toolState{st: &r.state, em: s.em, open: func() { s.openStep(stepName) }}
		var end func(ToolCallEnd)
		if s.obs != nil {
			ctx, end = s.obs.ToolCall(ctx, ToolCallInfo{Agent: r.agent.name, Tool: r.flowOf(c.Name), CallID: c.ID, Arguments: c.Arguments})
		}
		out, err := s.invoke(withToolState(ctx, ts), c, d)
		if end != nil {
			end(ToolCallEnd{Content: out.Content, Failed: out.Threw || out.Output == nil, Err: err})
		}
		if err != nil {
			return nil, err
		}
		if ts.wasChanged() {
			out.State = r.state.get()
		}
		s.openStep(stepName)
		s.em.emit(agui.ToolCallResult{MessageID: msgID, ToolCallID: c.ID, Content: out.Content, Role: agui.RoleTool})
		return json.Marshal(out)
	}
	var raw json.RawMessage
	var err error
	if r.durable != nil {
		raw, err = r.durable.Step(s.ctx, "tool:"+r.flowOf(c.Name)+":"+c.ID, call)
	} else {
		raw, err = call(s.ctx)
	}
	if err != nil {
		return toolOutcome{}, err
	}
	var out toolOutcome
	if err := json.Unmarshal(raw, &out); err != nil {
		return toolOutcome{}, fmt.Errorf("ai: decoding recorded tool result: %w", err)
	}
	if out.State != nil {
		r.state.set(out.State) // a replayed call: the state it left
	}
	return out, nil
}

// invoke calls the tool's flow. Gate denials, validation problems, declared error codes
// and approval denials are fed back to the model as the tool's result; an internal
// error means the tool threw and the run stops with stop reason error.
func (s *loopState) invoke(ctx context.Context, c ToolCall, d *journal.Decision) (toolOutcome, error) {
	args := json.RawMessage(c.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if d != nil {
		var p decisionPayload
		_ = json.Unmarshal(d.Payload, &p)
		switch d.Kind {
		case journal.DecisionApprove:
			if len(p.Args) > 0 {
				args = p.Args
			}
		default:
			reason := p.Reason
			if d.Kind == journal.DecisionTimeout || reason == "" && d.Kind == journal.DecisionTimeout {
				reason = "timeout"
			}
			if reason == "" {
				reason = "denied"
			}
			return fedBack("Denied", map[string]any{"reason": reason}), nil
		}
	}
	app := s.r.fx.App()
	out, err := app.Invoke(withEmitter(ctx, s.em), s.r.flowOf(c.Name), s.r.fx.Principal(), args)
	if err == nil {
		return toolOutcome{Content: string(out), Output: out}, nil
	}
	if ctx.Err() != nil {
		return toolOutcome{}, ctx.Err()
	}
	e := engine.AsError(err)
	if e == nil || e.Code == engine.CodeInternal {
		return toolOutcome{Content: errorContent(engine.CodeInternal, map[string]any{"message": "the tool failed"}), Threw: true}, nil
	}
	return fedBack(e.Code, e.Data), nil
}

func fedBack(code string, data any) toolOutcome {
	return toolOutcome{Content: errorContent(code, data)}
}

func errorContent(code string, data any) string {
	b, err := json.Marshal(map[string]any{"error": map[string]any{"code": code, "data": data}})
	if err != nil {
		return `{"error":{"code":"` + code + `"}}`
	}
	return string(b)
}

// finish emits RUN_FINISHED with the result and usage.
func (s *loopState) finish(reason agui.StopReason) {
	r := s.r
	res := &agui.RunResult{Cost: s.cost, StopReason: reason, Output: s.output}
	ev := agui.RunFinished{ThreadID: r.threadID, RunID: r.id, Result: res}
	switch {
	case s.outcome != nil:
		ev.Outcome = s.outcome
	case len(s.pending) > 0:
		ev.Outcome = &agui.Outcome{Type: agui.OutcomeSuccess, PendingToolCallIDs: s.pending}
	}
	if s.in != nil || s.out != nil || s.rtokens != nil {
		ev.Usage = []agui.Usage{{InputTokens: s.in, OutputTokens: s.out, ReasoningTokens: s.rtokens}}
	}
	s.em.end(ev)
	r.result = RunResult{Text: s.text, Output: s.output, Cost: s.cost, StopReason: string(reason)}
	if len(ev.Usage) == 1 {
		r.result.Usage = &ev.Usage[0]
	}
	r.finished = true
}

// fail ends the run with RUN_ERROR: an abort, a halted loop, a provider failure.
func (s *loopState) fail(err error) {
	r := s.r
	var stop *stopError
	switch {
	case errors.Is(err, journal.ErrLeaseLost):
		r.err = err // another instance owns the run; it writes the log from here
		return
	case stopped(s.ctx) || errors.Is(err, errStopped) || errors.Is(err, journal.ErrStopped):
		s.stop()
		return
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		stop = &stopError{code: CodeAbortError, msg: "ai: the client disconnected; the model call was aborted"}
		r.aborted = true
	case errors.As(err, &stop):
	default:
		var se *journal.StepError
		if errors.As(err, &se) {
			stop = &stopError{code: CodeProviderError, msg: se.Message}
		} else {
			stop = &stopError{msg: err.Error()}
		}
	}
	s.em.end(agui.RunError{Message: stop.msg, Code: stop.code})
	r.err = &RunError{Code: stop.code, Message: stop.msg}
}

// RunError is how a run that failed (RUN_ERROR) is reported to Go callers.
type RunError struct {
	Code    string
	Message string
}

func (e *RunError) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return e.Code + ": " + e.Message
}
