package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// keywordCase is one input checked against one schema: nil want means the input is
// valid.
type keywordCase struct {
	name   string
	schema string
	input  string
	want   []engine.ValidationIssue
}

// issue is shorthand for an expected issue.
func issue(path, msg string) engine.ValidationIssue {
	return engine.ValidationIssue{Path: path, Message: msg}
}

func issues(list ...engine.ValidationIssue) []engine.ValidationIssue { return list }

const (
	codeSchema = `{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]+$"}}}`
	treeSchema = `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
		"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"}`
	listSchema = `{"type":"object","properties":{"list":{"type":"array","items":{"type":"object",
		"properties":{"name":{"type":"string","minLength":1}},"required":["name"]}}}}`
)

const (
	emailSchema = `{"type":"string","format":"email"}`
	hostSchema  = `{"type":"string","format":"hostname"}`
)

// longHost returns a hostname of n characters, in labels of at most 63.
func longHost(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.Repeat("h", min(63, n-b.Len())))
	}
	return b.String()
}

// keywordCases covers every keyword the validator enforces, at and one past each bound.
var keywordCases = []keywordCase{
	// pattern
	{"pattern mismatch", codeSchema, `{"code":"abc"}`, issues(issue("code", "must match the pattern ^[0-9]+$"))},
	{"pattern empty", codeSchema, `{"code":""}`, issues(issue("code", "must match the pattern ^[0-9]+$"))},
	{"pattern match", codeSchema, `{"code":"0123"}`, nil},
	// format
	{"format email", `{"type":"string","format":"email"}`, `"ada@example.com"`, nil},
	{"format email bad", `{"type":"string","format":"email"}`, `"ada.example.com"`, issues(issue("", "must be a valid email"))},
	{"format date-time", `{"type":"string","format":"date-time"}`, `"2024-02-29T12:00:00Z"`, nil},
	{"format date-time no such day", `{"type":"string","format":"date-time"}`, `"2023-02-29T12:00:00Z"`, issues(issue("", "must be a valid date-time"))},
	{"format uuid", `{"type":"string","format":"uuid"}`, `"7c9e6679-7425-40de-944b-e07fc1f90ae7"`, nil},
	{"format uuid bad", `{"type":"string","format":"uuid"}`, `"7c9e6679"`, issues(issue("", "must be a valid uuid"))},
	{"format ignores other types", `{"format":"email"}`, `12`, nil},
	{"format ipv4 bad", `{"type":"string","format":"ipv4"}`, `"256.1.1.1"`, issues(issue("", "must be a valid ipv4"))},
	{"format of its own is an annotation", `{"type":"string","format":"phone"}`, `"x"`, nil},
	{"format ipv4", `{"type":"string","format":"ipv4"}`, `"192.0.2.1"`, nil},
	{"format ipv4 given ipv6", `{"type":"string","format":"ipv4"}`, `"::1"`, issues(issue("", "must be a valid ipv4"))},
	{"format time", `{"type":"string","format":"time"}`, `"12:00:00Z"`, nil},
	{"format time with a fraction", `{"type":"string","format":"time"}`, `"23:59:59.5+02:00"`, nil},
	{"format time without a zone", `{"type":"string","format":"time"}`, `"12:00:00"`, issues(issue("", "must be a valid time"))},
	{"format date", `{"type":"string","format":"date"}`, `"2024-02-29"`, nil},
	{"format date no such day", `{"type":"string","format":"date"}`, `"2023-02-29"`, issues(issue("", "must be a valid date"))},
	{"format ipv6", `{"type":"string","format":"ipv6"}`, `"2001:db8::1"`, nil},
	{"format ipv6 given ipv4", `{"type":"string","format":"ipv6"}`, `"192.0.2.1"`, issues(issue("", "must be a valid ipv6"))},
	{"format ipv6 with a zone", `{"type":"string","format":"ipv6"}`, `"fe80::1%eth0"`, issues(issue("", "must be a valid ipv6"))},
	{"format ipv6 malformed", `{"type":"string","format":"ipv6"}`, `"2001:db8:::1"`, issues(issue("", "must be a valid ipv6"))},
	{"format uri", `{"type":"string","format":"uri"}`, `"https://example.com/a?b=c"`, nil},
	{"format uri relative", `{"type":"string","format":"uri"}`, `"/a/b"`, issues(issue("", "must be a valid uri"))},
	{"format uri malformed", `{"type":"string","format":"uri"}`, `"http://a b.com/%zz"`, issues(issue("", "must be a valid uri"))},
	{"format uri-reference", `{"type":"string","format":"uri-reference"}`, `"/a/b"`, nil},
	{"format uri-reference malformed", `{"type":"string","format":"uri-reference"}`, `"%zz"`, issues(issue("", "must be a valid uri-reference"))},
	{"format regex", `{"type":"string","format":"regex"}`, `"^a+$"`, nil},
	{"format regex malformed", `{"type":"string","format":"regex"}`, `"("`, issues(issue("", "must be a valid regex"))},
	// email: the local part and the domain
	{"email local of 64", emailSchema, `"` + strings.Repeat("a", 64) + `@example.com"`, nil},
	{"email local of 65", emailSchema, `"` + strings.Repeat("a", 65) + `@example.com"`, issues(issue("", "must be a valid email"))},
	{"email empty local", emailSchema, `"@example.com"`, issues(issue("", "must be a valid email"))},
	{"email space", emailSchema, `"a b@example.com"`, issues(issue("", "must be a valid email"))},
	{"email leading dot", emailSchema, `".ab@example.com"`, issues(issue("", "must be a valid email"))},
	{"email trailing dot", emailSchema, `"ab.@example.com"`, issues(issue("", "must be a valid email"))},
	{"email two dots", emailSchema, `"a..b@example.com"`, issues(issue("", "must be a valid email"))},
	{"email dotted local", emailSchema, `"a.b@example.com"`, nil},
	{"email bad domain", emailSchema, `"ab@-example.com"`, issues(issue("", "must be a valid email"))},
	// hostname: length, labels and their characters, at each edge
	{"hostname every edge character", hostSchema, `"az.AZ.09.a-b.example."`, nil},
	{"hostname empty", hostSchema, `""`, issues(issue("", "must be a valid hostname"))},
	{"hostname of 253", hostSchema, `"` + longHost(253) + `"`, nil},
	{"hostname of 254", hostSchema, `"` + longHost(254) + `"`, issues(issue("", "must be a valid hostname"))},
	{"hostname label of 63", hostSchema, `"` + strings.Repeat("a", 63) + `.com"`, nil},
	{"hostname label of 64", hostSchema, `"` + strings.Repeat("a", 64) + `.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname empty label", hostSchema, `"a..com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname label starting with -", hostSchema, `"-a.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname label ending with -", hostSchema, `"a-.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname character before a", hostSchema, "\"a`b.com\"", issues(issue("", "must be a valid hostname"))},
	{"hostname character after z", hostSchema, `"a{b.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname character before A", hostSchema, `"a@b.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname character after Z", hostSchema, `"a[b.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname character before 0", hostSchema, `"a/b.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname character after 9", hostSchema, `"a:b.com"`, issues(issue("", "must be a valid hostname"))},
	{"hostname underscore", hostSchema, `"a_b.com"`, issues(issue("", "must be a valid hostname"))},
	// minLength, counted in characters, not bytes
	{"minLength at", `{"type":"string","minLength":3}`, `"abc"`, nil},
	{"minLength one under", `{"type":"string","minLength":3}`, `"ab"`, issues(issue("", "must be at least 3 characters"))},
	{"minLength counts characters", `{"type":"string","minLength":3}`, `"éé"`, issues(issue("", "must be at least 3 characters"))},
	{"minLength 1", `{"type":"string","minLength":1}`, `""`, issues(issue("", "must not be empty"))},
	{"minLength 1 met", `{"type":"string","minLength":1}`, `"x"`, nil},
	// maxLength
	{"maxLength at", `{"type":"string","maxLength":3}`, `"abc"`, nil},
	{"maxLength one over", `{"type":"string","maxLength":3}`, `"abcd"`, issues(issue("", "must be at most 3 characters"))},
	{"maxLength counts characters", `{"type":"string","maxLength":3}`, `"ééé"`, nil},
	// minItems, maxItems
	{"minItems at", `{"type":"array","minItems":2}`, `[1,2]`, nil},
	{"minItems one under", `{"type":"array","minItems":2}`, `[1]`, issues(issue("", "must have at least 2 items"))},
	{"maxItems at", `{"type":"array","maxItems":2}`, `[1,2]`, nil},
	{"maxItems one over", `{"type":"array","maxItems":2}`, `[1,2,3]`, issues(issue("", "must have at most 2 items"))},
	// enum, compared by JSON value and type
	{"enum member", `{"enum":["red","green"]}`, `"green"`, nil},
	{"enum miss", `{"enum":["red","green"]}`, `"blue"`, issues(issue("", `must be one of "red", "green"`))},
	{"enum one", `{"enum":["1"]}`, `1`, issues(issue("", `must be "1"`))},
	{"enum number equality", `{"enum":[1,null]}`, `1.0`, nil},
	// const
	{"const", `{"const":"x"}`, `"x"`, nil},
	{"const miss", `{"const":"x"}`, `"y"`, issues(issue("", `must be "x"`))},
	{"const object", `{"const":{"a":1}}`, `{"a":2}`, issues(issue("", `must be {"a":1}`))},
	// minimum, maximum and the exclusive bounds
	{"minimum at", `{"minimum":1}`, `1`, nil},
	{"minimum under", `{"minimum":1}`, `0.999`, issues(issue("", "must be at least 1"))},
	{"maximum at", `{"maximum":10}`, `10`, nil},
	{"maximum over", `{"maximum":10}`, `10.000001`, issues(issue("", "must be at most 10"))},
	{"maximum fraction", `{"maximum":2.5}`, `3`, issues(issue("", "must be at most 2.5"))},
	{"exclusiveMinimum at", `{"exclusiveMinimum":0}`, `0`, issues(issue("", "must be greater than 0"))},
	{"exclusiveMinimum over", `{"exclusiveMinimum":0}`, `0.001`, nil},
	{"exclusiveMaximum at", `{"exclusiveMaximum":1}`, `1`, issues(issue("", "must be less than 1"))},
	{"exclusiveMaximum under", `{"exclusiveMaximum":1}`, `0.999`, nil},
	// multipleOf, exact in decimal
	{"multipleOf decimal", `{"multipleOf":0.1}`, `0.3`, nil},
	{"multipleOf decimal miss", `{"multipleOf":0.1}`, `0.35`, issues(issue("", "must be a multiple of 0.1"))},
	{"multipleOf integer miss", `{"multipleOf":5}`, `12`, issues(issue("", "must be a multiple of 5"))},
	// type
	{"integer written as 2.0", `{"type":"integer"}`, `2.0`, nil},
	{"integer given a fraction", `{"type":"integer"}`, `2.5`, issues(issue("", "expected integer, got number"))},
	{"string given an integer", `{"type":"string"}`, `1`, issues(issue("", "expected string, got integer"))},
	{"number given a boolean", `{"type":"number"}`, `true`, issues(issue("", "expected number, got boolean"))},
	{"nullable list given a string", `{"type":["null","array"]}`, `"x"`, issues(issue("", "expected array, got string"))},
	{"nullable list given null", `{"type":["null","array"]}`, `null`, nil},
	{"null only", `{"type":"null"}`, `{}`, issues(issue("", "expected null, got object"))},
	{"object given an array", `{"type":"object"}`, `[]`, issues(issue("", "expected object, got array"))},
	// required and additionalProperties
	{"required, each member", `{"required":["b","a"]}`, `{}`, issues(issue("a", "required"), issue("b", "required"))},
	{"required met", `{"required":["a"]}`, `{"a":null}`, nil},
	{"additionalProperties false", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":1,"z":2,"b":3}`,
		issues(issue("b", "unknown field"), issue("z", "unknown field"))},
	{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"n":1,"s":"x"}`,
		issues(issue("s", "expected integer, got string"))},
	// nested objects and arrays, $defs and $ref
	{"nested objects in a list", listSchema, `{"list":[{"name":"x"},{},{"name":""}]}`,
		issues(issue("list[1].name", "required"), issue("list[2].name", "must not be empty"))},
	{"nested arrays", `{"type":"array","items":{"type":"array","items":{"type":"integer"}}}`, `[[1,2],[3,"x"]]`,
		issues(issue("[1][1]", "expected integer, got string"))},
	{"member named like an index", `{"type":"object","properties":{"0":{"type":"string"}}}`, `{"0":1}`,
		issues(issue("0", "expected string, got integer"))},
	{"$ref recursion", treeSchema, `{"v":1,"kids":[{"v":2},{"kids":[]},{"v":"x","kids":[{}]}]}`,
		issues(issue("kids[1].v", "required"), issue("kids[2].kids[0].v", "required"), issue("kids[2].v", "expected integer, got string"))},
	{"$ref valid", treeSchema, `{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`, nil},
	// several issues on one value, in message order
	{"two issues on one value", `{"type":"string","minLength":5,"pattern":"^[0-9]+$"}`, `"ab"`,
		issues(issue("", "must be at least 5 characters"), issue("", "must match the pattern ^[0-9]+$"))},
	// the other keywords
	{"uniqueItems", `{"uniqueItems":true}`, `[1,2,1.0]`, issues(issue("", "must not repeat items (items 0 and 2 are equal)"))},
	{"uniqueItems, the first repeat only", `{"uniqueItems":true}`, `["a","a","a",2,2]`, issues(issue("", "must not repeat items (items 0 and 1 are equal)"))},
	{"anyOf", `{"anyOf":[{"type":"string"},{"type":"integer"}]}`, `true`, issues(issue("", "does not match any of the allowed forms"))},
	{"oneOf none", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `true`, issues(issue("", "does not match any of the allowed forms"))},
	{"oneOf two", `{"oneOf":[{"type":"integer"},{"minimum":0}]}`, `1`, issues(issue("", "matches more than one of the allowed forms"))},
	{"not", `{"not":{"type":"string"}}`, `"x"`, issues(issue("", "not allowed"))},
	{"false schema", `{"properties":{"x":false}}`, `{"x":1}`, issues(issue("x", "not allowed"))},
	{"allOf", `{"allOf":[{"minimum":1},{"multipleOf":2}]}`, `-1`, issues(issue("", "must be a multiple of 2"), issue("", "must be at least 1"))},
	{"minProperties", `{"minProperties":2}`, `{"a":1}`, issues(issue("", "must have at least 2 members"))},
	{"maxProperties", `{"maxProperties":1}`, `{"a":1,"b":2}`, issues(issue("", "must have at most 1 members"))},
	{"draft-07 dependencies", `{"$schema":"http://json-schema.org/draft-07/schema#","dependencies":{"card":["cvv"]}}`, `{"card":"1"}`,
		issues(issue("cvv", "required when card is present"))},
	{"dependentRequired", `{"dependentRequired":{"card":["cvv"]}}`, `{"card":"1"}`, issues(issue("cvv", "required when card is present"))},
	{"dependentRequired, most not present", `{"dependentRequired":{"a":["b"],"c":["d"],"e":["f"],"g":["h"],"i":["j"],"k":["l"]}}`,
		`{"c":1}`, issues(issue("d", "required when c is present"))},
	{"propertyNames", `{"propertyNames":{"pattern":"^[a-z]+$"}}`, `{"A":1,"b":2}`, issues(issue("A", "not an allowed member name"))},
	{"contains", `{"contains":{"type":"integer"}}`, `["a"]`, issues(issue("", "must contain a matching item"))},
	{"minContains", `{"contains":{"type":"integer"},"minContains":2}`, `[1,"a"]`, issues(issue("", "must contain at least 2 matching items"))},
	{"maxContains", `{"contains":{"type":"integer"},"maxContains":1}`, `[1,2]`, issues(issue("", "must contain at most 1 matching items"))},
	{"if then", `{"if":{"properties":{"kind":{"const":"card"}}},"then":{"required":["number"]}}`, `{"kind":"card"}`,
		issues(issue("number", "required"))},
	{"if else skipped", `{"if":{"properties":{"kind":{"const":"card"}}},"then":{"required":["number"]}}`, `{"kind":"cash"}`, nil},
	// numbers the validator refuses before comparing them
	{"number past float64", `{}`, `[1e309]`, issues(issue("[0]", "number out of range"))},
	{"exponent too large", `{"type":"object"}`, `{"a":{"b":1e-999999}}`, issues(issue("a.b", "number out of range"))},
	{"number too long", `{}`, `0.` + strings.Repeat("7", 200), issues(issue("", "number out of range"))},
	{"number of 100 characters", `{}`, `0.` + strings.Repeat("1", 98), nil},
	{"number of 101 characters", `{}`, `0.` + strings.Repeat("1", 99), issues(issue("", "number out of range"))},
	{"exponent 400", `{}`, `0.` + strings.Repeat("0", 93) + `1e400`, nil},
	{"exponent 401", `{}`, `0.` + strings.Repeat("0", 93) + `1e401`, issues(issue("", "number out of range"))},
	{"exponent -400", `{}`, `1e-400`, nil},
	{"exponent -401", `{}`, `1E-401`, issues(issue("", "number out of range"))},
	{"exponent with a sign", `{"maximum":100}`, `1e+2`, nil},
	{"smallest float64", `{"type":"number"}`, `5e-324`, nil},
	{"largest float64", `{"type":"number"}`, `1.7976931348623157e308`, nil},
	// the bounds at their edge, and the numbers of the messages as written
	{"maxProperties at", `{"maxProperties":2}`, `{"a":1,"b":2}`, nil},
	{"multipleOf written in full", `{"multipleOf":0.25}`, `0.3`, issues(issue("", "must be a multiple of 0.25"))},
	// equality of null, arrays and objects in enum and const
	{"enum null met", `{"enum":[null]}`, `null`, nil},
	{"enum null missed", `{"enum":[null]}`, `false`, issues(issue("", "must be null"))},
	{"const empty array given a string", `{"const":[]}`, `"x"`, issues(issue("", "must be []"))},
	{"const object met", `{"const":{"a":1}}`, `{"a":1.0}`, nil},
	{"const object given more members", `{"const":{"a":1}}`, `{"a":1,"b":2}`, issues(issue("", `must be {"a":1}`))},
	// references: a cycle of references at one location is followed once; a form behind
	// a reference is checked with the root's definitions
	{"reference cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`, nil},
	{"anyOf through a reference", `{"$defs":{"s":{"type":"string"}},"anyOf":[{"$ref":"#/$defs/s"},{"type":"integer"}]}`, `"x"`, nil},
	{"anyOf through a reference missed", `{"$defs":{"s":{"type":"string"}},"anyOf":[{"$ref":"#/$defs/s"},{"type":"integer"}]}`, `true`,
		issues(issue("", "does not match any of the allowed forms"))},
	{"dynamicRef alone", `{"$defs":{"s":{"$dynamicAnchor":"x","type":"string"}},"properties":{"a":{"$dynamicRef":"#x"}}}`, `{"a":1}`,
		issues(issue("a", `type: 1 has type "integer", want "string"`))},
	{"reference into allOf", `{"$defs":{"d":{"allOf":[{"type":"object"},{"type":"string"}]}},"properties":{"a":{"$ref":"#/$defs/d/allOf/1"}}}`, `{"a":1}`,
		issues(issue("a", "expected string, got integer"))},
	{"reference into prefixItems", `{"prefixItems":[{"type":"string"}],"properties":{"a":{"$ref":"#/prefixItems/0"}}}`, `{"a":1}`,
		issues(issue("a", "expected string, got integer"))},
	{"reference into a draft-07 items array", `{"$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}],
		"properties":{"a":{"$ref":"#/items/0"}}}`, `{"a":1}`, issues(issue("a", "expected string, got integer"))},
	{"reference into items", `{"items":{"type":"string"},"properties":{"a":{"$ref":"#/items"}}}`, `{"a":1}`,
		issues(issue("a", "expected string, got integer"))},
	{"minContains met", `{"contains":{"type":"integer"},"minContains":2}`, `[1,"a",2]`, nil},
	{"maxContains met", `{"contains":{"type":"integer"},"maxContains":2}`, `[1,2]`, nil},
	{"minContains 0", `{"contains":{"type":"integer"},"minContains":0}`, `["a"]`, nil},
	// unevaluatedProperties and unevaluatedItems: the node is checked as a whole, once
	{"unevaluatedProperties alone", `{"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":false}`,
		`{"a":1}`, issues(issue("", `type: 1 has type "integer", want "string"`))},
	{"unevaluatedItems alone", `{"type":"array","prefixItems":[{"type":"integer"}],"unevaluatedItems":false}`,
		`[1,"x"]`, issues(issue("", "not allowed"))},
}

