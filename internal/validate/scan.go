package validate

import (
	"encoding/json"
	"maps"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// fastNode is what [Validator.Accepts] reads at one schema node, prepared at bind time
// from the keywords it knows: those a Go type's inferred schema has (type, properties,
// required, additionalProperties, items, the bounds of sized integers) and the common
// refinements (enum, const, numeric bounds, multipleOf, lengths, pattern, format). A nil
// *fastNode is a node with no constraint at all.
type fastNode struct {
	// unsure is set when the node has a keyword Accepts does not read: it says no at
	// such a node, and Validate decides.
	unsure bool
	never  bool // the false schema

	hasType bool
	types   uint8 // typeBits of the allowed JSON types, when hasType

	enum     []any // allowed values when hasEnum: nil, bools, strings and numbers only
	hasEnum  bool
	constant *any

	minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf *float64
	minLength, maxLength                                             *int
	pattern                                                          *regexp.Regexp
	format                                                           string

	items              *fastNode
	minItems, maxItems *int

	props    []fastProp // in name order
	byName   map[string]int
	required uint64    // bits of the props that must be present
	extra    *fastNode // additionalProperties; nil: any other member is allowed
	noExtra  bool      // additionalProperties is false: another member is refused
}

type fastProp struct {
	name string
	node *fastNode
	bit  uint64 // its bit in required, or 0
}

// The JSON types, as bits.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBoolean, "object": tObject,
	"array": tArray, "number": tNumber, "integer": tInteger, "string": tString}

// maxScanDepth bounds the nesting Accepts follows; a deeper input goes to Validate (and
// to encoding/json's own depth limit).
const maxScanDepth = 500

// fastOf prepares the fastNode of s and of every schema beneath it; memo holds those
// already prepared, so that shared and cyclic schemas are prepared once.
func (iv *Validator) fastOf(s *jsonschema.Schema, memo map[*jsonschema.Schema]*fastNode) *fastNode {
	if s == nil {
		return nil
	}
	if f, ok := memo[s]; ok {
		return f
	}
	f := &fastNode{}
	memo[s] = f
	nc := iv.nodes[s]
	switch {
	case nc == nil:
		f.unsure = true
		return f
	case nc.never:
		f.never = true
		return f
	case !onlyFastKeywords(s) || nc.whole:
		f.unsure = true
		return f
	}
	if s.Type != "" || s.Types != nil {
		f.hasType = true
		f.types = typeBits[s.Type]
		for _, t := range s.Types {
			f.types |= typeBits[t]
		}
	}
	if s.Enum != nil {
		f.hasEnum, f.enum = true, s.Enum
		for _, e := range s.Enum {
			f.unsure = f.unsure || !scalarValue(e)
		}
	}
	if s.Const != nil {
		f.constant = s.Const
		f.unsure = f.unsure || !scalarValue(*s.Const)
	}
	f.minimum, f.maximum = s.Minimum, s.Maximum
	f.exclusiveMinimum, f.exclusiveMaximum, f.multipleOf = s.ExclusiveMinimum, s.ExclusiveMaximum, s.MultipleOf
	f.minLength, f.maxLength, f.format = s.MinLength, s.MaxLength, s.Format
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			f.unsure = true
			return f
		}
		f.pattern = re
	}
	f.items = iv.fastOf(s.Items, memo)
	f.minItems, f.maxItems = s.MinItems, s.MaxItems
	required := map[string]bool{}
	for _, name := range s.Required {
		required[name] = true
		if _, ok := s.Properties[name]; !ok {
			f.unsure = true // required but not a property: not tracked
		}
	}
	if len(required) > 64 {
		f.unsure = true
	}
	var bit uint64 = 1
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := fastProp{name: name, node: iv.fastOf(s.Properties[name], memo)}
		if required[name] && bit != 0 {
			p.bit, f.required, bit = bit, f.required|bit, bit<<1
		}
		f.props = append(f.props, p)
	}
	if len(f.props) > 8 {
		f.byName = make(map[string]int, len(f.props))
		for i, p := range f.props {
			f.byName[p.name] = i
		}
	}
	if s.AdditionalProperties != nil {
		if ap := iv.nodes[s.AdditionalProperties]; ap != nil && ap.never {
			f.noExtra = true
		} else {
			f.extra = iv.fastOf(s.AdditionalProperties, memo)
		}
	}
	return f
}

