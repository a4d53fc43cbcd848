// Package openschema builds the JSON Schema of a wire vocabulary's request type whose
// objects carry members beyond those the engine reads (AG-UI's RunAgentInput, the AI
// SDK's chat request): inferred from the Go type, with every object open to other
// members and json.RawMessage fields taking any JSON value.
package openschema

import (
	"encoding/json"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// For returns the schema of T with every object open. The caller may then adjust it.
func For[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{IgnoreInvalidTypes: true,
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): {}}})
	if err != nil {
		return &jsonschema.Schema{Type: "object"} // not reached for the fixed types it serves
	}
	open(s)
	return s
}

// open lets every object in s take members its properties do not name.
func open(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Properties != nil {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		open(p)
	}
	open(s.Items)
}
