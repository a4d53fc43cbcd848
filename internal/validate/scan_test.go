package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// checkAccepts holds Accepts to Validate: it may say yes only to a valid input, and must
// say yes to every valid one when it reads the whole schema (no node left to Validate),
// the input is exactly one JSON value and gives no member twice (the one case where
// Accepts, which checks every occurrence, and a decoded map, which keeps the last, see
// different values).
func checkAccepts(t *testing.T, iv *Validator, raw []byte, issues []Issue) {
	t.Helper()
	accepted := iv.Accepts(raw)
	if accepted && len(issues) > 0 {
		t.Fatalf("Accepts said yes to %s, which has issues %+v", raw, issues)
	}
	if !accepted && len(issues) == 0 && readsWhole(iv.fast, map[*fastNode]bool{}) && json.Valid(raw) && !repeatsMember(raw) {
		t.Fatalf("Accepts said no to %s, which is valid, though it reads the whole schema", raw)
	}
}

// readsWhole reports whether no node Accepts can reach is left to Validate.
func readsWhole(n *fastNode, seen map[*fastNode]bool) bool {
	if n == nil || seen[n] {
		return true
	}
	seen[n] = true
	if n.unsure {
		return false
	}
	for _, p := range n.props {
		if !readsWhole(p.node, seen) {
			return false
		}
	}
	return readsWhole(n.items, seen) && readsWhole(n.extra, seen)
}

// repeatsMember reports whether some object of raw (valid JSON) gives a member twice.
func repeatsMember(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next string token is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			name, _ := tok.(string)
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			if top.names[name] {
				return true
			}
			top.names[name] = true
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true // this token is the member's value (or opens it)
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
		}
	}
}

func TestRepeatsMember(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		`{"a":1,"b":2}`:                 false,
		`{"a":1,"a":2}`:                 true,
		`{"a":{"a":1},"b":[{"a":1}]}`:   false,
		`{"a":{"b":1,"b":2}}`:           true,
		`[{"a":1},{"a":1}]`:             false,
		`{"a":[1,{"x":1}],"b":1,"a":3}`: true,
		`{}`:                            false,
	} {
		if got := repeatsMember([]byte(raw)); got != want {
			t.Errorf("repeatsMember(%s) = %v, want %v", raw, got, want)
		}
	}
}

