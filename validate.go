package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxIssues bounds the issues of one reply; a huge array of bad items is not worth a
// huge error.
const maxIssues = 50

// inputValidator checks decoded inputs against a flow's input schema, prepared once when
// the flow is bound. It uses jsonschema-go, the library the schema is inferred and
// published with, whose validator stops at the first problem and does not say where it
// is; so a walker of our own descends the instance along the schema's structure and
// checks the common keywords itself, each issue on its field, and hands each node's
// other keywords (pattern, anyOf, oneOf, not, ...) to jsonschema-go, at that node's
// path. A caller sees every problem, each on its field. (A fuller validator library was
// tried; its package init alone made every client binary, which links this package,
// too large.)
type inputValidator struct {
	root  *jsonschema.Schema
	nodes map[*jsonschema.Schema]*nodeCheck
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

// compileInput prepares s. The schema must be self-contained: a $ref to anything outside
// it is an error here, never a fetch at run time. A nil s (an input type JSON Schema
// cannot describe) gives the nil validator, which accepts any input, as Define published
// no schema to hold it to.
func compileInput(id string, s *jsonschema.Schema) (*inputValidator, error) {
	if s == nil {
		return nil, nil
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	iv := &inputValidator{root: s, nodes: map[*jsonschema.Schema]*nodeCheck{}}
	if err := iv.prepare(s); err != nil {
		return nil, fmt.Errorf("input schema of %s: %w", id, err)
	}
	return iv, nil
}

// prepare builds the nodeCheck of s and of every schema beneath it.
func (iv *inputValidator) prepare(s *jsonschema.Schema) error {
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
func (iv *inputValidator) residual(s *jsonschema.Schema) *jsonschema.Schema {
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
// non-negative (or, for multipleOf, positive), which jsonschema-go does not check.
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
	w := &walker{iv: iv, add: sel.add}
	w.walk(iv.root, v, nil, nil)
	if len(sel.kept) == 0 {
		return nil
	}
	return issuesOf(v, &sel)
}

// walker checks one instance against the schema, reporting each finding to add.
type walker struct {
	iv  *inputValidator
	add func(finding)
}

// valid reports whether v meets s, as the walker sees it.
func (w *walker) valid(s *jsonschema.Schema, v any) bool {
	ok := true
	sub := &walker{iv: w.iv, add: func(finding) { ok = false }}
	sub.walk(s, v, nil, nil)
	return ok
}

// walk checks v, at loc, against s. refs holds the references followed at this location
// without descending, so that a reference cycle is followed once.
func (w *walker) walk(s *jsonschema.Schema, v any, loc []string, refs []*jsonschema.Schema) {
	if s == nil {
		return
	}
	here := func(text string) { w.add(finding{loc: slices.Clone(loc), text: text}) }
	member := func(name, text string) {
		w.add(finding{loc: append(slices.Clone(loc), name), text: text})
	}
	at := func(tok string) []string { return append(slices.Clip(loc), tok) }
	nc := w.iv.nodes[s]
	if nc == nil { // a schema not met at bind time; prepare never misses one
		nc = &nodeCheck{never: isFalse(s)}
	}
	if nc.never {
		here("not allowed")
		return
	}
	if nc.rest != nil {
		if err := nc.rest.Validate(floats(v)); err != nil {
			here(restMessage(s, err))
		}
		if nc.whole {
			return
		}
	}
	if s.Ref != "" {
		if target := w.iv.lookup(s.Ref); target != nil && !slices.Contains(refs, target) {
			w.walk(target, v, loc, append(slices.Clip(refs), target))
		}
	}
	for _, sub := range s.AllOf {
		w.walk(sub, v, loc, refs)
	}
	if s.If != nil {
		if w.valid(s.If, v) {
			w.walk(s.Then, v, loc, refs)
		} else {
			w.walk(s.Else, v, loc, refs)
		}
	}
	if s.Type != "" || s.Types != nil {
		want := s.Types
		if s.Type != "" {
			want = []string{s.Type}
		}
		if !typeAllowed(want, v) {
			here("expected " + typeNames(want) + ", got " + jsonTypeOf(v))
			return
		}
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		if len(s.Enum) == 1 {
			here("must be " + jsonText(s.Enum[0]))
		} else {
			parts := make([]string, len(s.Enum))
			for i, e := range s.Enum {
				parts[i] = jsonText(e)
			}
			here("must be one of " + strings.Join(parts, ", "))
		}
	}
	if s.Const != nil && !jsonEqual(*s.Const, v) {
		here("must be " + jsonText(*s.Const))
	}
	switch x := v.(type) {
	case json.Number:
		w.number(s, x, here)
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			if *s.MinLength == 1 {
				here("must not be empty")
			} else {
				here(fmt.Sprintf("must be at least %d characters", *s.MinLength))
			}
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			here(fmt.Sprintf("must be at most %d characters", *s.MaxLength))
		}
		if s.Format != "" && !formatValid(s.Format, x) {
			here("must be a valid " + s.Format)
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			here(fmt.Sprintf("must have at least %d items", *s.MinItems))
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			here(fmt.Sprintf("must have at most %d items", *s.MaxItems))
		}
		// Uniqueness is not looked for in an array already too long (the issue is given),
		// and is looked for in one pass: items are bucketed by a key that equal items
		// share, and only the items of one bucket are compared.
		if s.UniqueItems && (s.MaxItems == nil || len(x) <= *s.MaxItems) {
			seen := make(map[string][]int, len(x))
			var key []byte
		dup:
			for j, item := range x {
				key = itemKey(key[:0], item)
				for _, i := range seen[string(key)] {
					if jsonEqual(x[i], item) {
						here(fmt.Sprintf("must not repeat items (items %d and %d are equal)", i, j))
						break dup
					}
				}
				seen[string(key)] = append(seen[string(key)], j)
			}
		}
		if s.Contains != nil {
			n := 0
			for _, item := range x {
				if w.valid(s.Contains, item) {
					n++
				}
			}
			switch {
			case s.MinContains != nil && n < *s.MinContains:
				here(fmt.Sprintf("must contain at least %d matching items", *s.MinContains))
			case s.MinContains == nil && n == 0:
				here("must contain a matching item")
			case s.MaxContains != nil && n > *s.MaxContains:
				here(fmt.Sprintf("must contain at most %d matching items", *s.MaxContains))
			}
		}
		prefix, rest := s.PrefixItems, s.Items
		if s.ItemsArray != nil {
			prefix, rest = s.ItemsArray, s.AdditionalItems
		}
		for i, item := range x {
			sub := rest
			if i < len(prefix) {
				sub = prefix[i]
			}
			w.walk(sub, item, at(strconv.Itoa(i)), nil)
		}
	case map[string]any:
		if s.MinProperties != nil && len(x) < *s.MinProperties {
			here(fmt.Sprintf("must have at least %d members", *s.MinProperties))
		}
		if s.MaxProperties != nil && len(x) > *s.MaxProperties {
			here(fmt.Sprintf("must have at most %d members", *s.MaxProperties))
		}
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				member(name, "required")
			}
		}
		for _, deps := range []map[string][]string{s.DependentRequired, s.DependencyStrings} {
			for prop, names := range deps {
				if _, ok := x[prop]; !ok {
					continue
				}
				for _, name := range names {
					if _, ok := x[name]; !ok {
						member(name, "required when "+prop+" is present")
					}
				}
			}
		}
		for _, deps := range []map[string]*jsonschema.Schema{s.DependentSchemas, s.DependencySchemas} {
			for prop, sub := range deps {
				if _, ok := x[prop]; ok {
					w.walk(sub, v, loc, refs)
				}
			}
		}
		for name, item := range x {
			if s.PropertyNames != nil && !w.valid(s.PropertyNames, name) {
				member(name, "not an allowed member name")
			}
			matched := false
			if sub, ok := s.Properties[name]; ok {
				matched = true
				w.walk(sub, item, at(name), nil)
			}
			for _, p := range nc.patterns {
				if p.re.MatchString(name) {
					matched = true
					w.walk(p.schema, item, at(name), nil)
				}
			}
			if !matched && s.AdditionalProperties != nil {
				if ap := w.iv.nodes[s.AdditionalProperties]; ap != nil && ap.never {
					member(name, "unknown field")
				} else {
					w.walk(s.AdditionalProperties, item, at(name), nil)
				}
			}
		}
	}
}

