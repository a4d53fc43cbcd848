package engine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxIssues bounds the issues of one reply; a huge array of bad items is not worth a
// huge error.
const maxIssues = 50

// inputValidator checks decoded inputs against a flow's input schema, compiled once when
// the flow is bound. Schemas are inferred and published with jsonschema-go, whose
// validator stops at the first problem and does not say where it is; this one is
// santhosh-tekuri/jsonschema, which passes the JSON Schema test suite and reports every
// problem with its instance location, so a caller sees all of them, each on its field.
type inputValidator struct {
	schema *jsv.Schema
}

// compileInput compiles s (draft 2020-12 unless it names another with $schema) with
// format assertions on, so a format JSON Schema defines is enforced like any other keyword
// (a format name of one's own stays an annotation, as the specification has it). The
// schema must be self-contained: a $ref to anything outside it is an error here, never a
// fetch at run time. A nil s (an input type JSON Schema cannot describe) gives the nil
// validator, which accepts any input, as Define published no schema to hold it to.
func compileInput(id string, s *jsonschema.Schema) (*inputValidator, error) {
	if s == nil {
		return nil, nil
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	c := jsv.NewCompiler()
	c.DefaultDraft(jsv.Draft2020)
	c.AssertFormat()
	c.UseLoader(jsv.SchemeURLLoader{})
	loc := "urn:engine:input:" + id
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	return &inputValidator{schema: compiled}, nil
}

// validate checks v, a decoded JSON value with numbers as json.Number, and returns every
// issue (at most [maxIssues]) ordered by path, then message.
func (iv *inputValidator) validate(v any) []ValidationIssue {
	if iv == nil {
		return nil
	}
	var sel firstFindings
	if !numbersInRange(v) {
		badNumbers(v, nil, &sel)
		return issuesOf(v, &sel)
	}
	err := iv.schema.Validate(v)
	if err == nil {
		return nil
	}
	verr, ok := err.(*jsv.ValidationError)
	if !ok {
		return []ValidationIssue{{Message: err.Error()}}
	}
	collect(verr, &sel)
	return issuesOf(v, &sel)
}

// finding is one problem before it is worded: where (JSON Pointer tokens; for a missing
// or unknown member, the object's location and the member's name) and what.
type finding struct {
	loc  []string
	kind jsv.ErrorKind // worded by issueMessage, unless text is set
	text string
}

// issuesOf words the findings kept by sel in path order, then message order (the
// validator walks objects in map order), at most [maxIssues] of them.
func issuesOf(root any, sel *firstFindings) []ValidationIssue {
	kept := sel.kept
	issues := make([]ValidationIssue, len(kept))
	for i, f := range kept {
		path, at := locate(root, f.loc)
		msg := f.text
		if msg == "" {
			msg = issueMessage(f.kind, at)
		}
		issues[i] = ValidationIssue{Path: path, Message: msg}
	}
	idx := make([]int, len(kept))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := compareLocation(kept[a].loc, kept[b].loc); c != 0 {
			return c
		}
		return strings.Compare(issues[a].Message, issues[b].Message)
	})
	out := make([]ValidationIssue, 0, min(len(idx), maxIssues))
	for _, i := range idx[:min(len(idx), maxIssues)] {
		out = append(out, issues[i])
	}
	return out
}

// firstFindings keeps, of all the findings added, the [maxIssues] that come first by
// location, plus any that tie with the last of them (their messages will decide). A body
// of many bad items can yield hundreds of thousands of findings; only those that can make
// the cut are kept, and only they are given a path and a message.
type firstFindings struct {
	kept []finding
}

func (sel *firstFindings) add(f finding) {
	const n = maxIssues
	if len(sel.kept) >= n && compareLocation(f.loc, sel.kept[n-1].loc) > 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(sel.kept, f, func(k, f finding) int { return compareLocation(k.loc, f.loc) })
	sel.kept = slices.Insert(sel.kept, i, f)
	if len(sel.kept) > n {
		cut := n
		for cut < len(sel.kept) && compareLocation(sel.kept[cut].loc, sel.kept[n-1].loc) == 0 {
			cut++
		}
		sel.kept = sel.kept[:cut]
	}
}

// maxNumberLen and maxExponent bound the JSON numbers an input may hold. The validator
// compares numbers exactly (as big.Rat), which is right for bounds and multipleOf but
// costs time in the exponent: one 9-byte "1e-999999" takes about 80 ms, so a 1 MiB body
// of them would hold a core for hours. No Go number type can hold such a value anyway;
// they are refused before validation, each with its path. The limits leave every float64
// (±1.8e308, down to 5e-324, in any spelling up to 100 characters).
const (
	maxNumberLen = 100
	maxExponent  = 400
)

// numbersInRange reports whether every number of v is within the limits above.
func numbersInRange(v any) bool {
	switch x := v.(type) {
	case json.Number:
		return numberInRange(string(x))
	case []any:
		for _, item := range x {
			if !numbersInRange(item) {
				return false
			}
		}
	case map[string]any:
		for _, item := range x {
			if !numbersInRange(item) {
				return false
			}
		}
	}
	return true
}