// schemaFlows declares one flow per case whose input schema is the case's schema.
func schemaFlows(t *testing.T, unit string, cases []keywordCase) (*engine.App, []string) {
	t.Helper()
	u := engine.NewUnit(unit)
	var opts []engine.Option
	ids := make([]string, len(cases))
	for i, c := range cases {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(c.schema), &s); err != nil {
			t.Fatalf("%s: schema: %v", c.name, err)
		}
		f := engine.Define[any, any](u, fmt.Sprintf("c%d", i), engine.Public(),
			engine.InputSchema(func(in *jsonschema.Schema) { *in = s }))
		ids[i] = f.ID()
		opts = append(opts, engine.Bind(f, func(_ *engine.Fx, in any) (any, error) { return in, nil }))
	}
	app, err := engine.New(append(opts, engine.WithLogger(slog.New(slog.DiscardHandler)))...)
	if err != nil {
		t.Fatal(err)
	}
	return app, ids
}

// validationIssues calls a flow in-process and returns the issues of its ValidationError,
// nil when the call succeeded, and fails the test on any other outcome.
func validationIssues(t *testing.T, app *engine.App, id, input string) []engine.ValidationIssue {
	t.Helper()
	_, err := app.Invoke(context.Background(), id, nil, json.RawMessage(input))
	if err == nil {
		return nil
	}
	e := engine.AsError(err)
	if e == nil || e.Code != engine.CodeValidation {
		t.Fatalf("%s %s: %v, want a ValidationError or success", id, input, err)
	}
	var d engine.ValidationData
	if err := e.DecodeData(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Issues) == 0 {
		t.Fatalf("%s %s: ValidationError without issues", id, input)
	}
	first := d.Issues[0]
	want := "invalid input: " + first.Message
	if first.Path != "" {
		want = "invalid input: " + first.Path + ": " + first.Message
	}
	if d.Message != want {
		t.Fatalf("%s %s: message %q, want %q", id, input, d.Message, want)
	}
	return d.Issues
}