// floats gives v with its numbers as float64, the form jsonschema-go reads them in (the
// numbers are all within float64 range by then).
func floats(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = floats(item)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = floats(item)
		}
		return out
	}
	return v
}

// number checks the numeric keywords, exactly: a bound is taken in its shortest decimal
// form, so multipleOf 0.1 holds 0.3.
func (w *walker) number(s *jsonschema.Schema, n json.Number, here func(string)) {
	if s.Minimum == nil && s.Maximum == nil && s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil && s.MultipleOf == nil {
		return
	}
	r, ok := new(big.Rat).SetString(string(n)) // short, with a small exponent: numbersInRange
	if !ok {
		return
	}
	bound := func(f *float64, fails func(c int) bool, msg string) {
		if f != nil && fails(r.Cmp(decimal(*f))) {
			here(msg + " " + strconv.FormatFloat(*f, 'g', -1, 64))
		}
	}
	bound(s.Minimum, func(c int) bool { return c < 0 }, "must be at least")
	bound(s.Maximum, func(c int) bool { return c > 0 }, "must be at most")
	bound(s.ExclusiveMinimum, func(c int) bool { return c <= 0 }, "must be greater than")
	bound(s.ExclusiveMaximum, func(c int) bool { return c >= 0 }, "must be less than")
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		q := new(big.Rat).Quo(r, decimal(*s.MultipleOf))
		if !q.IsInt() {
			here("must be a multiple of " + strconv.FormatFloat(*s.MultipleOf, 'g', -1, 64))
		}
	}
}

