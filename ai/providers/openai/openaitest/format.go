package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
)

// formatName is what OpenAI accepts as a json_schema name.
var formatName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkRequest refuses, with 400 invalid_request_error as OpenAI does, a response format
// the API would refuse: an unknown type, a json_schema without a valid name or with a
// schema whose root is not an object, and, with strict: true, a schema outside the strict
// subset (an object that is not closed with additionalProperties: false, or that does
// not require every property).
func checkRequest(req Request) (int, string) {
	f := req.ResponseFormat
	if f == nil {
		return 0, ""
	}
	switch f.Type {
	case "text", "json_object":
		return 0, ""
	case "json_schema":
	default:
		return http.StatusBadRequest, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text', 'json_object' and 'json_schema'.", f.Type)
	}
	js := f.JSONSchema
	if js == nil {
		return http.StatusBadRequest, "Missing required parameter: 'response_format.json_schema'."
	}
	if !formatName.MatchString(js.Name) {
		return http.StatusBadRequest, "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
	}
	var root map[string]any
	if err := json.Unmarshal(js.Schema, &root); err != nil || root["type"] != "object" {
		return http.StatusBadRequest, fmt.Sprintf("Invalid schema for response_format '%s': schema must be a JSON Schema of 'type: \"object\"'.", js.Name)
	}
	if js.Strict != nil && *js.Strict {
		if msg := strictProblem(root, "#"); msg != "" {
			return http.StatusBadRequest, fmt.Sprintf("Invalid schema for response_format '%s': In context=(%s), %s", js.Name, "'"+js.Name+"'", msg)
		}
	}
	return 0, ""
}

// strictProblem finds the first part of a schema strict mode does not accept.
func strictProblem(s map[string]any, at string) string {
	if props, ok := s["properties"].(map[string]any); ok || s["type"] == "object" {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			return "'additionalProperties' is required to be supplied and to be false (at " + at + ")."
		}
		var req []string
		if list, ok := s["required"].([]any); ok {
			for _, r := range list {
				if name, ok := r.(string); ok {
					req = append(req, name)
				}
			}
		}
		for name, p := range props {
			if !slices.Contains(req, name) {
				return "'required' is required to be supplied and to be an array including every key in properties. Missing '" + name + "'."
			}
			if sub, ok := p.(map[string]any); ok {
				if msg := strictProblem(sub, at+"/properties/"+name); msg != "" {
					return msg
				}
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		return strictProblem(items, at+"/items")
	}
	return ""
}
