package ai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bbc28f59/engine"
)

// ToolDescription is what a model is told of a tool: its description and the JSON
// Schema of its input.
type ToolDescription struct {
	Description string
	Parameters  json.RawMessage
}

// describeKey holds a tool flow's [DescribeTool].
var describeKey = engine.NewKey[func(context.Context) (ToolDescription, error)]("ai.DescribeTool")

// DescribeTool gives a tool flow a description for models that is known only at run
// time, such as the tool of another MCP server (package mcp), whose schema comes from
// that server: each run asks fn. When fn fails, the flow's own description and input
// schema are offered instead, so a server that is away does not stop the run.
func DescribeTool(fn func(ctx context.Context) (ToolDescription, error)) engine.BindOption {
	return describeKey.BindOption(fn)
}

// toolSpec is the model-facing spec of tool flow def.
func toolSpec(ctx context.Context, app *engine.App, def *engine.FlowDef) (ToolSpec, error) {
	spec := ToolSpec{Name: wireName(def.ID()), Description: def.Description()}
	if fn, ok := describeKey.Flow(app, def.ID()); ok {
		if d, err := fn(ctx); err == nil && len(d.Parameters) > 0 {
			spec.Description, spec.Parameters = d.Description, d.Parameters
			return spec, nil
		}
	}
	params, err := def.InputSchemaJSON() // encoded once per flow
	if err != nil {
		return ToolSpec{}, fmt.Errorf("schema of tool %s: %w", def.ID(), err)
	}
	spec.Parameters = params
	return spec, nil
}

// With returns the set of s's tools and those of more, such as an MCP server's
// (package mcp):
//
//	ai.Agent("assistant", model, ai.Tools(Weather).With(bank.Tools()), 6)
func (s ToolSet) With(more ...ToolSet) ToolSet {
	ids := append([]string(nil), s.ids...)
	for _, m := range more {
		ids = append(ids, m.ids...)
	}
	return ToolSet{ids: ids}
}
