package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxIssues bounds the issues of one reply; a huge array of bad items is not worth a
// huge error.
const maxIssues = 50

// Validator checks decoded inputs against a flow's input schema, prepared once when
// the flow is bound. It uses jsonschema-go, the library the schema is inferred and
// published with, whose validator stops at the first problem and does not say where it
// is; so a walker of our own descends the instance along the schema's structure and
// checks the common keywords itself, each issue on its field, and hands each node's
// other keywords (pattern, anyOf, oneOf, not, ...) to jsonschema-go, at that node's
// path. A caller sees every problem, each on its field. (A fuller validator library was
// tried; its package init alone made every client binary, which links this package,
// too large.)
type Validator struct {
	root  *jsonschema.Schema
	nodes map[*jsonschema.Schema]*nodeCheck
	fast  *fastNode // what Accepts reads
}

// nodeCheck is what was prepared at bind time for one schema node.
type nodeCheck struct {
	// rest holds the node's keywords the walker does not check itself, resolved with the
	// root's $defs attached; nil when there are none.
	rest *jsonschema.Resolved
	// patterns are the node's patternProperties, compiled, in key order.
	patterns []namedPattern
	// whole is set when the node uses unevaluatedProperties or unevaluatedItems, which
	// depend on everything else the node evaluates: rest is then the whole node and the
	// walker does not descend beneath it.
	whole bool
	// never is set for the false schema, which no value meets.
	never bool
}

type namedPattern struct {
	re     *regexp.Regexp
	schema *jsonschema.Schema
}

// Compile prepares s. The schema must be self-contained: a $ref to anything outside it
// is an error here, never a fetch at run time. A nil s (an input type JSON Schema cannot
// describe) gives the nil validator, which accepts any input, as no schema was published
// to hold it to.
func Compile(s *jsonschema.Schema) (*Validator, error) {
	if s == nil {
		return nil, nil
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, err
	}
	iv := &Validator{root: s, nodes: map[*jsonschema.Schema]*nodeCheck{}}
	if err := iv.prepare(s); err != nil {
		return nil, err
	}
	iv.fast = iv.fastOf(s, map[*jsonschema.Schema]*fastNode{})
	return iv, nil
}

// prepare builds the nodeCheck of s and of every schema beneath it.
func (iv *Validator) prepare(s *jsonschema.Schema) error {
	if s == nil || iv.nodes[s] != nil {
		return nil
	}
	nc := &nodeCheck{}
	iv.nodes[s] = nc
	nc.never = isFalse(s)
	rest := iv.residual(s)
	if err := checkCounts(s); err != nil {
		return err
	}
	if rest != nil {
		nc.whole = s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil
		r, err := rest.Resolve(nil)
		if err != nil {
			return err
		}
		nc.rest = r
	}
	for _, k := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		re, err := regexp.Compile(k)
		if err != nil {
			return fmt.Errorf("patternProperties %q: %w", k, err)
		}
		nc.patterns = append(nc.patterns, namedPattern{re, s.PatternProperties[k]})
	}
	var subs []*jsonschema.Schema
	subs = append(subs, s.Items, s.AdditionalItems, s.AdditionalProperties, s.PropertyNames,
		s.Contains, s.If, s.Then, s.Else)
	subs = append(subs, s.PrefixItems...)
	subs = append(subs, s.ItemsArray...)
	subs = append(subs, s.AllOf...)
	for _, m := range []map[string]*jsonschema.Schema{s.Defs, s.Definitions, s.Properties,
		s.PatternProperties, s.DependentSchemas, s.DependencySchemas} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			subs = append(subs, m[k])
		}
	}
	for _, sub := range subs {
		if err := iv.prepare(sub); err != nil {
			return err
		}
	}
	return nil
}

// residual is a shallow copy of s without the keywords the walker checks or descends
// along, with the root's $defs attached so that its references resolve; nil when
// nothing is left. A node using unevaluated* keeps everything, as those depend on it.
func (iv *Validator) residual(s *jsonschema.Schema) *jsonschema.Schema {
	if iv.nodes[s].never {
		return nil
	}
	r := *s
	r.ID, r.Anchor, r.DynamicAnchor = "", "", ""
	if s.UnevaluatedProperties == nil && s.UnevaluatedItems == nil {
		r.Schema, r.Ref, r.Comment, r.Defs, r.Definitions = "", "", "", nil, nil
		r.Title, r.Description, r.Default, r.Examples = "", "", nil, nil
		r.Deprecated, r.ReadOnly, r.WriteOnly = false, false, false
		r.Type, r.Types, r.Enum, r.Const = "", nil, nil, nil
		r.MultipleOf, r.Minimum, r.Maximum, r.ExclusiveMinimum, r.ExclusiveMaximum = nil, nil, nil, nil, nil
		r.MinLength, r.MaxLength = nil, nil
		r.PrefixItems, r.Items, r.ItemsArray, r.AdditionalItems = nil, nil, nil, nil
		r.MinItems, r.MaxItems, r.UniqueItems = nil, nil, false
		r.Contains, r.MinContains, r.MaxContains = nil, nil, nil
		r.MinProperties, r.MaxProperties, r.Required = nil, nil, nil
		r.DependentRequired, r.DependencyStrings = nil, nil
		r.Properties, r.PatternProperties, r.AdditionalProperties, r.PropertyNames = nil, nil, nil, nil
		r.AllOf, r.If, r.Then, r.Else = nil, nil, nil, nil
		r.DependentSchemas, r.DependencySchemas = nil, nil
		r.ContentEncoding, r.ContentMediaType, r.ContentSchema = "", "", nil
		r.Format, r.PropertyOrder = "", nil
		if r.Pattern == "" && r.AnyOf == nil && r.OneOf == nil && r.Not == nil &&
			r.DynamicRef == "" {
			return nil
		}
		r.Extra = nil
	} else {
		r.Defs, r.Definitions = nil, nil
	}
	r.Schema = iv.root.Schema
	// The keywords kept are copied, so that the copy with the root's $defs forms a tree
	// even when s is one of those definitions.
	raw, err := json.Marshal(&r)
	if err != nil {
		return &r
	}
	var fresh jsonschema.Schema
	if err := json.Unmarshal(raw, &fresh); err != nil {
		return &r
	}
	fresh.Defs, fresh.Definitions = iv.root.Defs, iv.root.Definitions
	return &fresh
}