// TestInputKeywords checks each enforced keyword at and just past its bound, with the
// path and wording of every issue.
func TestInputKeywords(t *testing.T) {
	t.Parallel()
	app, ids := schemaFlows(t, "kw", keywordCases)
	for i, c := range keywordCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := validationIssues(t, app, ids[i], c.input)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("schema %s\ninput %s\nissues %+v\nwant   %+v", c.schema, c.input, got, c.want)
			}
		})
	}
}

// TestInputIssueOrderAndCap checks that issues come in path order, array indexes by
// number, and that one reply carries at most 50.
func TestInputIssueOrderAndCap(t *testing.T) {
	t.Parallel()
	cases := []keywordCase{{name: "strings", schema: `{"type":"array","items":{"type":"string"}}`}}
	app, ids := schemaFlows(t, "order", cases)
	nums := make([]string, 60)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	got := validationIssues(t, app, ids[0], "["+strings.Join(nums[:12], ",")+"]")
	if len(got) != 12 {
		t.Fatalf("%d issues, want 12: %+v", len(got), got)
	}
	for i, is := range got {
		if want := fmt.Sprintf("[%d]", i); is.Path != want {
			t.Fatalf("issue %d has path %q, want %q (all: %+v)", i, is.Path, want, got)
		}
	}
	got = validationIssues(t, app, ids[0], "["+strings.Join(nums, ",")+"]")
	if len(got) != 50 || got[49].Path != "[49]" {
		t.Fatalf("%d issues (last %+v), want the first 50", len(got), got[len(got)-1])
	}
}