// TestAccepts checks the fast path's verdict where it takes care to be exact: numbers at
// a bound (equal as float64, not as written), integers written as decimals, multipleOf
// in integers and in fractions, string contents behind escapes, member names that
// encoding/json would match without regard to case, and the limits on numbers. Each
// schema is one Accepts reads whole, so its verdict must be Validate's.
func TestAccepts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		schema, input string
		want          bool
	}{
		{`{"type":"number","maximum":1}`, `1`, true},
		{`{"type":"number","maximum":1}`, `1.0`, true},
		{`{"type":"number","maximum":1}`, `1.00000000000000000001`, false},
		{`{"type":"number","minimum":0.1}`, `0.1`, true},
		{`{"type":"number","minimum":0.1}`, `0.09999999999999999999`, false},
		{`{"type":"number","exclusiveMinimum":0}`, `0`, false},
		{`{"type":"number","exclusiveMinimum":0}`, `1e-320`, true},
		{`{"type":"number","exclusiveMaximum":0}`, `-0`, false},
		{`{"type":"number","minimum":-128,"maximum":127}`, `-128`, true},
		{`{"type":"number","minimum":-128,"maximum":127}`, `128`, false},
		{`{"type":"integer"}`, `2`, true},
		{`{"type":"integer"}`, `2.0`, true},
		{`{"type":"integer"}`, `25e-1`, false},
		{`{"type":"integer"}`, `1E2`, true},
		{`{"type":"integer"}`, `2.5`, false},
		{`{"type":"integer"}`, `"2"`, false},
		{`{"type":["null","integer"]}`, `null`, true},
		{`{"type":"integer"}`, `null`, false},
		{`{"multipleOf":3}`, `9`, true},
		{`{"multipleOf":3}`, `-9`, true},
		{`{"multipleOf":3}`, `10`, false},
		{`{"multipleOf":3}`, `9.0`, true},
		{`{"multipleOf":3}`, `9.5`, false},
		{`{"multipleOf":0.1}`, `0.3`, true},
		{`{"multipleOf":0.1}`, `0.35`, false},
		{`{"multipleOf":2}`, `123456789012345678901234`, true},
		{`{"enum":[1,"a",null,true]}`, `1.0`, true},
		{`{"enum":[1,"a",null,true]}`, `"a"`, true},
		{`{"enum":[1,"a",null,true]}`, `"\u0061"`, true},
		{`{"enum":[1,"a",null,true]}`, `true`, true},
		{`{"enum":[1,"a",null,true]}`, `null`, true},
		{`{"enum":[1,"a",null,true]}`, `false`, false},
		{`{"enum":[1,"a",null,true]}`, `1.0000000000000000001`, false},
		{`{"enum":[1,"a",null,true]}`, `{}`, false},
		{`{"enum":[1,"a",null,true]}`, `[]`, false},
		{`{"const":"x"}`, `"x"`, true},
		{`{"const":"x"}`, `"y"`, false},
		{`{"type":"string","minLength":2,"maxLength":3}`, `"éé"`, true},
		{`{"type":"string","minLength":2,"maxLength":3}`, `"\u00e9"`, false},
		{`{"type":"string","minLength":2,"maxLength":3}`, `"a\"c"`, true},
		{`{"type":"string","minLength":2,"maxLength":3}`, `"ab\\cd"`, false},
		{`{"type":"string","maxLength":1}`, "\"\xff\"", true},
		{`{"type":"string","pattern":"^[0-9]+$"}`, `"123"`, true},
		{`{"type":"string","pattern":"^[0-9]+$"}`, `"12a"`, false},
		{`{"type":"string","format":"email"}`, `"a@b.example"`, true},
		{`{"type":"string","format":"email"}`, `"a@"`, false},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, `{"a":1}`, true},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, `{"A":1}`, false},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, `{"\u0061":1}`, true},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, `{}`, false},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, `{"a":1,"b":2}`, false},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, `{"x":"1","y":"2"}`, true},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, `{"x":"1","y":2}`, false},
		{`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":2}`, `[1, 2]`, true},
		{`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":2}`, `[]`, false},
		{`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":2}`, `[1,2,3]`, false},
		{`{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":2}`, `[1,"2"]`, false},
		{`{}`, `[1e400]`, false},
		{`{}`, `{"a":[1e-401]}`, false},
		{`{}`, `[0e400]`, true},
		{`{}`, `[0e401]`, false},
		{`{}`, `1` + strings.Repeat("0", 100), false},
		{`{}`, `1e400000000000000000000`, false},
		{`{}`, `{"a":[1e300,"x",null,{"b":true}]}`, true},
		{`{}`, ` {"a" : [ 1 , 2 ] } `, true},
		{`{"type":"number"}`, `1 2`, false},
		{`{"type":"number"}`, `01`, false},
		{`{"type":"number"}`, `-`, false},
		{`{"type":"number"}`, `1.`, false},
		{`{"type":"number"}`, `.5`, false},
		{`{"type":"boolean"}`, `tru`, false},
		{`{"type":"string"}`, "\"a\tb\"", false},
		{`{"type":"object"}`, `{"a" 1}`, false},
		{`{"type":"array"}`, `[1,]`, false},
		// The edges of the limits and of the input: a number of exactly 100 characters, an
		// exponent of exactly -400, nesting of exactly maxScanDepth, 64 required members
		// (each a bit), and input that ends inside a value.
		{`{"type":"number"}`, `1` + strings.Repeat("0", 99), true},
		{`{}`, `[1e-400]`, true},
		{`{}`, strings.Repeat("[", maxScanDepth+1) + strings.Repeat("]", maxScanDepth+1), true},
		{required(64), members(64), true},
		{required(64), members(63), false},
		{`{"type":"string","maxLength":2}`, `"\\\\"`, true},
		{`{"enum":["\ufffd"]}`, "\"\x80\"", true}, // a byte that is not UTF-8 decodes to U+FFFD
		{`{"type":"string"}`, `[]`, false},
		{`{"type":"boolean"}`, `trux`, false},
		{`{"type":"array"}`, `[tru`, false},
		{`{"type":"string"}`, `"abc`, false},
		{`{"type":"number"}`, `1e`, false},
		{`{"type":"object"}`, `{"a",1}`, false},
		{`{"type":"object"}`, `{"a"`, false},
		{`{"type":"array"}`, `[1`, false},
		{`{"type":"array"}`, `[`, false},
	}
	for _, c := range cases {
		iv := compileText(t, c.schema)
		if !readsWhole(iv.fast, map[*fastNode]bool{}) {
			t.Fatalf("%s: Accepts leaves part of it to Validate", c.schema)
		}
		in := []byte(c.input)
		if got := iv.Accepts(in[:len(in):len(in)]); got != c.want { // nothing past the input to read
			t.Errorf("schema %s: Accepts(%s) = %v, want %v", c.schema, c.input, got, c.want)
		}
		if !json.Valid([]byte(c.input)) {
			continue
		}
		if valid := len(iv.Validate(decodeNumbers(t, c.input))) == 0; valid != c.want {
			t.Errorf("schema %s: Validate(%s) says valid = %v, want %v", c.schema, c.input, valid, c.want)
		}
	}
}

