package ai

import (
	"errors"
	"fmt"

	"github.com/bbc28f59/engine"
)

// DefaultMaxSteps is the default number of tool calls an agent run may make.
const DefaultMaxSteps = 6

// AgentDef is an agent: a model, the flows it may call as tools, and its limits. Declare
// it once with [Agent] and run it with [Run].
type AgentDef struct {
	name     string
	model    *ModelDef
	tools    []string
	maxSteps int
	system   string
	budget   float64

	output    *structured // a typed final output ([Output])
	outputErr error

	continueOnDisconnect bool // a durable run goes on when its client hangs up
}

// AgentOption configures an agent.
type AgentOption func(*AgentDef)

// System sets the agent's system prompt.
func System(prompt string) AgentOption { return func(a *AgentDef) { a.system = prompt } }

// ContinueOnDisconnect lets a durable run of the agent go on when the client that
// streams it hangs up, instead of being aborted (the default, RUN_ERROR AbortError): the
// run writes its log to the end, so the person reloads the page and follows the run, or
// its thread, to the answer. A stop still ends it. A run that is not durable is aborted
// as before.
func ContinueOnDisconnect() AgentOption { return func(a *AgentDef) { a.continueOnDisconnect = true } }

// Budget sets maxCostPerRun: when the run's spend reaches it the loop stops with stop
// reason budget; nothing is thrown.
func Budget(maxCostPerRun float64) AgentOption { return func(a *AgentDef) { a.budget = maxCostPerRun } }

// ToolFlow is a flow declaration an agent may call as a tool: an [*engine.Flow] (or an
// [*engine.StreamFlow], whose result is the tool's output).
type ToolFlow interface {
	Def() *engine.FlowDef
}

// ToolSet is the flows an agent may call as tools: [Tools] of flow declarations, or
// [ToolNames] of flow ids.
type ToolSet struct{ ids []string }

// Tools is the set of the given flows, by their declarations, so a tool that does not
// exist does not compile; [Register] checks that each is bound when the app is built.
func Tools(flows ...ToolFlow) ToolSet {
	ids := make([]string, 0, len(flows))
	for _, f := range flows {
		if f == nil || f.Def() == nil {
			ids = append(ids, "")
			continue
		}
		ids = append(ids, f.Def().ID())
	}
	return ToolSet{ids: ids}
}

// ToolNames is the set of the flows with the given ids ("tools.weather"), for agents
// built from configuration. Prefer [Tools].
func ToolNames(ids ...string) ToolSet { return ToolSet{ids: append([]string(nil), ids...)} }

// Agent declares an agent named name on model, calling tools. maxSteps counts tool
// calls, not model calls; zero means [DefaultMaxSteps].
//
//	assistant := ai.Agent("assistant", model, ai.Tools(Weather, Transfer), 6)
func Agent(name string, model *ModelDef, tools ToolSet, maxSteps int, opts ...AgentOption) *AgentDef {
	a := &AgentDef{name: name, model: model, tools: append([]string(nil), tools.ids...), maxSteps: maxSteps}
	if a.maxSteps == 0 {
		a.maxSteps = DefaultMaxSteps
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Name returns the agent's name.
func (a *AgentDef) Name() string { return a.name }

// Model returns the agent's model.
func (a *AgentDef) Model() *ModelDef { return a.model }

// Tools returns the flow ids the agent may call.
func (a *AgentDef) Tools() []string { return append([]string(nil), a.tools...) }

// MaxSteps returns the tool-call limit.
func (a *AgentDef) MaxSteps() int { return a.maxSteps }

// validate reports declaration mistakes when the agent first runs.
func (a *AgentDef) validate() error {
	switch {
	case a == nil:
		return errors.New("ai: nil agent")
	case a.name == "":
		return errors.New("ai: agent needs a name")
	case a.model == nil:
		return fmt.Errorf("ai: agent %s has no model", a.name)
	case a.maxSteps < 0:
		return fmt.Errorf("ai: agent %s: maxSteps must not be negative", a.name)
	case a.budget < 0:
		return fmt.Errorf("ai: agent %s: budget must not be negative", a.name)
	case a.outputErr != nil:
		return fmt.Errorf("ai: agent %s: %w", a.name, a.outputErr)
	}
	for _, t := range a.tools {
		if t == "" {
			return fmt.Errorf("ai: agent %s: a nil tool flow", a.name)
		}
	}
	return a.model.Validate()
}

// Register makes [engine.New] check the given agents: each declared well (a name, a
// model, limits that make sense) and each of its tools a flow bound in the app. Without
// it the same mistakes surface when the agent first runs.
func Register(agents ...*AgentDef) engine.Option {
	return engine.Validate(func(app *engine.App) error {
		for _, a := range agents {
			if err := a.validate(); err != nil {
				return err
			}
			for _, t := range a.tools {
				if _, ok := app.Lookup(t); !ok {
					return fmt.Errorf("ai: agent %s: tool flow %s is not bound in this app (engine.Bind it, or take it out of the agent's tools)", a.name, t)
				}
			}
		}
		return nil
	})
}

func (a *AgentDef) hasTool(name string) bool {
	for _, t := range a.tools {
		if t == name {
			return true
		}
	}
	return false
}