// TestInputIssueCapTies checks the cut at 50 issues: two issues on the field at the cut
// are ordered by message before one is dropped, and members found in map order are cut
// by name.
func TestInputIssueCapTies(t *testing.T) {
	t.Parallel()
	props := map[string]any{}
	members := map[string]any{}
	for i := range 60 {
		name := fmt.Sprintf("p%02d", i)
		props[name] = map[string]any{"type": "string"}
		members[name] = i
	}
	objSchema, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	objInput, _ := json.Marshal(members)
	cases := []keywordCase{
		{name: "members", schema: string(objSchema)},
		// allOf reports its branches in order, so one of these two finds the issues on
		// [49] in message order and the other in reverse.
		{name: "ties", schema: `{"type":"array","items":{"allOf":[{"pattern":"^x"},{"minLength":5}]}}`},
		{name: "ties reversed", schema: `{"type":"array","items":{"allOf":[{"minLength":5},{"pattern":"^x"}]}}`},
	}
	app, ids := schemaFlows(t, "ties", cases)

	items := append(slices.Repeat([]string{`"xx"`}, 49), slices.Repeat([]string{`"yy"`}, 11)...)
	for _, id := range ids[1:] {
		got := validationIssues(t, app, id, "["+strings.Join(items, ",")+"]")
		want := issue("[49]", "must be at least 5 characters")
		if len(got) != 50 || got[48].Path != "[48]" || got[49] != want {
			t.Fatalf("%s: %d issues, the last two %+v, want 50 ending with [48] and %+v", id, len(got), got[max(0, len(got)-2):], want)
		}
	}

	for range 5 { // map order differs from run to run
		got := validationIssues(t, app, ids[0], string(objInput))
		if len(got) != 50 {
			t.Fatalf("%d issues, want 50", len(got))
		}
		for i, is := range got {
			if want := fmt.Sprintf("p%02d", i); is.Path != want || is.Message != "expected string, got integer" {
				t.Fatalf("issue %d is %+v, want %s", i, is, want)
			}
		}
	}
}

