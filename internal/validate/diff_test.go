package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// The differential tests hold the new validator against two others on generated
// schemas and instances, and its fast path (Accepts) against it (checkAccepts):
//
//   - legacyValidate, the hand-written validator it replaced (kept here as the record of
//     the old behaviour), on the keywords that one knew: every issue, path and message
//     must be the same;
//   - jsonschema-go's own Resolve and Validate, on every keyword both implement: the
//     verdict (valid or not) must be the same.

// legacyValidate is the former validateValue, unchanged but for its name: it checked a
// subset of JSON Schema and skipped other keywords silently.
func legacyValidate(s *jsonschema.Schema, v any, path string, issues *[]Issue) {
	if s == nil || len(*issues) >= 50 {
		return
	}
	add := func(format string, args ...any) {
		*issues = append(*issues, Issue{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	got := legacyJSONTypeOf(v)
	if s.Type != "" || len(s.Types) > 0 {
		if !legacyTypeAllowed(s, got, v) {
			add("expected %s, got %s", legacyTypeNames(s), got)
			return
		}
	}
	if len(s.Enum) > 0 && !legacyInEnum(s.Enum, v) {
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
			legacyValidate(s.Items, item, path+"["+strconv.Itoa(i)+"]", issues)
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := val[name]; !ok {
				*issues = append(*issues, Issue{Path: join(path, name), Message: "required"})
			}
		}
		keys := make([]string, 0, len(val))
		for k := range val {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := s.Properties[k]; ok {
				legacyValidate(ps, val[k], join(path, k), issues)
			} else if s.AdditionalProperties != nil && s.Properties == nil {
				legacyValidate(s.AdditionalProperties, val[k], join(path, k), issues)
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

func legacyJSONTypeOf(v any) string {
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

func legacyTypeAllowed(s *jsonschema.Schema, got string, v any) bool {
	ok := func(t string) bool {
		if t == got {
			return true
		}
		if t == "number" && got == "integer" {
			return true
		}
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

func legacyTypeNames(s *jsonschema.Schema) string {
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

func legacyInEnum(enum []any, v any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}

// gen makes random schemas and instances that sit near the schemas' bounds, so about
// half the instances are valid. legacy limits schemas to what legacyValidate knew and
// checked the way JSON Schema means it.
type gen struct {
	r      *rand.Rand
	legacy bool
}

var (
	genNames   = []string{"a", "b", "c", "0", "é"}
	genStrings = []string{"", "a", "ab", "abc", "é", "éé", "a1", "12", "ABC", "a b"}
	genNumbers = []float64{-2, -1, -0.5, 0, 0.25, 1, 2, 2.5, 3, 4}
)

func (g *gen) pick(n int) int { return g.r.IntN(n) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) num() float64 { return genNumbers[g.pick(len(genNumbers))] }

func (g *gen) schema(depth int) *jsonschema.Schema {
	kinds := 5
	if depth < 3 {
		kinds = 9
	}
	switch g.pick(kinds) {
	case 0:
		return &jsonschema.Schema{}
	case 1:
		return &jsonschema.Schema{Type: "boolean"}
	case 2:
		s := &jsonschema.Schema{Type: "string"}
		if g.chance(0.3) {
			s.Enum = []any{genStrings[1], genStrings[3], genStrings[4]}[:2+g.pick(2)]
			return s
		}
		if g.chance(0.5) {
			s.MinLength = new(g.pick(4))
		}
		if g.chance(0.5) {
			s.MaxLength = new(g.pick(4))
		}
		if !g.legacy {
			switch g.pick(4) {
			case 0:
				s.Pattern = []string{"^[a-z]+$", "[0-9]", "^.{2}$"}[g.pick(3)]
			case 1:
				s.Const = new(any(genStrings[g.pick(len(genStrings))]))
			}
		}
		return s
	case 3, 4:
		s := &jsonschema.Schema{Type: []string{"integer", "number"}[g.pick(2)]}
		if g.chance(0.25) {
			s.Enum = []any{1.0, 2.5, -1.0}[:2+g.pick(2)]
			return s
		}
		if g.chance(0.5) {
			s.Minimum = new(g.num())
		}
		if g.chance(0.5) {
			s.Maximum = new(g.num())
		}
		if !g.legacy {
			if g.chance(0.3) {
				s.ExclusiveMinimum = new(g.num())
			}
			if g.chance(0.3) {
				s.ExclusiveMaximum = new(g.num())
			}
			if g.chance(0.3) {
				s.MultipleOf = new([]float64{0.5, 2, 3}[g.pick(3)])
			}
		}
		return s
	case 5, 6:
		s := &jsonschema.Schema{Type: "array", Items: g.schema(depth + 1)}
		if g.chance(0.3) {
			s.Type, s.Types = "", []string{"null", "array"}
		}
		if g.chance(0.4) {
			s.MinItems = new(g.pick(3))
		}
		if g.chance(0.4) {
			s.MaxItems = new(g.pick(4))
		}
		if !g.legacy && g.chance(0.2) {
			s.UniqueItems = true
		}
		return s
	case 7:
		s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
		for _, name := range genNames[:1+g.pick(len(genNames))] {
			if g.chance(0.7) {
				s.Properties[name] = g.schema(depth + 1)
				if g.chance(0.5) {
					s.Required = append(s.Required, name)
				}
			}
		}
		if !g.legacy {
			if g.chance(0.4) {
				s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
			}
			if g.chance(0.2) {
				s.MinProperties = new(1 + g.pick(2))
			}
		}
		return s
	default:
		if !g.legacy && g.chance(0.5) {
			subs := []*jsonschema.Schema{g.schema(depth + 1), g.schema(depth + 1)}
			switch g.pick(4) {
			case 0:
				return &jsonschema.Schema{AnyOf: subs}
			case 1:
				return &jsonschema.Schema{OneOf: subs}
			case 2:
				return &jsonschema.Schema{AllOf: subs}
			default:
				return &jsonschema.Schema{Not: subs[0]}
			}
		}
		return &jsonschema.Schema{Type: "object", AdditionalProperties: g.schema(depth + 1)}
	}
}

// root wraps a schema in $defs and $ref now and then, outside legacy mode.
func (g *gen) root() *jsonschema.Schema {
	s := g.schema(0)
	if !g.legacy && g.chance(0.2) {
		return &jsonschema.Schema{Defs: map[string]*jsonschema.Schema{"d": s}, Ref: "#/$defs/d"}
	}
	return s
}

// instance makes a value for s: mostly of the right shape, near its bounds, sometimes of
// another type altogether.
func (g *gen) instance(s *jsonschema.Schema, depth int) any {
	if g.chance(0.1) || depth > 4 {
		return g.any(depth)
	}
	for _, sub := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf} {
		if len(sub) > 0 {
			return g.instance(sub[g.pick(len(sub))], depth)
		}
	}
	if s.Ref != "" {
		return g.instance(s.Defs["d"], depth)
	}
	t := s.Type
	if len(s.Types) > 0 {
		t = s.Types[g.pick(len(s.Types))]
	}
	if len(s.Enum) > 0 && g.chance(0.7) {
		return toJSONValue(s.Enum[g.pick(len(s.Enum))])
	}
	switch t {
	case "null":
		return nil
	case "boolean":
		return g.chance(0.5)
	case "string":
		return genStrings[g.pick(len(genStrings))]
	case "integer", "number":
		v := g.num()
		if g.chance(0.4) {
			v = math.Trunc(v)
		}
		return toJSONValue(v)
	case "array":
		n := g.pick(5)
		out := make([]any, n)
		for i := range out {
			if s.Items != nil {
				out[i] = g.instance(s.Items, depth+1)
			} else {
				out[i] = g.any(depth + 1)
			}
		}
		return out
	case "object":
		out := map[string]any{}
		for name, p := range s.Properties {
			if g.chance(0.8) {
				out[name] = g.instance(p, depth+1)
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Not == nil {
			for range g.pick(3) {
				out[genNames[g.pick(len(genNames))]+"x"] = g.instance(s.AdditionalProperties, depth+1)
			}
		} else if g.chance(0.15) {
			out["extra"] = g.any(depth + 1)
		}
		return out
	}
	return g.any(depth)
}

func (g *gen) any(depth int) any {
	n := 7
	if depth > 3 {
		n = 5
	}
	switch g.pick(n) {
	case 0:
		return nil
	case 1:
		return g.chance(0.5)
	case 2:
		return genStrings[g.pick(len(genStrings))]
	case 3, 4:
		return toJSONValue(g.num())
	case 5:
		return []any{g.any(depth + 1)}
	default:
		return map[string]any{genNames[g.pick(len(genNames))]: g.any(depth + 1)}
	}
}

// toJSONValue writes a Go number as the json.Number a request would carry.
func toJSONValue(v any) any {
	if f, ok := v.(float64); ok {
		return json.Number(strconv.FormatFloat(f, 'f', -1, 64))
	}
	return v
}

// decodeBoth decodes raw as a request is decoded (numbers as json.Number) and as
// jsonschema-go wants it (numbers as float64).
func decodeBoth(raw []byte) (withNumbers, withFloats any, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&withNumbers); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(raw, &withFloats); err != nil {
		return nil, nil, err
	}
	return withNumbers, withFloats, nil
}

// normal puts issues in one order and words the enum message one way, for comparing the
// legacy validator's issues with the new ones.
func normal(list []Issue) []Issue {
	out := slices.Clone(list)
	for i := range out {
		if strings.HasPrefix(out[i].Message, "must be one of ") {
			out[i].Message = "must be one of …"
		}
	}
	slices.SortFunc(out, func(a, b Issue) int {
		return strings.Compare(a.Path+"\x00"+a.Message, b.Path+"\x00"+b.Message)
	})
	return out
}

// simpleNumbers reports whether every number in v is small and a multiple of 1/1024:
// where float64 arithmetic (jsonschema-go's) and exact arithmetic (the validator's)
// cannot disagree.
func simpleNumbers(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.Abs(x) <= 1e6 && x*1024 == math.Trunc(x*1024)
	case []any:
		for _, item := range x {
			if !simpleNumbers(item) {
				return false
			}
		}
	case map[string]any:
		for _, item := range x {
			if !simpleNumbers(item) {
				return false
			}
		}
	}
	return true
}

// checkInvariants holds for any schema and instance: at most maxIssues issues, the same
// ones on a second run, and each on a field the instance has (or, for a missing or
// unknown member, on a member of an object it has).
func checkInvariants(t *testing.T, iv *Validator, inst any, raw []byte) []Issue {
	t.Helper()
	got := iv.Validate(inst)
	if len(got) > maxIssues {
		t.Fatalf("%s: %d issues", raw, len(got))
	}
	if again := iv.Validate(inst); !reflect.DeepEqual(got, again) {
		t.Fatalf("%s: issues differ between runs:\n%+v\n%+v", raw, got, again)
	}
	if !plainKeys(inst) {
		return got
	}
	for _, is := range got {
		if is.Message == "" {
			t.Fatalf("%s: issue without a message: %+v", raw, is)
		}
		if at, ok := resolve(inst, is.Path); ok {
			if n, isNum := at.(json.Number); is.Message == "number out of range" && (!isNum || numberInRange(string(n))) {
				t.Fatalf("%s: %v refused as out of range", raw, at)
			}
			continue
		}
		if parent, ok := resolve(inst, parentPath(is.Path)); ok {
			if _, isObj := parent.(map[string]any); isObj {
				continue
			}
		}
		t.Fatalf("%s: issue %+v is on no field of the input", raw, is)
	}
	return got
}

// plainKeys reports whether no member name of v holds a path separator, so that issue
// paths can be resolved back without ambiguity.
func plainKeys(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			if !plainKeys(item) {
				return false
			}
		}
	case map[string]any:
		for k, item := range x {
			if k == "" || strings.ContainsAny(k, ".[]") || !plainKeys(item) {
				return false
			}
		}
	}
	return true
}

// resolve finds the value at an issue path ("a.b[0]").
func resolve(v any, path string) (any, bool) {
	for path != "" {
		if strings.HasPrefix(path, "[") {
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:end])
			arr, ok := v.([]any)
			if err != nil || !ok || i >= len(arr) {
				return nil, false
			}
			v, path = arr[i], path[end+1:]
			continue
		}
		path = strings.TrimPrefix(path, ".")
		end := strings.IndexAny(path, ".[")
		if end < 0 {
			end = len(path)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[path[:end]]; !ok {
			return nil, false
		}
		path = path[end:]
	}
	return v, true
}

func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// TestValidateDifferential runs generated schemas and instances through the validator,
// the legacy validator and jsonschema-go.
func TestValidateDifferential(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{true, false} {
		g := &gen{r: rand.New(rand.NewPCG(1, 2)), legacy: legacy}
		valid, invalid := 0, 0
		for i := range 3000 {
			s := g.root()
			iv, err := Compile(s)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			raw, err := json.Marshal(g.instance(s, 0))
			if err != nil {
				t.Fatal(err)
			}
			inst, floats, err := decodeBoth(raw)
			if err != nil {
				t.Fatal(err)
			}
			schemaText, _ := json.Marshal(s)
			got := checkInvariants(t, iv, inst, raw)
			checkAccepts(t, iv, raw, got)
			if len(got) == 0 {
				valid++
			} else {
				invalid++
			}
			if legacy {
				var old []Issue
				legacyValidate(s, inst, "", &old)
				if !reflect.DeepEqual(normal(got), normal(old)) {
					t.Errorf("case %d: schema %s\ninput %s\nissues %+v\nlegacy %+v", i, schemaText, raw, got, old)
				}
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				t.Fatalf("case %d: jsonschema-go cannot resolve %s: %v", i, schemaText, err)
			}
			if jsErr := rs.Validate(floats); (jsErr == nil) != (len(got) == 0) {
				t.Errorf("case %d: schema %s\ninput %s\nissues %+v\njsonschema-go: %v", i, schemaText, raw, got, jsErr)
			}
		}
		// Both verdicts must be common, or the comparison proves little.
		if valid < 600 || invalid < 600 {
			t.Errorf("legacy=%v: %d valid and %d invalid of 3000; the generator is off balance", legacy, valid, invalid)
		}
		t.Logf("legacy=%v: %d valid, %d invalid", legacy, valid, invalid)
	}
}

// FuzzInputValidation validates arbitrary inputs against schemas generated from the
// seed: the invariants of checkInvariants always, jsonschema-go's verdict where numbers
// are simple, and the legacy validator's issues on legacy schemas.
func FuzzInputValidation(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `[1,"a",null]`, `"abc"`, `2.5`, `{"a":{"b":[{}]}}`, `[[1],[2,3]]`, `true`, `1e-999999`} {
		f.Add(uint64(len(s)), []byte(s))
	}
	f.Fuzz(func(t *testing.T, seed uint64, raw []byte) {
		g := &gen{r: rand.New(rand.NewPCG(seed, seed>>7)), legacy: seed%2 == 0}
		s := g.root()
		iv, err := Compile(s)
		if err != nil {
			t.Fatal(err)
		}
		inst, floats, err := decodeBoth(raw)
		if err != nil {
			return
		}
		got := checkInvariants(t, iv, inst, raw)
		checkAccepts(t, iv, raw, got)
		if !simpleNumbers(floats) || slices.ContainsFunc(got, func(is Issue) bool { return is.Message == "number out of range" }) {
			return // where float64 and exact arithmetic differ, or numbers refused on purpose
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		schemaText, _ := json.Marshal(s)
		if jsErr := rs.Validate(floats); (jsErr == nil) != (len(got) == 0) {
			t.Fatalf("schema %s\ninput %s\nissues %+v\njsonschema-go: %v", schemaText, raw, got, jsErr)
		}
		if g.legacy {
			// The legacy validator read numbers as written; give it the canonical form
			// a float64 round trip yields, as both sides then see the same number.
			canon, _ := json.Marshal(floats)
			inst, _, _ := decodeBoth(canon)
			var old []Issue
			legacyValidate(s, inst, "", &old)
			if got := iv.Validate(inst); len(old) < maxIssues && !reflect.DeepEqual(normal(got), normal(old)) {
				t.Fatalf("schema %s\ninput %s\nissues %+v\nlegacy %+v", schemaText, canon, got, old)
			}
		}
	})
}
