package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bbc28f59/engine/internal/flatjson"
	"github.com/bbc28f59/engine/internal/validate"
)

// Validator is implemented by input types with checks beyond their JSON Schema. A
// non-nil error is answered as ValidationError; return [Invalid] for field-level detail.
type Validator interface {
	Validate() error
}

// restInput builds the JSON input of a REST call: path parameters from the path, the
// other fields from the query string on GET and HEAD, or from the JSON body otherwise.
// Query and path values are typed by the input schema (numbers, booleans, lists).
func restInput(r *http.Request, def *FlowDef, body []byte) ([]byte, error) {
	isQuery := r.Method == http.MethodGet || r.Method == http.MethodHead
	if !isQuery && len(def.params) == 0 {
		return body, nil
	}
	var room [4]member // a call's few members, without a map
	obj := members(room[:0])
	var issues []ValidationIssue
	if isQuery && r.URL.RawQuery != "" {
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, Invalid(ValidationIssue{Message: "malformed query string: " + err.Error()})
		}
		for _, key := range slices.Sorted(maps.Keys(query)) { // issues in path order
			vals := query[key]
			v, issue := typedParam(def.inSchema, key, vals, false)
			if issue != nil {
				issues = append(issues, *issue)
				continue
			}
			if v != nil {
				obj = obj.set(key, v)
			}
		}
	} else if !isQuery && len(bytes.TrimSpace(body)) > 0 {
		// Numbers stay as written (json.Number): decoded as float64, an integer above 2^53
		// would reach the handler changed.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		err := dec.Decode(&m)
		if _, end := dec.Token(); err != nil || end != io.EOF {
			err = json.Unmarshal(body, &m) // the error, as json.Unmarshal words it
		}
		if err != nil || m == nil { // m is nil for a body of null
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				return nil, Invalid(ValidationIssue{Message: "malformed JSON: " + err.Error()})
			}
			return nil, Invalid(ValidationIssue{Message: "the body must be a JSON object when the path has parameters"})
		}
		for k, v := range m {
			obj = obj.set(k, v)
		}
	}
	for _, name := range def.params {
		one := [1]string{r.PathValue(name)}
		v, issue := typedParam(def.inSchema, name, one[:], true)
		if issue != nil {
			issues = append(issues, *issue)
			continue
		}
		obj = obj.set(name, v)
	}
	if len(issues) > 0 {
		return nil, Invalid(issues...)
	}
	return obj.appendJSON(make([]byte, 0, 64))
}

// member is one member of a REST call's input object.
type member struct {
	name  string
	value any
}

// members is a REST call's input object: few members, each name once.
type members []member

// set gives name the value v, in place of any value it had.
func (ms members) set(name string, v any) members {
	for i := range ms {
		if ms[i].name == name {
			ms[i].value = v
			return ms
		}
	}
	return append(ms, member{name, v})
}

// appendJSON writes the object as json.Marshal writes a map[string]any, members in name
// order, without building one: the values of query and path parameters (strings,
// numbers, booleans) directly, anything else through json.Marshal.
func (ms members) appendJSON(dst []byte) ([]byte, error) {
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, m.name), ':')
		switch v := m.value.(type) {
		case string:
			dst = appendString(dst, v)
		case json.Number: // made by strconv, or read by the JSON decoder: valid as it is
			dst = append(dst, v...)
		case bool:
			dst = strconv.AppendBool(dst, v)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			dst = append(dst, b...)
		}
	}
	return append(dst, '}'), nil
}

// appendString writes s as json.Marshal does: as it is between quotes when it holds only
// printable ASCII that needs no escape (the usual name or value), through json.Marshal
// otherwise.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	return append(append(append(dst, '"'), s...), '"')
}

// typedParam converts the string values of one query or path parameter to the JSON type
// its property declares. Unknown query keys are kept as strings only when the input
// accepts arbitrary members (a map input); otherwise they are dropped, so a cache-busting
// or tracking parameter never fails a call, while an unknown member of a JSON body does.
func typedParam(root *jsonschema.Schema, key string, vals []string, isPath bool) (any, *ValidationIssue) {
	var prop *jsonschema.Schema
	if root != nil {
		prop = root.Properties[key]
	}
	if prop == nil {
		if root != nil && !isPath && (root.Properties != nil || forbidsExtra(root)) {
			return nil, nil
		}
		if len(vals) == 1 {
			return vals[0], nil
		}
		return slices.Clone(vals), nil // a copy, so that a caller's vals need not be on the heap
	}
	if hasType(prop, "array") {
		items := prop.Items
		out := make([]any, 0, len(vals))
		for _, raw := range vals {
			v, err := scalarOf(items, raw)
			if err != nil {
				return nil, &ValidationIssue{Path: key, Message: err.Error()}
			}
			out = append(out, v)
		}
		return out, nil
	}
	if len(vals) > 1 {
		return nil, &ValidationIssue{Path: key, Message: "expected one value, got " + strconv.Itoa(len(vals))}
	}
	v, err := scalarOf(prop, vals[0])
	if err != nil {
		return nil, &ValidationIssue{Path: key, Message: err.Error()}
	}
	return v, nil
}