type boundsIn struct {
	Small int8    `json:"small"`
	Count uint    `json:"count"`
	Trio  [3]int  `json:"trio"`
	Note  *string `json:"note,omitempty"`
}

type emptyIn struct{}

// TestInferredSchemaEnforced checks that what jsonschema-go infers from Go types (ranges
// of sized integers, fixed array lengths, no unknown members) is enforced as published.
func TestInferredSchemaEnforced(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("inferred")
	f := engine.Define[boundsIn, boundsIn](u, "bounds", engine.Public())
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(f, func(_ *engine.Fx, in boundsIn) (boundsIn, error) { return in, nil }))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		input string
		want  []engine.ValidationIssue
	}{
		{`{"small":127,"count":0,"trio":[1,2,3]}`, nil},
		{`{"small":-128,"count":0,"trio":[1,2,3],"note":null}`, nil},
		{`{"small":128,"count":0,"trio":[1,2,3]}`, issues(issue("small", "must be at most 127"))},
		{`{"small":-129,"count":-1,"trio":[1,2]}`, issues(issue("count", "must be at least 0"),
			issue("small", "must be at least -128"), issue("trio", "must have at least 3 items"))},
		{`{"small":0,"count":0,"trio":[1,2,3,4]}`, issues(issue("trio", "must have at most 3 items"))},
		{`{"small":0,"count":0,"trio":[1,2,3],"extra":true}`, issues(issue("extra", "unknown field"))},
		{`{"count":0.5}`, issues(issue("count", "expected integer, got number"), issue("small", "required"), issue("trio", "required"))},
	}
	for _, c := range cases {
		if got := validationIssues(t, app, f.ID(), c.input); !reflect.DeepEqual(got, c.want) {
			t.Errorf("input %s\nissues %+v\nwant   %+v", c.input, got, c.want)
		}
	}
}