// TestAcceptsLeavesToValidate checks that a node with a keyword Accepts does not read is
// left to Validate (Accepts says no), wherever it is in the schema, and that an input
// nested past the depth Accepts follows is too.
func TestAcceptsLeavesToValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ schema, input string }{
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, `1`},
		{`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, `{"a":1}`},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `[1,2]`},
		{`{"type":"object","minProperties":1}`, `{"a":1}`},
		{`{"type":"object","required":["b"]}`, `{"b":1}`},
		{`{"$defs":{"n":{"type":"integer"}},"$ref":"#/$defs/n"}`, `1`},
		{`{"type":"object","patternProperties":{"^x":{"type":"integer"}}}`, `{"x":1}`},
		{`{"enum":[[1]]}`, `[1]`},
		{`{"const":[1]}`, `[1]`},
		{`{}`, strings.Repeat(`{"a":`, maxScanDepth+2) + "1" + strings.Repeat("}", maxScanDepth+2)},
		{`{}`, strings.Repeat("[", maxScanDepth+2) + strings.Repeat("]", maxScanDepth+2)},
	} {
		iv := compileText(t, c.schema)
		if issues := iv.Validate(decodeNumbers(t, c.input)); len(issues) > 0 {
			t.Fatalf("%s: %s is not valid: %+v", c.schema, c.input, issues)
		}
		if iv.Accepts([]byte(c.input)) {
			t.Errorf("schema %s: Accepts(%s) said yes; it should leave it to Validate", c.schema, c.input)
		}
		if c.schema != `{}` && readsWhole(iv.fast, map[*fastNode]bool{}) { // {}: too deep to follow
			t.Errorf("schema %s: no node is left to Validate", c.schema)
		}
	}
	var none *Validator
	if !none.Accepts([]byte(`{"anything":1}`)) {
		t.Error("the nil validator refused an input")
	}
}

// required is an object schema of n integer properties, all required; members is an
// object with the first n of them.
func required(n int) string {
	props, names := make([]string, n), make([]string, n)
	for i := range n {
		props[i], names[i] = fmt.Sprintf(`"p%d":{"type":"integer"}`, i), fmt.Sprintf(`"p%d"`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(names, ",") + `]}`
}

func members(n int) string {
	ms := make([]string, n)
	for i := range n {
		ms[i] = fmt.Sprintf(`"p%d":%d`, i, i)
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// TestAcceptsGoIntegerEnumMembers checks enum members of Go type int and int64, which
// only a schema built in Go holds, exactly: 2^53+1 is not the 2^53 it rounds to.
func TestAcceptsGoIntegerEnumMembers(t *testing.T) {
	t.Parallel()
	iv, err := Compile(&jsonschema.Schema{Enum: []any{9007199254740993, int64(-9007199254740993)}})
	if err != nil {
		t.Fatal(err)
	}
	for input, want := range map[string]bool{"9007199254740993": true, "-9007199254740993": true,
		"9007199254740992": false, "-9007199254740992": false, "1": false} {
		issues := iv.Validate(decodeNumbers(t, input))
		if valid := len(issues) == 0; valid != want {
			t.Fatalf("Validate(%s) says valid = %v, want %v", input, valid, want)
		}
		checkAccepts(t, iv, []byte(input), issues)
	}
}

// compileText compiles a schema written as JSON.
func compileText(t *testing.T, schema string) *Validator {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	iv, err := Compile(&s)
	if err != nil {
		t.Fatal(err)
	}
	return iv
}

// decodeNumbers decodes raw as a request is decoded, numbers as written.
func decodeNumbers(t *testing.T, raw string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// BenchmarkAccepts compares the fast path with the long way (decode to a value, then
// Validate) on a flow input's inferred schema.
func BenchmarkAccepts(b *testing.B) {
	var s jsonschema.Schema
	schema := `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"label":{"type":"string"},
		"n":{"type":"integer","minimum":-128,"maximum":127},"tags":{"type":["null","array"],"items":{"type":"string"}}},
		"required":["a","b","label"],"additionalProperties":false}`
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		b.Fatal(err)
	}
	iv, err := Compile(&s)
	if err != nil {
		b.Fatal(err)
	}
	raw := []byte(`{"a":1.5,"b":2.25,"label":"total","n":12,"tags":["x","y"]}`)
	b.Run("accepts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !iv.Accepts(raw) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("decode-and-validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil || len(iv.Validate(v)) > 0 {
				b.Fatal("refused")
			}
		}
	})
}
