package ai

import (
	"errors"
	"fmt"
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
}

// AgentOption configures an agent.
type AgentOption func(*AgentDef)

// System sets the agent's system prompt.
func System(prompt string) AgentOption { return func(a *AgentDef) { a.system = prompt } }

// Budget sets maxCostPerRun: when the run's spend reaches it the loop stops with stop
// reason budget; nothing is thrown.
func Budget(maxCostPerRun float64) AgentOption { return func(a *AgentDef) { a.budget = maxCostPerRun } }

// Agent declares an agent named name on model, whose tools are flow ids ("tools.weather").
// maxSteps counts tool calls, not model calls; zero means [DefaultMaxSteps].
func Agent(name string, model *ModelDef, tools []string, maxSteps int, opts ...AgentOption) *AgentDef {
	a := &AgentDef{name: name, model: model, tools: append([]string(nil), tools...), maxSteps: maxSteps}
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
	}
	return a.model.Validate()
}

func (a *AgentDef) hasTool(name string) bool {
	for _, t := range a.tools {
		if t == name {
			return true
		}
	}
	return false
}