// onlyFastKeywords reports whether s has no keyword beyond those a fastNode reads and
// the annotations (which no one checks): anything else, present now or added to
// jsonschema-go later, leaves the node to Validate.
func onlyFastKeywords(s *jsonschema.Schema) bool {
	r := *s
	r.ID, r.Schema, r.Comment, r.Defs, r.Definitions, r.Anchor, r.DynamicAnchor = "", "", "", nil, nil, "", ""
	r.Title, r.Description, r.Default, r.Deprecated, r.ReadOnly, r.WriteOnly, r.Examples = "", "", nil, false, false, false, nil
	r.ContentEncoding, r.ContentMediaType, r.ContentSchema, r.Extra, r.PropertyOrder = "", "", nil, nil, nil
	r.Type, r.Types, r.Enum, r.Const = "", nil, nil, nil
	r.MultipleOf, r.Minimum, r.Maximum, r.ExclusiveMinimum, r.ExclusiveMaximum = nil, nil, nil, nil, nil
	r.MinLength, r.MaxLength, r.Pattern, r.Format = nil, nil, "", ""
	r.Items, r.MinItems, r.MaxItems = nil, nil, nil
	r.Properties, r.Required, r.AdditionalProperties = nil, nil, nil
	return reflect.ValueOf(r).IsZero()
}

// scalarValue reports whether a schema's enum or const member is one Accepts compares:
// null, a boolean, a string or a number.
func scalarValue(v any) bool {
	switch v.(type) {
	case nil, bool, string, float64, int, int64:
		return true
	}
	return false
}

// Accepts reports whether raw is one JSON value that meets the schema, reading it once
// without building anything. It says no to anything it cannot decide; the caller then
// decodes raw and asks [Validator.Validate], whose issues are the answer. The nil
// validator accepts anything.
func (iv *Validator) Accepts(raw []byte) bool {
	if iv == nil {
		return true
	}
	sc := scanner{b: raw}
	if !sc.value(iv.fast, 0) {
		return false
	}
	sc.space()
	return sc.i == len(sc.b)
}

// scanner reads one JSON text along the schema. Its grammar is loose where the caller's
// json.Unmarshal is strict (a malformed number or literal is caught there); it is
// exact where the verdict depends on it (member names, string contents, numbers).
type scanner struct {
	b []byte
	i int
}

