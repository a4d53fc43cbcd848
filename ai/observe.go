package ai

import "context"

// Observer sees the work of the agent runs whose context carries it ([WithObserver]): a
// tracer makes spans of it, a meter counts tokens. Each method is called as the work
// begins and returns the context the work goes on in (the observer's span in it, so the
// work nested inside, a subagent under its tool, is the span's child) and the function
// to call once it ends. A durable run replaying its journal after a park or a crash
// reports only what it does live: a model turn or a tool call read back from the journal
// is not reported again.
type Observer interface {
	// AgentRun is called when an execution of a run begins (the first, or a resumption).
	AgentRun(ctx context.Context, run RunInfo) (context.Context, func(RunEnd))
	// ModelCall is called before each model call the run makes.
	ModelCall(ctx context.Context, call ModelCallInfo) (context.Context, func(ModelCallEnd))
	// ToolCall is called before each tool call the run executes.
	ToolCall(ctx context.Context, call ToolCallInfo) (context.Context, func(ToolCallEnd))
}

// RunInfo describes an agent run as an execution of it begins.
type RunInfo struct {
	Agent    string // the agent's name
	RunID    string
	ThreadID string
	Model    string // the model's id at its provider
	Provider string // the provider's name
	// Resumed is true for an execution that continues a run from its journal (after a
	// decision, a signal or a crash).
	Resumed bool
}

// RunEnd describes how an execution of an agent run ended.
type RunEnd struct {
	// StopReason is the run's stop reason when it finished, "" when it parked or failed.
	StopReason string
	Parked     bool  // the run waits for a decision
	Err        error // the run failed
	Usage      Usage // the tokens of the execution's model calls
	Cost       float64
}

// ModelCallInfo describes a model call before it is made.
type ModelCallInfo struct {
	Agent    string
	Provider string
	Step     int // the run's step, from 1
	// Request is the request sent: its System and Messages are the prompt, which an
	// observer records only when its application opted in.
	Request *Request
}

// ModelCallEnd describes a model call's reply.
type ModelCallEnd struct {
	Text         string     // the completion's text
	ToolCalls    []ToolCall // the tool calls the model asked for
	FinishReason string
	Usage        Usage
	Cost         float64 // the spend the model's prices give (0 without prices)
	Err          error
}

// ToolCallInfo describes a tool call before it runs.
type ToolCallInfo struct {
	Agent     string
	Tool      string // the tool's flow id
	CallID    string
	Arguments string // the arguments as the model wrote them (JSON)
}

// ToolCallEnd describes a tool call's result.
type ToolCallEnd struct {
	Content string // the result as fed back to the model
	Failed  bool   // the tool threw or was denied
	Err     error
}

type observerKey struct{}

// WithObserver returns ctx carrying o: the agent runs started in it report to o.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// observerFrom returns the observer ctx carries, or nil.
func observerFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}
