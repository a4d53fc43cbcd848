package openai

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/bbc28f59/engine/ai"
)

// buildParams maps a provider-neutral request onto chat-completions parameters: the system prompt first, assistant
// tool calls as tool_calls, tool results as role "tool" messages, tools as functions with their JSON Schema, and
// stream_options.include_usage so spend can be reported, and a structured output as the JSON-schema response format.
func buildParams(req ai.Request) (sdk.ChatCompletionNewParams, error) {
	var p sdk.ChatCompletionNewParams
	if req.Model == "" {
		return p, errors.New("openai: request has no model")
	}
	if req.MaxTokens < 0 {
		return p, fmt.Errorf("openai: MaxTokens %d is negative", req.MaxTokens)
	}
	p.Model = req.Model
	p.StreamOptions.IncludeUsage = sdk.Bool(true)
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
	}
	setReasoning(&p, req.Reasoning)
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msg, err := message(m)
		if err != nil {
			return p, fmt.Errorf("openai: message %d: %w", i, err)
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
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil {
			return p, fmt.Errorf("openai: output schema is not a JSON object: %w", err)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: o.Name, Schema: schema, Strict: sdk.Bool(o.Strict)}}
	}
	return p, nil
}

func message(m ai.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case ai.RoleSystem:
		return sdk.SystemMessage(m.Content), nil
	case ai.RoleUser:
		return sdk.UserMessage(m.Content), nil
	case ai.RoleTool:
		if m.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, errors.New("tool message has no ToolCallID")
		}
		return sdk.ToolMessage(m.Content, m.ToolCallID), nil
	case ai.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(m.Content)
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool call %q needs an id and a name", tc.Name)
			}
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

func toolParam(t ai.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return sdk.ChatCompletionToolUnionParam{}, errors.New("openai: tool has no name")
	}
	def := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		def.Description = sdk.String(t.Description)
	}
	if len(t.Parameters) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return sdk.ChatCompletionToolUnionParam{}, fmt.Errorf("openai: tool %q: parameters are not a JSON object: %w", t.Name, err)
		}
		def.Parameters = schema
	}
	return sdk.ChatCompletionFunctionTool(def), nil
}
