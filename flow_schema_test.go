package engine_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// InputSchemaJSON is the input schema as json.Marshal encodes it, declaration
// adjustments included, and the same bytes on every call: it is encoded once.
func TestInputSchemaJSON(t *testing.T) {
	type in struct {
		Name string `json:"name"`
	}
	u := engine.NewUnit("schemajson")
	def := engine.Define[in, struct{}](u, "f", engine.InputSchema(func(s *jsonschema.Schema) {
		n := 2
		s.Properties["name"].MinLength = &n
	})).Def()
	want, err := json.Marshal(def.InputSchema())
	if err != nil {
		t.Fatal(err)
	}
	got, err := def.InputSchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"minLength":2`)) {
		t.Fatalf("InputSchemaJSON = %s, want %s (with the adjustment's minLength)", got, want)
	}
	again, err := def.InputSchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	if &again[0] != &got[0] {
		t.Fatal("InputSchemaJSON encoded the schema again; want the bytes of the first call")
	}
	if cap(got) != len(got) {
		t.Fatalf("the shared bytes have room after them (cap %d, len %d): a caller's append would write into them", cap(got), len(got))
	}
	// A FlowDef not made by Define (the zero value here) has no schema: null.
	var zero engine.FlowDef
	if b, err := zero.InputSchemaJSON(); err != nil || string(b) != "null" {
		t.Fatalf("zero FlowDef: InputSchemaJSON = %s, %v; want null", b, err)
	}
}