// TestSchemaCompiledAtBind checks that a schema the validator cannot use fails New,
// naming the flow, instead of failing (or fetching anything) on a call.
func TestSchemaCompiledAtBind(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, schema, want string }{
		{"bad pattern", `{"type":"string","pattern":"("}`, "pattern"},
		{"negative minLength", `{"type":"string","minLength":-1}`, "minLength"},
		{"outside reference", `{"$ref":"https://schemas.invalid/x.json"}`, "schemas.invalid"},
		{"missing definition", `{"$ref":"#/$defs/nothing"}`, "nothing"},
		{"multipleOf zero", `{"multipleOf":0}`, "multipleOf: 0 is not positive"},
		{"multipleOf negative", `{"multipleOf":-2}`, "multipleOf: -2 is not positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var s jsonschema.Schema
			if err := json.Unmarshal([]byte(c.schema), &s); err != nil {
				t.Fatal(err)
			}
			f := engine.Define[any, any](engine.NewUnit("broken"), "flow", engine.Public(),
				engine.InputSchema(func(in *jsonschema.Schema) { *in = s }))
			_, err := engine.New(engine.Bind(f, func(_ *engine.Fx, in any) (any, error) { return in, nil }))
			if err == nil || !strings.Contains(err.Error(), "broken.flow") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, want an error naming broken.flow and %q", err, c.want)
			}
		})
	}
}