func (sc *scanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// value reads the value at sc.i and reports whether it meets n.
func (sc *scanner) value(n *fastNode, depth int) bool {
	if n != nil && (n.unsure || n.never) {
		return false
	}
	sc.space()
	if sc.i >= len(sc.b) || depth > maxScanDepth {
		return false
	}
	switch c := sc.b[sc.i]; {
	case c == '{':
		return sc.object(n, depth)
	case c == '[':
		return sc.array(n, depth)
	case c == '"':
		s, ok := sc.str(n != nil)
		return ok && (n == nil || n.stringOK(s))
	case c == 't':
		return sc.literal("true") && (n == nil || n.scalarOK(tBoolean, true))
	case c == 'f':
		return sc.literal("false") && (n == nil || n.scalarOK(tBoolean, false))
	case c == 'n':
		return sc.literal("null") && (n == nil || n.scalarOK(tNull, nil))
	case c == '-' || c >= '0' && c <= '9':
		start := sc.i
		for sc.i < len(sc.b) && isNumberByte(sc.b[sc.i]) {
			sc.i++
		}
		return n.numberOK(sc.b[start:sc.i])
	}
	return false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (sc *scanner) literal(word string) bool {
	if len(sc.b)-sc.i < len(word) || string(sc.b[sc.i:sc.i+len(word)]) != word {
		return false
	}
	sc.i += len(word)
	return true
}

// str reads a string. With decode, it returns the contents as encoding/json decodes
// them: the bytes themselves when they need no decoding (no escape, valid UTF-8), which
// costs nothing.
func (sc *scanner) str(decode bool) ([]byte, bool) {
	start := sc.i
	sc.i++
	plain := true
	for sc.i < len(sc.b) {
		c := sc.b[sc.i]
		switch {
		case c == '"':
			sc.i++
			body := sc.b[start+1 : sc.i-1]
			if !decode || plain || utf8.Valid(body) && !hasByte(body, '\\') {
				return body, true
			}
			var s string
			err := json.Unmarshal(sc.b[start:sc.i], &s)
			return []byte(s), err == nil
		case c == '\\':
			plain = false
			sc.i += 2
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			plain = false
			sc.i++
		default:
			sc.i++
		}
	}
	return nil, false
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

func (sc *scanner) object(n *fastNode, depth int) bool {
	if n != nil && n.hasType && n.types&tObject == 0 || n != nil && (n.hasEnum || n.constant != nil) {
		return false
	}
	sc.i++ // {
	var seen uint64
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == '}' {
		sc.i++
		return n == nil || n.required == 0
	}
	for {
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != '"' {
			return false
		}
		name, ok := sc.str(n != nil)
		if !ok {
			return false
		}
		sc.space()
		if sc.i >= len(sc.b) || sc.b[sc.i] != ':' {
			return false
		}
		sc.i++
		var sub *fastNode
		if n != nil {
			if p := n.prop(name); p != nil {
				sub, seen = p.node, seen|p.bit
			} else if n.noExtra {
				return false
			} else {
				sub = n.extra
			}
		}
		if !sc.value(sub, depth+1) {
			return false
		}
		if done, ok := sc.after('}'); !ok || done {
			return ok && (n == nil || seen&n.required == n.required)
		}
	}
}

// after reads what follows a member or an item: a comma, with more to come, or the
// closing byte; anything else is not ok.
func (sc *scanner) after(closing byte) (done, ok bool) {
	sc.space()
	if sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ',':
			sc.i++
			return false, true
		case closing:
			sc.i++
			return true, true
		}
	}
	return false, false
}

// prop finds the property named name. Names match exactly, unlike encoding/json's
// field names, so a member "A" of a struct whose field is "a" is an unknown member here
// as it is to Validate.
func (n *fastNode) prop(name []byte) *fastProp {
	if n.byName != nil {
		if i, ok := n.byName[string(name)]; ok {
			return &n.props[i]
		}
		return nil
	}
	for i := range n.props {
		if n.props[i].name == string(name) {
			return &n.props[i]
		}
	}
	return nil
}

func (sc *scanner) array(n *fastNode, depth int) bool {
	if n != nil && n.hasType && n.types&tArray == 0 || n != nil && (n.hasEnum || n.constant != nil) {
		return false
	}
	sc.i++ // [
	var items *fastNode
	if n != nil {
		items = n.items
	}
	count := 0
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == ']' {
		sc.i++
		return n.countOK(0)
	}
	for {
		if !sc.value(items, depth+1) {
			return false
		}
		count++
		if done, ok := sc.after(']'); !ok || done {
			return ok && n.countOK(count)
		}
	}
}

func (n *fastNode) countOK(count int) bool {
	return n == nil || (n.minItems == nil || count >= *n.minItems) && (n.maxItems == nil || count <= *n.maxItems)
}

// scalarOK checks a null or a boolean.
func (n *fastNode) scalarOK(t uint8, v any) bool {
	if n.hasType && n.types&t == 0 {
		return false
	}
	equal := func(e any) bool { return e == v } // e is a scalar (scalarValue)
	return (!n.hasEnum || anyOf(n.enum, equal)) && (n.constant == nil || equal(*n.constant))
}

func (n *fastNode) stringOK(s []byte) bool {
	if n.hasType && n.types&tString == 0 {
		return false
	}
	equal := func(e any) bool { x, ok := e.(string); return ok && x == string(s) }
	if n.hasEnum && !anyOf(n.enum, equal) || n.constant != nil && !equal(*n.constant) {
		return false
	}
	if n.minLength != nil || n.maxLength != nil {
		runes := utf8.RuneCount(s)
		if n.minLength != nil && runes < *n.minLength || n.maxLength != nil && runes > *n.maxLength {
			return false
		}
	}
	return (n.format == "" || formatValid(n.format, string(s))) && (n.pattern == nil || n.pattern.Match(s))
}

func anyOf(list []any, f func(any) bool) bool {
	for _, e := range list {
		if f(e) {
			return true
		}
	}
	return false
}

// numberOK checks a number, given as written. It is refused, as by Validate, when out of
// the range any Go number type holds. Comparisons are exact, as Validate's are, but
// cheap: the float64 the text rounds to decides every comparison with a bound it is not
// equal to (rounding never reorders two numbers), so the exact value (big.Rat) is
// worked out only for a number that rounds to a bound itself, or that multipleOf cannot
// check in integers.
func (n *fastNode) numberOK(text []byte) bool {
	f, ok := parseNumber(text)
	if !ok {
		return false
	}
	if n == nil {
		return true
	}
	x := exactNumber{text: text, f: f}
	if n.hasType && n.types&tNumber == 0 && (n.types&tInteger == 0 || !x.isInt()) {
		return false
	}
	if n.hasEnum && !anyOf(n.enum, x.equals) || n.constant != nil && !x.equals(*n.constant) {
		return false
	}
	if n.minimum != nil && x.cmp(*n.minimum) < 0 || n.maximum != nil && x.cmp(*n.maximum) > 0 ||
		n.exclusiveMinimum != nil && x.cmp(*n.exclusiveMinimum) <= 0 ||
		n.exclusiveMaximum != nil && x.cmp(*n.exclusiveMaximum) >= 0 {
		return false
	}
	return n.multipleOf == nil || x.multipleOf(*n.multipleOf)
}

// parseNumber is numberInRange and strconv.ParseFloat in one, on a number as written,
// which must be one by JSON's grammar (so that big.Rat reads it too).
func parseNumber(text []byte) (float64, bool) {
	if len(text) == 0 || len(text) > maxNumberLen || !jsonNumber(text) {
		return 0, false
	}
	for i, c := range text {
		if c == 'e' || c == 'E' {
			e, err := strconv.Atoi(string(text[i+1:]))
			if err != nil || e > maxExponent || e < -maxExponent {
				return 0, false
			}
			break
		}
	}
	f, err := strconv.ParseFloat(string(text), 64)
	return f, err == nil
}

// jsonNumber reports whether text is a number by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(text []byte) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(text) && text[i] == '-' {
		i++
	}
	if i < len(text) && text[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(text) && text[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(text)
}

// exactNumber is a number of the input: its text and the float64 it rounds to.
type exactNumber struct {
	text []byte
	f    float64
	rat  *big.Rat // its exact value, worked out when first needed
}

func (x *exactNumber) exact() *big.Rat {
	if x.rat == nil {
		x.rat, _ = new(big.Rat).SetString(string(x.text))
	}
	return x.rat
}

// plainInt reports whether the text is an integer as written: digits, maybe a sign.
func (x *exactNumber) plainInt() bool {
	for i, c := range x.text {
		if !(c >= '0' && c <= '9' || i == 0 && c == '-') {
			return false
		}
	}
	return true
}

func (x *exactNumber) isInt() bool {
	return x.plainInt() || x.exact().IsInt()
}

// cmp compares the number with bound b taken in its shortest decimal form, as
// Validate's number does.
func (x *exactNumber) cmp(b float64) int {
	switch {
	case x.f < b:
		return -1
	case x.f > b:
		return 1
	}
	return x.exact().Cmp(decimal(b))
}

// equals compares the number with an enum or const member, as jsonEqual does.
func (x *exactNumber) equals(e any) bool {
	switch v := e.(type) {
	case float64:
		return x.cmp(v) == 0
	case int:
		return x.f == float64(v) && x.exact().Cmp(new(big.Rat).SetInt64(int64(v))) == 0
	case int64:
		return x.f == float64(v) && x.exact().Cmp(new(big.Rat).SetInt64(v)) == 0
	}
	return false
}

// multipleOf checks the number against m > 0 in int64 arithmetic when both are integers
// that fit, and exactly otherwise.
func (x *exactNumber) multipleOf(m float64) bool {
	if m == math.Trunc(m) && m <= 1<<53 && len(x.text) <= 18 && x.plainInt() {
		if n, err := strconv.ParseInt(string(x.text), 10, 64); err == nil {
			return n%int64(m) == 0
		}
	}
	return new(big.Rat).Quo(x.exact(), decimal(m)).IsInt()
}
