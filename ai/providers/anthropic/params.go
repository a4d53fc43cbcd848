package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/bbc28f59/engine/ai"
)

// buildParams maps a provider-neutral request onto Messages parameters: the system prompt (plus any system
// messages) as system blocks, assistant tool calls as tool_use blocks, tool results as tool_result blocks in a user
// message, and tools with their JSON Schema as input_schema. Consecutive messages of the same role are merged, as
// the API wants roles to alternate and all tool results of a turn in one user message.
func buildParams(req ai.Request, mode OutputMode) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if req.Model == "" {
		return p, errors.New("anthropic: request has no model")
	}
	if req.MaxTokens < 0 {
		return p, fmt.Errorf("anthropic: MaxTokens %d is negative", req.MaxTokens)
	}
	p.Model = sdk.Model(req.Model)
	p.MaxTokens = DefaultMaxTokens
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if err := setThinking(&p, req.Reasoning); err != nil {
		return p, err
	}
	if req.System != "" {
		p.System = append(p.System, sdk.TextBlockParam{Text: req.System})
	}
	for i, m := range req.Messages {
		if m.Role == ai.RoleSystem {
			if m.Content != "" {
				p.System = append(p.System, sdk.TextBlockParam{Text: m.Content})
			}
			continue
		}
		msg, err := message(m)
		if err != nil {
			return p, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == msg.Role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, msg.Content...)
			continue
		}
		p.Messages = append(p.Messages, msg)
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if o := req.Output; o != nil {
		if err := outputParams(&p, *o, mode); err != nil {
			return p, err
		}
	}
	return p, nil
}

// outputParams asks for a structured output: as output_config.format, or as a tool the
// model must call (alone: that tool; beside the agent's tools: any tool, so the model can
// still use them before it answers).
func outputParams(p *sdk.MessageNewParams, o ai.OutputFormat, mode OutputMode) error {
	switch mode {
	case OutputNative:
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil {
			return fmt.Errorf("anthropic: output schema is not a JSON object: %w", err)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	case OutputTool:
		tool, err := toolParam(ai.ToolSpec{Name: o.Name, Parameters: o.Schema,
			Description: "Give your final answer by calling this tool with it."})
		if err != nil {
			return err
		}
		if len(p.Tools) == 0 {
			p.ToolChoice = sdk.ToolChoiceParamOfTool(o.Name)
		} else {
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		}
		p.Tools = append(p.Tools, tool)
	}
	return nil
}

func message(m ai.Message) (sdk.MessageParam, error) {
	switch m.Role {
	case ai.RoleUser:
		return sdk.NewUserMessage(sdk.NewTextBlock(m.Content)), nil
	case ai.RoleTool:
		if m.ToolCallID == "" {
			return sdk.MessageParam{}, errors.New("tool message has no ToolCallID")
		}
		return sdk.NewUserMessage(sdk.NewToolResultBlock(m.ToolCallID, m.Content, false)), nil
	case ai.RoleAssistant:
		blocks := thinkingBlocks(m.Reasoning) // first, as Anthropic sent them
		if m.Content != "" {
			blocks = append(blocks, sdk.NewTextBlock(m.Content)) // the API rejects empty text blocks
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return sdk.MessageParam{}, fmt.Errorf("tool call %q needs an id and a name", tc.Name)
			}
			input := json.RawMessage(tc.Arguments)
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			if !json.Valid(input) {
				return sdk.MessageParam{}, fmt.Errorf("tool call %q: arguments are not JSON", tc.Name)
			}
			blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, input, tc.Name))
		}
		if len(blocks) == 0 {
			return sdk.MessageParam{}, errors.New("assistant message has neither text nor tool calls")
		}
		return sdk.NewAssistantMessage(blocks...), nil
	default:
		return sdk.MessageParam{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// toolParam sends the tool's JSON Schema as input_schema: properties and required in their fields, every other
// keyword ($defs, additionalProperties, ...) kept as is.
func toolParam(t ai.ToolSpec) (sdk.ToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ToolUnionParam{}, errors.New("anthropic: tool has no name")
	}
	tool := sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tool.Description = sdk.String(t.Description)
	}
	if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
		var schema map[string]json.RawMessage
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: tool %q: parameters are not a JSON object: %w", t.Name, err)
		}
		if typ, ok := schema["type"]; ok && string(typ) != `"object"` {
			return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: tool %q: input schema type is %s, want \"object\"", t.Name, typ)
		}
		for k, v := range schema {
			switch k {
			case "type":
			case "properties":
				tool.InputSchema.Properties = v
			case "required":
				if err := json.Unmarshal(v, &tool.InputSchema.Required); err != nil {
					return sdk.ToolUnionParam{}, fmt.Errorf("anthropic: tool %q: required: %w", t.Name, err)
				}
			default:
				if tool.InputSchema.ExtraFields == nil {
					tool.InputSchema.ExtraFields = map[string]any{}
				}
				tool.InputSchema.ExtraFields[k] = v
			}
		}
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}
