package anthropictest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// checkRequest refuses, with 400 invalid_request_error as Anthropic does, a request the
// API would refuse: a tool_choice naming a tool the request does not offer, and an
// output_config.format that is not {"type": "json_schema"} with an object schema whose
// objects are all closed (additionalProperties: false), as structured outputs require.
// Signed thinking blocks are checked too (checkThinking).
func checkRequest(req Request) (int, string) {
	if status, msg := checkThinking(req); status != 0 {
		return status, msg
	}
	if c := req.ToolChoice; c != nil {
		switch c.Type {
		case "auto", "any", "none":
		case "tool":
			found := false
			for _, t := range req.Tools {
				found = found || t.Name == c.Name
			}
			if !found {
				return http.StatusBadRequest, fmt.Sprintf("tool_choice.name: Tool '%s' not found in tools", c.Name)
			}
		default:
			return http.StatusBadRequest, fmt.Sprintf("tool_choice.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", c.Type)
		}
	}
	if oc := req.OutputConfig; oc != nil && oc.Format != nil {
		if oc.Format.Type != "json_schema" {
			return http.StatusBadRequest, fmt.Sprintf("output_config.format.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'json_schema'", oc.Format.Type)
		}
		var root map[string]any
		if err := json.Unmarshal(oc.Format.Schema, &root); err != nil || root == nil {
			return http.StatusBadRequest, "output_config.format.schema: Input should be a valid dictionary"
		}
		if msg := closedObjects(root); msg != "" {
			return http.StatusBadRequest, "output_config.format.schema: " + msg
		}
	}
	return 0, ""
}

// closedObjects finds an object schema that is not closed.
func closedObjects(s map[string]any) string {
	props, hasProps := s["properties"].(map[string]any)
	if s["type"] == "object" || hasProps {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			return "For 'object' type, 'additionalProperties' must be explicitly set to false"
		}
	}
	for _, p := range props {
		if sub, ok := p.(map[string]any); ok {
			if msg := closedObjects(sub); msg != "" {
				return msg
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		return closedObjects(items)
	}
	return ""
}