// itemKey appends to b a key of JSON value v that equal values (by [jsonEqual]) share:
// numbers by the float64 they round to, object members in key order. Values that are
// not equal may share one (numbers a float64 cannot tell apart): the caller compares.
func itemKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'z')
	case bool:
		return strconv.AppendBool(append(b, 'b'), x)
	case string:
		return strconv.AppendQuote(append(b, 's'), x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return strconv.AppendFloat(append(b, 'n'), f, 'g', -1, 64)
	case float64:
		return strconv.AppendFloat(append(b, 'n'), x, 'g', -1, 64)
	case []any:
		b = append(b, '[')
		for _, e := range x {
			b = append(itemKey(b, e), ',')
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b = append(itemKey(strconv.AppendQuote(b, k), x[k]), ',')
		}
		return append(b, '}')
	}
	return fmt.Appendf(append(b, '?'), "%v", v)
}

func decimal(f float64) *big.Rat {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return r
}

// lookup finds the schema a local reference names: "#", or a JSON Pointer into the root
// such as "#/$defs/node". Resolve, at bind time, has already refused any other.
func (iv *inputValidator) lookup(ref string) *jsonschema.Schema {
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

// restMessage words jsonschema-go's error for the keywords of s it checked: the first
// problem it found, without its "validating <schema>:" prefixes, and in the terms of the
// field for the keywords a caller meets most.
func restMessage(s *jsonschema.Schema, err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	keyword, _, _ := strings.Cut(msg, ":")
	switch keyword {
	case "pattern":
		if s.Pattern != "" {
			return "must match the pattern " + s.Pattern
		}
	case "anyOf":
		return "does not match any of the allowed forms"
	case "oneOf":
		if strings.Contains(msg, "validated against both") {
			return "matches more than one of the allowed forms"
		}
		return "does not match any of the allowed forms"
	case "not":
		return "not allowed"
	}
	return msg
}

// typeAllowed reports whether v is of one of the types in want; an integer is a number,
// and a number with no fraction ("2.0") an integer.
func typeAllowed(want []string, v any) bool {
	got := jsonTypeOf(v)
	for _, t := range want {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

// jsonEqual compares two JSON values, numbers by value (1 equals 1.0) whatever their Go
// type (a schema's are float64, an instance's json.Number).
func jsonEqual(a, b any) bool {
	if ra, ok := ratOf(a); ok {
		rb, ok := ratOf(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func ratOf(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(x))
	case float64:
		return decimal(x), true
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	}
	return nil, false
}

// formatValid checks the formats JSON Schema defines that a caller is likely to meet;
// any other format is an annotation, as the specification has it.
func formatValid(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
		return err == nil && len(s) >= len("2006-01-02T15:04:05Z")
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05Z07:00", strings.ToUpper(s))
		if err != nil {
			_, err = time.Parse("15:04:05.999999999Z07:00", strings.ToUpper(s))
		}
		return err == nil
	case "email":
		local, domain, ok := strings.Cut(s, "@")
		return ok && local != "" && len(local) <= 64 && !strings.ContainsAny(local, " @<>()[],;:\\\"") &&
			!strings.HasPrefix(local, ".") && !strings.HasSuffix(local, ".") && !strings.Contains(local, "..") &&
			hostnameValid(domain)
	case "hostname":
		return hostnameValid(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	case "uuid":
		if len(s) != 36 {
			return false
		}
		for i, c := range s {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return false
				}
			} else if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
		return true
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	case "uri-reference":
		_, err := url.Parse(s)
		return err == nil
	case "regex":
		_, err := regexp.Compile(s)
		return err == nil
	}
	return true
}

func hostnameValid(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// finding is one problem before it is worded: where (JSON Pointer tokens; for a missing
// or unknown member, the object's location and the member's name) and what.
type finding struct {
	loc  []string
	text string
}

// issuesOf words the findings kept by sel in path order, then message order (the
// validator walks objects in map order), at most [maxIssues] of them.
func issuesOf(root any, sel *firstFindings) []ValidationIssue {
	kept := sel.kept
	issues := make([]ValidationIssue, len(kept))
	for i, f := range kept {
		path, _ := locate(root, f.loc)
		issues[i] = ValidationIssue{Path: path, Message: f.text}
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
