package ai

import (
	"encoding/json"
	"strings"
)

// addClientTools offers the client's tools (RunAgentInput.tools) to the model after the
// agent's own. An agent tool wins a name clash, whether the client used the flow id or
// the name the model sees: the agent's tools are the ones its gates and approvals guard,
// and a client must not be able to shadow them. A repeated client name is offered once.
func (r *AgentRun) addClientTools(tools []ClientTool) {
	for _, t := range tools {
		wire := wireName(t.Name)
		if _, ok := r.wireNames[wire]; ok || r.agent.hasTool(t.Name) {
			continue
		}
		if _, ok := r.client[wire]; ok {
			continue
		}
		if r.client == nil {
			r.client = map[string]string{}
		}
		r.client[wire] = t.Name
		var params json.RawMessage
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			params = t.Parameters
		}
		r.tools = append(r.tools, ToolSpec{Name: wire, Description: t.Description, Parameters: params})
	}
}

// isClientTool reports whether the model-facing name is one of the client's tools.
func (r *AgentRun) isClientTool(wire string) bool {
	_, ok := r.client[wire]
	return ok
}

// systemPrompt is the agent's system prompt followed by the client's context
// (RunAgentInput.context), one "- description: value" line each, so the model reads it
// as ambient information rather than as a message of the conversation.
//
// A non-empty AG-UI state follows as "Shared state (JSON): …", as it stands at the model
// call, so the model knows what the client and the tools have set.
func (r *AgentRun) systemPrompt() string {
	if len(r.context) == 0 && r.state.empty() {
		return r.agent.system
	}
	var b strings.Builder
	b.WriteString(r.agent.system)
	if len(r.context) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Context from the client:")
		for _, c := range r.context {
			b.WriteString("\n- ")
			b.WriteString(c.Description)
			b.WriteString(": ")
			b.WriteString(c.Value)
		}
	}
	if !r.state.empty() {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("Shared state (JSON): ")
		b.Write(r.state.get())
	}
	return b.String()
}
