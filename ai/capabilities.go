package ai

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
)

// Capabilities is AG-UI's AgentCapabilities document, limited to the categories the
// engine can say something true about. AG-UI clients read it through their agent's
// getCapabilities; serve it with [CapabilitiesHandler].
type Capabilities struct {
	Identity       CapabilityIdentity       `json:"identity"`
	Transport      CapabilityTransport      `json:"transport"`
	Tools          CapabilityTools          `json:"tools"`
	State          CapabilityState          `json:"state"`
	HumanInTheLoop CapabilityHumanInTheLoop `json:"humanInTheLoop"`
}

// CapabilityIdentity names the agent.
type CapabilityIdentity struct {
	Name string `json:"name"`
}

// CapabilityTransport: runs stream as server-sent events; resumable says a run can be
// followed again from a sequence number (Last-Event-ID on the follow route), which holds
// when the app has a journal and the follow route ([Install]).
type CapabilityTransport struct {
	Streaming bool `json:"streaming"`
	Resumable bool `json:"resumable"`
}

// CapabilityTools lists the agent's own tools (their wire names and input schemas, as the
// model sees them) and says that tools passed in RunAgentInput.tools are offered too.
type CapabilityTools struct {
	Supported      bool             `json:"supported"`
	Items          []CapabilityTool `json:"items"`
	ParallelCalls  bool             `json:"parallelCalls"`
	ClientProvided bool             `json:"clientProvided"`
}

// CapabilityTool is one tool of [CapabilityTools], in AG-UI's Tool shape.
type CapabilityTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// CapabilityState: runs send STATE_SNAPSHOT and STATE_DELTA; state is the client's, sent
// with every run, so it persists across runs only as far as the client sends it back.
type CapabilityState struct {
	Snapshots       bool `json:"snapshots"`
	Deltas          bool `json:"deltas"`
	PersistentState bool `json:"persistentState"`
}

// CapabilityHumanInTheLoop: approvals park the run and end it with an interrupt outcome,
// answered in RunAgentInput.resume (edited arguments allowed); all of it needs a journal,
// since a parked run must outlive the request.
type CapabilityHumanInTheLoop struct {
	Supported        bool `json:"supported"`
	Approvals        bool `json:"approvals"`
	Interrupts       bool `json:"interrupts"`
	ApproveWithEdits bool `json:"approveWithEdits"`
}

// CapabilitiesOf describes agent as bound in app: its tools must be bound flows.
func CapabilitiesOf(app *engine.App, agent *AgentDef) (Capabilities, error) {
	if err := agent.validate(); err != nil {
		return Capabilities{}, err
	}
	durableApp := durable.JournalOf(app) != nil
	_, installed := configKey.App(app) // the follow route
	c := Capabilities{
		Identity:  CapabilityIdentity{Name: agent.name},
		Transport: CapabilityTransport{Streaming: true, Resumable: durableApp && installed},
		Tools:     CapabilityTools{Supported: true, Items: []CapabilityTool{}, ParallelCalls: true, ClientProvided: true},
		State:     CapabilityState{Snapshots: true, Deltas: true},
		HumanInTheLoop: CapabilityHumanInTheLoop{Supported: durableApp, Approvals: durableApp,
			Interrupts: durableApp, ApproveWithEdits: durableApp},
	}
	for _, name := range agent.tools {
		def, ok := app.Lookup(name)
		if !ok {
			return Capabilities{}, fmt.Errorf("ai: agent %s: tool flow %s is not bound in this app", agent.name, name)
		}
		params, err := def.InputSchemaJSON()
		if err != nil {
			return Capabilities{}, fmt.Errorf("ai: agent %s: schema of tool %s: %w", agent.name, name, err)
		}
		c.Tools.Items = append(c.Tools.Items, CapabilityTool{Name: wireName(name), Description: def.Description(), Parameters: params})
	}
	return c, nil
}

// ServeCapabilities mounts GET path serving [CapabilitiesOf] agent as JSON (the bare
// AG-UI document, not an envelope, since AG-UI clients read it as it is), behind the gates
// of flow, the agent's streaming flow: the document lists every tool with its schema, so
// only a caller who may call the flow sees it. Anyone else gets the flow's denial as an
// envelope (Unauthorized without credentials, Forbidden, …). The gates are checked as a
// read ([engine.ForRead]), so a rate limit of the flow draws nothing.
//
//	ai.ServeCapabilities("/chat/capabilities", assistant, Ask)
func ServeCapabilities(path string, agent *AgentDef, flow interface{ Def() *engine.FlowDef }) engine.Option {
	if flow == nil || flow.Def() == nil {
		return engine.InvalidOption(fmt.Errorf("ai: ServeCapabilities %s: nil flow", path))
	}
	id := flow.Def().ID()
	return engine.Handle(http.MethodGet, path, func(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
		app := fx.App()
		if err := app.CheckGates(engine.ForRead(r.Context()), id, fx.Principal(), nil); err != nil {
			engine.WriteError(fx, w, r, err)
			return
		}
		c, err := CapabilitiesOf(app, agent)
		if err != nil {
			engine.WriteError(fx, w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
	})
}