// TestNonFiniteBoundsFailNew checks that a numeric keyword set to NaN or ±Inf, which only
// a schema built in Go can hold, fails New instead of every call that meets it.
func TestNonFiniteBoundsFailNew(t *testing.T) {
	t.Parallel()
	nan, inf, minusInf := math.NaN(), math.Inf(1), math.Inf(-1)
	cases := []struct {
		name string
		set  func(s *jsonschema.Schema)
	}{
		{"minimum", func(s *jsonschema.Schema) { s.Minimum = &nan }},
		{"maximum", func(s *jsonschema.Schema) { s.Maximum = &inf }},
		{"exclusiveMinimum", func(s *jsonschema.Schema) { s.ExclusiveMinimum = &minusInf }},
		{"exclusiveMaximum", func(s *jsonschema.Schema) { s.ExclusiveMaximum = &nan }},
		{"multipleOf", func(s *jsonschema.Schema) { s.MultipleOf = &inf }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := engine.Define[any, any](engine.NewUnit("broken"), "flow", engine.Public(),
				engine.InputSchema(func(in *jsonschema.Schema) {
					*in = jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "number"}}}
					c.set(in.Properties["n"])
				}))
			_, err := engine.New(engine.Bind(f, func(_ *engine.Fx, in any) (any, error) { return in, nil }))
			if err == nil || !strings.Contains(err.Error(), "broken.flow") ||
				!strings.Contains(err.Error(), c.name+": ") || !strings.Contains(err.Error(), "is not a finite number") {
				t.Fatalf("New: %v, want an error naming broken.flow and %s", err, c.name)
			}
		})
	}
}

