package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// validateValue checks a decoded JSON value (numbers as json.Number) against the subset of
// JSON Schema that inferred and adjusted input schemas use, collecting every issue with
// its path. The jsonschema-go validator stops at the first problem and reports it as
// text; callers of a flow deserve every problem, each tied to its field.
func validateValue(s *jsonschema.Schema, v any, path string, issues *[]ValidationIssue) {
	if s == nil || len(*issues) >= 50 {
		return
	}
	add := func(format string, args ...any) {
		*issues = append(*issues, ValidationIssue{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	got := jsonTypeOf(v)
	if s.Type != "" || len(s.Types) > 0 {
		if !typeAllowed(s, got, v) {
			add("expected %s, got %s", typeNames(s), got)
			return
		}
	}
	if len(s.Enum) > 0 && !inEnum(s.Enum, v) {
		add("must be one of %v", s.Enum)
	}
	switch val := v.(type) {
	case string:
		n := utf8.RuneCountInString(val)
		if s.MinLength != nil && n < *s.MinLength {
			if *s.MinLength == 1 {
				add("must not be empty")
			} else {
				add("must be at least %d characters", *s.MinLength)
			}
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			add("must be at most %d characters", *s.MaxLength)
		}
	case json.Number:
		f, err := val.Float64()
		if err != nil {
			add("not a finite number")
			return
		}
		if s.Minimum != nil && f < *s.Minimum {
			add("must be at least %v", *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			add("must be at most %v", *s.Maximum)
		}
	case []any:
		if s.MinItems != nil && len(val) < *s.MinItems {
			add("must have at least %d items", *s.MinItems)
		}
		if s.MaxItems != nil && len(val) > *s.MaxItems {
			add("must have at most %d items", *s.MaxItems)
		}
		for i, item := range val {
			validateValue(s.Items, item, path+"["+strconv.Itoa(i)+"]", issues)
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := val[name]; !ok {
				*issues = append(*issues, ValidationIssue{Path: join(path, name), Message: "required"})
			}
		}
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := s.Properties[k]; ok {
				validateValue(ps, val[k], join(path, k), issues)
			} else if s.AdditionalProperties != nil && s.Properties == nil {
				validateValue(s.AdditionalProperties, val[k], join(path, k), issues)
			}
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
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
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
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

func typeAllowed(s *jsonschema.Schema, got string, v any) bool {
	ok := func(t string) bool {
		if t == got {
			return true
		}
		if t == "number" && got == "integer" {
			return true
		}
		// 2.0 is an integer to JSON Schema.
		if t == "integer" && got == "number" {
			f, err := v.(json.Number).Float64()
			return err == nil && f == float64(int64(f))
		}
		return false
	}
	if s.Type != "" {
		return ok(s.Type)
	}
	for _, t := range s.Types {
		if ok(t) {
			return true
		}
	}
	return false
}

func typeNames(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	out := ""
	for i, t := range s.Types {
		if t == "null" {
			continue
		}
		if out != "" && i > 0 {
			out += " or "
		}
		out += t
	}
	return out
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}

// reflectElem returns *p for a pointer p, so a value input type's Validate method is found.
func reflectElem(p any) any {
	rv := reflect.ValueOf(p)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return nil
}