func scalarOf(s *jsonschema.Schema, raw string) (any, error) {
	switch {
	case s == nil:
		return raw, nil
	case hasType(s, "integer"):
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected an integer, got %q", raw)
		}
		return json.Number(strconv.FormatInt(n, 10)), nil
	case hasType(s, "number"):
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || strings.ContainsAny(raw, "xXpP_") || isNonFinite(f) {
			return nil, fmt.Errorf("expected a number, got %q", raw)
		}
		// Re-format: ParseFloat accepts spellings ("00", "+1", ".5") that are not JSON.
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case hasType(s, "boolean"):
		switch raw {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("expected a boolean (true or false), got %q", raw)
	case hasType(s, "object"):
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil, fmt.Errorf("expected a JSON object, got %q", raw)
		}
		return v, nil
	}
	return raw, nil
}

// forbidsExtra reports whether s allows no members beyond its properties: the inferred
// schema of a struct, which jsonschema-go writes as "additionalProperties": false.
func forbidsExtra(s *jsonschema.Schema) bool {
	a := s.AdditionalProperties
	return a != nil && a.Not != nil && reflect.ValueOf(*a.Not).IsZero()
}

func isNonFinite(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

func hasType(s *jsonschema.Schema, t string) bool {
	if s.Type == t {
		return true
	}
	for _, x := range s.Types {
		if x == t {
			return true
		}
	}
	return false
}

// compileInput prepares the validator of a flow's input schema when the flow is bound.
func compileInput(id string, s *jsonschema.Schema) (*validate.Validator, error) {
	v, err := validate.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	return v, nil
}

// decodeInput decodes raw into in, checked against the flow's input schema (compiled
// into check when the flow was bound), then runs in's Validate method. An input the
// validator accepts as it reads the bytes is decoded once, straight into in, as a
// hand-written json.Unmarshal would: by flat (the [flatjson.Decoder] of in's type, nil
// when it has none) when its members are plain strings, numbers and booleans, the usual
// input, else by json.Unmarshal. Any other input goes the long way, which finds every
// field-level issue.
func decodeInput(raw []byte, in any, def *FlowDef, check *validate.Validator, flat *flatjson.Decoder) error {
	raw = inputOrEmpty(raw, def)
	if !check.Accepts(raw) || !flat.Decode(raw, in) && json.Unmarshal(raw, in) != nil {
		reflect.ValueOf(in).Elem().SetZero() // what a failed Unmarshal may have set
		if err := decodeChecked(raw, in, check); err != nil {
			return err
		}
	}
	if v := validatorOf(in); v != nil {
		return asValidation(v.Validate())
	}
	return nil
}

// inputOrEmpty trims raw; an empty input is the empty object for an object schema, and
// null otherwise.
func inputOrEmpty(raw []byte, def *FlowDef) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 {
		return raw
	}
	if def.inSchema != nil && hasType(def.inSchema, "object") {
		return []byte("{}")
	}
	return []byte("null")
}

// decodeChecked is the long way: decode raw as a JSON value (numbers as written), collect
// every issue the schema finds in it, and only then decode it into in. Its issues and
// errors are what a caller sees of a bad input.
func decodeChecked(raw []byte, in any, check *validate.Validator) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return Invalid(ValidationIssue{Message: "malformed JSON: " + err.Error()})
	}
	if _, err := dec.Token(); err != io.EOF {
		return Invalid(ValidationIssue{Message: "malformed JSON: unexpected data after the input value"})
	}
	if found := check.Validate(generic); len(found) > 0 {
		issues := make([]ValidationIssue, len(found))
		for i, is := range found {
			issues[i] = ValidationIssue(is)
		}
		return Invalid(issues...)
	}
	if err := json.Unmarshal(raw, in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Invalid(ValidationIssue{Path: te.Field, Message: "expected " + te.Type.String() + ", got " + te.Value})
		}
		return Invalid(ValidationIssue{Message: err.Error()})
	}
	return nil
}

// validatorOf returns the [Validator] of a decoded input, given as a pointer to it: the
// input type's own method (on the type or on its pointer), or, for a pointer input type,
// the method of what it points to. A nil pointer input (the JSON null) has none, rather
// than a method that would dereference nil.
func validatorOf(in any) Validator {
	if v, ok := in.(Validator); ok {
		return v
	}
	elem := reflect.ValueOf(in).Elem()
	if elem.Kind() != reflect.Pointer || elem.IsNil() {
		return nil
	}
	v, _ := elem.Interface().(Validator)
	return v
}

func asValidation(err error) error {
	if err == nil {
		return nil
	}
	if e := AsError(err); e != nil {
		return e
	}
	return Invalid(ValidationIssue{Message: err.Error()})
}
