package engine

import (
	"fmt"
	"reflect"

	"github.com/bbc28f59/engine/internal/flatjson"
	"github.com/bbc28f59/engine/internal/validate"
	"github.com/google/jsonschema-go/jsonschema"
)

// Decoder decodes JSON values of type T exactly as a flow's input of type T is decoded:
// checked against the JSON Schema the engine infers for T (as [Define] does), with every
// issue on its path, then decoded into T, then checked by T's own [Validator]. It is for
// values that reach the server outside a call's input and deserve the same care: a
// model's structured reply (package ai), a webhook's payload, a message from a queue.
// A Decoder is safe for concurrent use.
type Decoder[T any] struct {
	def   *FlowDef // the schema's holder, as decodeInput reads it
	check *validate.Validator
	flat  *flatjson.Decoder
}

// NewDecoder prepares the decoder of T. It fails when JSON Schema cannot describe T, or
// its schema refers outside itself.
func NewDecoder[T any]() (*Decoder[T], error) {
	t := reflect.TypeFor[T]()
	s, err := schemaFor(t)
	if err != nil {
		return nil, fmt.Errorf("engine: schema of %v: %w", t, err)
	}
	check, err := compileInput(t.String(), s)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &Decoder[T]{def: &FlowDef{inType: t, inSchema: s}, check: check, flat: flatjson.New(t)}, nil
}

// Schema returns a copy of T's JSON Schema, the one values are checked against.
func (d *Decoder[T]) Schema() *jsonschema.Schema { return d.def.inSchema.CloneSchemas() }

// Decode checks raw and decodes it into a T. A value that does not pass is a
// ValidationError ([Invalid]) whose data lists every issue, each with its JSON path.
func (d *Decoder[T]) Decode(raw []byte) (T, error) {
	var v T
	if err := decodeInput(raw, &v, d.def, d.check, d.flat); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