// TestValidationOverHTTP checks the published pattern and unknown members over RPC and
// REST, and that unknown query parameters are dropped rather than refused.
func TestValidationOverHTTP(t *testing.T) {
	t.Parallel()
	type codeIn struct {
		Code string `json:"code"`
	}
	u := engine.NewUnit("codes")
	check := engine.Define[codeIn, codeIn](u, "check", engine.GET("/codes"), engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) { s.Properties["code"].Pattern = "^[0-9]+$" }))
	post := engine.Define[codeIn, codeIn](u, "post", engine.POST("/codes"), engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) { s.Properties["code"].Pattern = "^[0-9]+$" }))
	ping := engine.Define[emptyIn, emptyIn](u, "ping", engine.GET("/ping"), engine.Public())
	echo := func(_ *engine.Fx, in codeIn) (codeIn, error) { return in, nil }
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(check, echo), engine.Bind(post, echo),
		engine.Bind(ping, func(_ *engine.Fx, in emptyIn) (emptyIn, error) { return in, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	cases := []struct {
		method, path, body string
		status             int
		want               []engine.ValidationIssue
	}{
		{"POST", "/_engine/codes/check", `{"code":"abc"}`, 400, issues(issue("code", "must match the pattern ^[0-9]+$"))},
		{"POST", "/_engine/codes/check", `{"code":"42"}`, 200, nil},
		{"GET", "/codes?code=abc", "", 400, issues(issue("code", "must match the pattern ^[0-9]+$"))},
		{"GET", "/codes?code=42&_=1700000000", "", 200, nil},
		{"POST", "/codes", `{"code":"42","_":1}`, 400, issues(issue("_", "unknown field"))},
		{"GET", "/ping?cachebust=1", "", 200, nil},
	}
	for _, c := range cases {
		req, err := http.NewRequestWithContext(ctxT(t), c.method, srv.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Error *struct {
				Code string
				Data engine.ValidationData
			}
		}
		err = json.NewDecoder(res.Body).Decode(&env)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != c.status {
			t.Errorf("%s %s: HTTP %d, want %d", c.method, c.path, res.StatusCode, c.status)
			continue
		}
		var got []engine.ValidationIssue
		if env.Error != nil {
			got = env.Error.Data.Issues
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s %s: issues %+v, want %+v", c.method, c.path, c.body, got, c.want)
		}
	}
}

// validatedIn has a Validate method, which runs only once the schema is satisfied.
type validatedIn struct {
	From int `json:"from"`
	To   int `json:"to"`
}

func (v validatedIn) Validate() error {
	if v.To < v.From {
		return engine.Invalid(engine.ValidationIssue{Path: "to", Message: "must not be before from"})
	}
	if v.To == v.From {
		return errors.New("an empty range")
	}
	return nil
}

// TestValidateMethodAfterSchema checks the order of the two checks and how a plain error
// from Validate is answered.
func TestValidateMethodAfterSchema(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("ranges")
	f := engine.Define[validatedIn, validatedIn](u, "check", engine.Public())
	p := engine.Define[*validatedIn, validatedIn](u, "pointer", engine.Public())
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(f, func(_ *engine.Fx, in validatedIn) (validatedIn, error) { return in, nil }),
		engine.Bind(p, func(_ *engine.Fx, in *validatedIn) (validatedIn, error) {
			if in == nil {
				return validatedIn{From: -1}, nil
			}
			return *in, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{f.ID(), p.ID()} {
		cases := []struct {
			input string
			want  []engine.ValidationIssue
		}{
			{`{"from":1,"to":2}`, nil},
			{`{"from":"x","to":0}`, issues(issue("from", "expected integer, got string"))},
			{`{"from":2,"to":1}`, issues(issue("to", "must not be before from"))},
			{`{"from":1,"to":1}`, issues(issue("", "an empty range"))},
		}
		for _, c := range cases {
			if got := validationIssues(t, app, id, c.input); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s %s: issues %+v, want %+v", id, c.input, got, c.want)
			}
		}
	}
	// A null pointer input has no Validate method to run.
	out, err := app.Invoke(context.Background(), p.ID(), nil, json.RawMessage(`null`))
	if err != nil || string(out) != `{"from":-1,"to":0}` {
		t.Fatalf("null input: %s %v", out, err)
	}
}

// TestMalformedInput checks the issues of inputs that are not one JSON value.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	app, ids := schemaFlows(t, "malformed", []keywordCase{{name: "object", schema: `{"type":"object"}`}})
	cases := []struct{ input, want string }{
		{`{"a":`, "malformed JSON: unexpected EOF"},
		{`{} {}`, "malformed JSON: unexpected data after the input value"},
		{`{}]`, "malformed JSON: unexpected data after the input value"},
	}
	for _, c := range cases {
		got := validationIssues(t, app, ids[0], c.input)
		if len(got) != 1 || got[0].Path != "" || got[0].Message != c.want {
			t.Errorf("%s: issues %+v, want one %q", c.input, got, c.want)
		}
	}
	// An empty input is the empty object for an object schema, and null otherwise.
	if got := validationIssues(t, app, ids[0], "  "); got != nil {
		t.Errorf("empty input: issues %+v", got)
	}
	app, ids = schemaFlows(t, "empty", []keywordCase{{name: "object", schema: `{"type":"object"}`}, {name: "any", schema: `{}`}})
	for i, want := range []string{`{}`, `null`} {
		out, err := app.Invoke(context.Background(), ids[i], nil, nil)
		if err != nil || string(out) != want {
			t.Errorf("%s with no input: %s %v, want %s", ids[i], out, err, want)
		}
	}
}

// TestDecodeAfterValidation checks the issue of a value the schema lets through but the
// Go type cannot hold.
func TestDecodeAfterValidation(t *testing.T) {
	t.Parallel()
	type in struct {
		N int8 `json:"n"`
	}
	u := engine.NewUnit("decoding")
	f := engine.Define[in, in](u, "wide", engine.Public(),
		engine.InputSchema(func(s *jsonschema.Schema) { s.Properties["n"].Maximum = nil }))
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(f, func(_ *engine.Fx, v in) (in, error) { return v, nil }))
	if err != nil {
		t.Fatal(err)
	}
	got := validationIssues(t, app, f.ID(), `{"n":300}`)
	if want := issues(issue("n", "expected int8, got number 300")); !reflect.DeepEqual(got, want) {
		t.Fatalf("issues %+v, want %+v", got, want)
	}
}
