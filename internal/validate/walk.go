package validate

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// walker checks one instance against the schema, reporting each finding to add.
type walker struct {
	iv  *Validator
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