// checkCounts refuses the counts and divisors the specification requires to be
// non-negative (or, for multipleOf, positive), which jsonschema-go does not check, and
// numeric keywords that are not finite numbers (NaN or ±Inf, which only a schema built
// in Go can hold, and no JSON number can be compared with).
func checkCounts(s *jsonschema.Schema) error {
	for _, c := range []struct {
		name string
		n    *int
	}{
		{"minLength", s.MinLength}, {"maxLength", s.MaxLength}, {"minItems", s.MinItems},
		{"maxItems", s.MaxItems}, {"minContains", s.MinContains}, {"maxContains", s.MaxContains},
		{"minProperties", s.MinProperties}, {"maxProperties", s.MaxProperties},
	} {
		if c.n != nil && *c.n < 0 {
			return fmt.Errorf("%s: %d is negative", c.name, *c.n)
		}
	}
	for _, b := range []struct {
		name string
		f    *float64
	}{
		{"minimum", s.Minimum}, {"maximum", s.Maximum}, {"exclusiveMinimum", s.ExclusiveMinimum},
		{"exclusiveMaximum", s.ExclusiveMaximum}, {"multipleOf", s.MultipleOf},
	} {
		if b.f != nil && (math.IsNaN(*b.f) || math.IsInf(*b.f, 0)) {
			return fmt.Errorf("%s: %v is not a finite number", b.name, *b.f)
		}
	}
	if s.MultipleOf != nil && !(*s.MultipleOf > 0) {
		return fmt.Errorf("multipleOf: %v is not positive", *s.MultipleOf)
	}
	return nil
}

// isFalse reports whether s is the false schema (which jsonschema-go holds as {"not":{}}).
func isFalse(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && string(b) == "false"
}

// Validate checks v, a decoded JSON value with numbers as json.Number, and returns every
// issue (at most [maxIssues]) ordered by path, then message.
func (iv *Validator) Validate(v any) []Issue {
	if iv == nil {
		return nil
	}
	var sel firstFindings
	if !numbersInRange(v) {
		badNumbers(v, nil, &sel)
		return issuesOf(v, &sel)
	}
	w := &walker{iv: iv, add: sel.add}
	w.walk(iv.root, v, nil, nil)
	if len(sel.kept) == 0 {
		return nil
	}
	return issuesOf(v, &sel)
}

// lookup finds the schema a local reference names: "#", or a JSON Pointer into the root
// such as "#/$defs/node". Resolve, at bind time, has already refused any other.
func (iv *Validator) lookup(ref string) *jsonschema.Schema {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	if ptr == "" {
		return iv.root
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		t, _ = url.PathUnescape(t)
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	s := iv.root
	for i := 0; i < len(toks) && s != nil; i++ {
		next := func(m map[string]*jsonschema.Schema) *jsonschema.Schema {
			if i+1 >= len(toks) {
				return nil
			}
			i++
			return m[toks[i]]
		}
		index := func(l []*jsonschema.Schema) *jsonschema.Schema {
			if i+1 >= len(toks) {
				return nil
			}
			i++
			k, err := strconv.Atoi(toks[i])
			if err != nil || k < 0 || k >= len(l) {
				return nil
			}
			return l[k]
		}
		switch toks[i] {
		case "$defs":
			s = next(s.Defs)
		case "definitions":
			s = next(s.Definitions)
		case "properties":
			s = next(s.Properties)
		case "patternProperties":
			s = next(s.PatternProperties)
		case "dependentSchemas":
			s = next(s.DependentSchemas)
		case "items":
			if s.ItemsArray != nil {
				s = index(s.ItemsArray)
			} else {
				s = s.Items
			}
		case "prefixItems":
			s = index(s.PrefixItems)
		case "allOf":
			s = index(s.AllOf)
		case "anyOf":
			s = index(s.AnyOf)
		case "oneOf":
			s = index(s.OneOf)
		case "additionalProperties":
			s = s.AdditionalProperties
		case "additionalItems":
			s = s.AdditionalItems
		case "not":
			s = s.Not
		case "if":
			s = s.If
		case "then":
			s = s.Then
		case "else":
			s = s.Else
		case "contains":
			s = s.Contains
		case "propertyNames":
			s = s.PropertyNames
		default:
			return nil
		}
	}
	return s
}