// badNumbers records each number of v (at loc) outside the limits above.
func badNumbers(v any, loc []string, sel *firstFindings) {
	switch x := v.(type) {
	case json.Number:
		if !numberInRange(string(x)) {
			sel.add(finding{loc: slices.Clone(loc), text: "number out of range"})
		}
	case []any:
		for i, item := range x {
			badNumbers(item, append(loc, strconv.Itoa(i)), sel)
		}
	case map[string]any:
		for k, item := range x {
			badNumbers(item, append(loc, k), sel)
		}
	}
}

func numberInRange(s string) bool {
	if len(s) > maxNumberLen {
		return false
	}
	if _, exp, ok := strings.Cut(strings.ToLower(s), "e"); ok {
		e, err := strconv.Atoi(exp)
		if err != nil || e > maxExponent || e < -maxExponent {
			return false
		}
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// collect flattens the validator's tree of errors into findings. Groups, references and
// allOf only gather the errors beneath them; alternatives (anyOf, oneOf, not) are one
// finding on their own, since the errors of each branch would mislead more than help.
func collect(e *jsv.ValidationError, sel *firstFindings) {
	member := func(name, text string) {
		sel.add(finding{loc: append(slices.Clip(e.InstanceLocation), name), text: text})
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		for _, c := range e.Causes {
			collect(c, sel)
		}
	case *kind.Required:
		for _, name := range k.Missing {
			member(name, "required")
		}
	case *kind.DependentRequired:
		for _, name := range k.Missing {
			member(name, "required when "+k.Prop+" is present")
		}
	case *kind.Dependency:
		for _, name := range k.Missing {
			member(name, "required when "+k.Prop+" is present")
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			member(name, "unknown field")
		}
	case *kind.PropertyNames:
		member(k.Property, "not an allowed member name")
	default:
		sel.add(finding{loc: e.InstanceLocation, kind: k})
	}
}

// locate turns an instance location (JSON Pointer tokens) into the issue path form,
// "a.b[0].c", and returns the value found there. Only the instance tells an array index
// from a member named "0", so it is walked along.
func locate(root any, loc []string) (string, any) {
	var b strings.Builder
	v := root
	for _, tok := range loc {
		if arr, ok := v.([]any); ok {
			b.WriteString("[" + tok + "]")
			v = nil
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(arr) {
				v = arr[i]
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
		m, _ := v.(map[string]any)
		v = m[tok]
	}
	return b.String(), v
}

// compareLocation orders locations token by token, array indexes by number, so that
// "items[2]" comes before "items[10]" and an object's own issues before its members'.
func compareLocation(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return cmp.Compare(x, y)
		}
		return strings.Compare(a[i], b[i])
	}
	return cmp.Compare(len(a), len(b))
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

var english = message.NewPrinter(language.English)

// issueMessage words one keyword's failure for a caller, in the terms of the field rather
// than of JSON Schema. Keywords without a wording of their own use the library's.
func issueMessage(k jsv.ErrorKind, at any) string {
	switch k := k.(type) {
	case *kind.Type:
		return "expected " + typeNames(k.Want) + ", got " + jsonTypeOf(at)
	case *kind.Enum:
		if len(k.Want) == 1 {
			return "must be " + jsonText(k.Want[0])
		}
		parts := make([]string, len(k.Want))
		for i, w := range k.Want {
			parts[i] = jsonText(w)
		}
		return "must be one of " + strings.Join(parts, ", ")
	case *kind.Const:
		return "must be " + jsonText(k.Want)
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters", k.Want)
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.Minimum:
		return "must be at least " + ratText(k.Want)
	case *kind.Maximum:
		return "must be at most " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratText(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratText(k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("must not repeat items (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "must contain a matching item"
	case *kind.MinContains:
		return fmt.Sprintf("must contain at least %d matching items", k.Want)
	case *kind.MaxContains:
		return fmt.Sprintf("must contain at most %d matching items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d members", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d members", k.Want)
	case *kind.FalseSchema, *kind.Not:
		return "not allowed"
	case *kind.AnyOf:
		return "does not match any of the allowed forms"
	case *kind.OneOf:
		if k.Subschemas != nil {
			return "matches more than one of the allowed forms"
		}
		return "does not match any of the allowed forms"
	}
	return k.LocalizedString(english)
}

// typeNames words a list of JSON types; null is left out since a missing value is worded
// by required, not by type.
func typeNames(want []string) string {
	var names []string
	for _, t := range want {
		if t != "null" {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return "null"
	}
	return strings.Join(names, " or ")
}

func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// jsonText writes a schema value (an enum member, a const) as JSON, so a string reads
// "a b" rather than a b.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ratText writes a schema bound exactly when it is whole, and in shortest form
// otherwise.
func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
