package tsgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// value is a decoded JSON value that keeps the order of object members, so the
// declarations list fields in the order the server declared them.
type value struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	obj  map[string]*value
	arr  []*value
	str  string // the string, or the number's text
	b    bool
}

func decode(raw []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the schema")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			v := &value{kind: 'o', obj: map[string]*value{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				m, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := v.obj[k]; !dup {
					v.keys = append(v.keys, k)
				}
				v.obj[k] = m
			}
			_, err := dec.Token()
			return v, err
		}
		v := &value{kind: 'a'}
		for dec.More() {
			m, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			v.arr = append(v.arr, m)
		}
		_, err := dec.Token()
		return v, err
	case string:
		return &value{kind: 's', str: t}, nil
	case json.Number:
		return &value{kind: 'n', str: t.String()}, nil
	case bool:
		return &value{kind: 'b', b: t}, nil
	}
	return &value{kind: 'z'}, nil
}

// gen accumulates the named types of every flow, and what it could not translate.
type gen struct {
	decls    strings.Builder
	problems []Problem
	used     map[string]bool // the type names declared so far, and the file's own
}

// unique returns name, made an identifier if it starts with a digit, or else the first
// of name2, name3, ... not declared yet, and records it. Names are taken in the
// descriptor's order, so the same descriptor gives the same names.
func (g *gen) unique(name string) string {
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "_" + name
	}
	n := name
	for i := 2; g.used[n]; i++ {
		n = name + strconv.Itoa(i)
	}
	g.used[n] = true
	return n
}

// root is the translation of one schema of a flow: its definitions are named after it.
type root struct {
	g     *gen
	flow  string
	where string
	name  string
	defs  map[string]string // $defs/definitions name → TypeScript name
	raw   map[string]*value
}

// ignored reports whether k is a keyword that only validates: it does not change the
// TypeScript type. (A switch, not a package-level map, so the package has nothing to
// initialise.)
func ignored(k string) bool {
	switch k {
	case "$schema", "$id", "$comment", "$anchor", "title", "description",
		"default", "examples", "readOnly", "writeOnly", "deprecated",
		"minLength", "maxLength", "pattern", "format", "contentEncoding",
		"contentMediaType", "minimum", "maximum", "exclusiveMinimum",
		"exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems",
		"minProperties", "maxProperties", "required", "properties", "items",
		"additionalProperties", "type", "enum", "const", "anyOf", "oneOf",
		"allOf", "$ref", "$defs", "definitions", "nullable", "prefixItems",
		"propertyNames", "minContains", "maxContains":
		return true
	}
	return false
}

// named translates a flow's schema into an exported type alias and returns its name.
func (g *gen) named(flow, where, name string, raw json.RawMessage, _ string) string {
	name = g.unique(name)
	r := &root{g: g, flow: flow, where: where, name: name, defs: map[string]string{}, raw: map[string]*value{}}
	var ts string
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		ts = "unknown"
	} else if v, err := decode(raw); err != nil {
		ts = r.fail("", "the schema is not valid JSON: "+err.Error())
	} else {
		if v.kind == 'o' {
			for _, key := range []string{"$defs", "definitions"} {
				if d := v.obj[key]; d != nil && d.kind == 'o' {
					for _, k := range d.keys {
						r.defs["#/"+key+"/"+k] = g.unique(name + pascal(k))
						r.raw["#/"+key+"/"+k] = d.obj[k]
					}
				}
			}
		}
		if isStream(v) {
			fmt.Fprintf(&g.decls, "/** The unread event-stream Response (%s); readAgentEvents from %s/agent reads agent events from it. */\n", comment(v.obj["description"].str), PackageName)
			fmt.Fprintf(&g.decls, "export type %s = Response;\n\n", name)
			return name
		}
		ts = r.ts(v, "", 0)
		refs := make([]string, 0, len(r.defs))
		for ref := range r.defs {
			refs = append(refs, ref)
		}
		sort.Strings(refs)
		for _, ref := range refs {
			body := r.ts(r.raw[ref], "", 0)
			fmt.Fprintf(&g.decls, "export type %s = %s;\n\n", r.defs[ref], body)
		}
	}
	fmt.Fprintf(&g.decls, "export type %s = %s;\n\n", name, ts)
	return name
}

// defKey turns a $ref into the key of root.defs ("#/" + $defs or definitions + "/" + the
// definition's name as written) when it names a definition of the schema: a URI
// fragment holding the JSON Pointer /$defs/name, the fragment percent-encoded and ~1
// standing for / and ~0 for ~ in the name (RFC 6901). Any other reference gives "".
func defKey(ref string) string {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return ""
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil {
		return ""
	}
	seg := strings.Split(ptr, "/")
	if len(seg) != 3 || seg[0] != "" || seg[1] != "$defs" && seg[1] != "definitions" {
		return ""
	}
	name := seg[2]
	for i := 0; i < len(name); i++ {
		if name[i] == '~' && (i+1 == len(name) || name[i+1] != '0' && name[i+1] != '1') {
			return "" // not a JSON Pointer
		}
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	return "#/" + seg[1] + "/" + name
}

// isStream reports whether a flow's output schema stands for an event stream: the
// descriptor describes one as a string whose description names text/event-stream.
func isStream(v *value) bool {
	if v.kind != 'o' || v.obj["type"] == nil || v.obj["type"].str != "string" || v.obj["description"] == nil {
		return false
	}
	return strings.HasPrefix(v.obj["description"].str, "text/event-stream")
}

func (r *root) fail(path, msg string) string {
	where := r.where
	if path != "" {
		where += " " + path
	}
	r.g.problems = append(r.g.problems, Problem{Flow: r.flow, Where: where, Msg: msg})
	return "unknown /* untranslatable: " + comment(msg) + " */"
}

func (r *root) ts(v *value, path string, depth int) string {
	switch v.kind {
	case 'b':
		if v.b {
			return "unknown"
		}
		return "never"
	case 'o':
	default:
		return r.fail(path, "a schema must be an object or a boolean")
	}
	for _, k := range v.keys {
		if !ignored(k) && !strings.HasPrefix(k, "x-") {
			return r.fail(path, "keyword "+k+" has no TypeScript translation")
		}
	}
	var parts []string
	if ref := v.obj["$ref"]; ref != nil {
		switch name, ok := r.defs[defKey(ref.str)]; {
		case ref.kind != 's':
			return r.fail(path, "$ref is not a string")
		case ref.str == "#":
			parts = append(parts, r.name)
		case ok:
			parts = append(parts, name)
		default:
			return r.fail(path, "$ref "+ref.str+" does not name a definition of this schema")
		}
	}
	if c := v.obj["const"]; c != nil {
		lit, ok := literal(c)
		if !ok {
			return r.fail(path, "const is not a string, number, boolean or null")
		}
		parts = append(parts, lit)
	} else if e := v.obj["enum"]; e != nil {
		if e.kind != 'a' || len(e.arr) == 0 {
			return r.fail(path, "enum is not a non-empty array")
		}
		var lits []string
		for _, x := range e.arr {
			lit, ok := literal(x)
			if !ok {
				return r.fail(path, "an enum value is not a string, number, boolean or null")
			}
			lits = append(lits, lit)
		}
		parts = append(parts, strings.Join(lits, " | "))
	} else if t := r.typed(v, path, depth); t != "" {
		parts = append(parts, t)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alt := v.obj[key]; alt != nil {
			if alt.kind != 'a' || len(alt.arr) == 0 {
				return r.fail(path, key+" is not a non-empty array")
			}
			var opts []string
			for i, a := range alt.arr {
				opts = append(opts, paren(r.ts(a, fmt.Sprintf("%s(%s %d)", path, key, i), depth)))
			}
			parts = append(parts, "("+strings.Join(opts, " | ")+")")
		}
	}
	if all := v.obj["allOf"]; all != nil {
		if all.kind != 'a' || len(all.arr) == 0 {
			return r.fail(path, "allOf is not a non-empty array")
		}
		for i, a := range all.arr {
			parts = append(parts, paren(r.ts(a, fmt.Sprintf("%s(allOf %d)", path, i), depth)))
		}
	}
	if len(parts) == 0 {
		return "unknown"
	}
	out := strings.Join(parts, " & ")
	if n := v.obj["nullable"]; n != nil && n.kind == 'b' && n.b {
		out = paren(out) + " | null"
	}
	return out
}

// typed translates the type keyword (a name or a list of names); with no type, an object
// schema is recognised by its properties.
func (r *root) typed(v *value, path string, depth int) string {
	t := v.obj["type"]
	var names []string
	switch {
	case t == nil:
		if v.obj["properties"] != nil || v.obj["additionalProperties"] != nil || v.obj["required"] != nil {
			names = []string{"object"}
		} else if v.obj["items"] != nil || v.obj["prefixItems"] != nil {
			names = []string{"array"}
		} else {
			return ""
		}
	case t.kind == 's':
		names = []string{t.str}
	case t.kind == 'a':
		for _, x := range t.arr {
			names = append(names, x.str)
		}
	default:
		return r.fail(path, "type is not a string or an array of strings")
	}
	var opts []string
	for _, n := range names {
		switch n {
		case "string":
			opts = append(opts, "string")
		case "number", "integer":
			opts = append(opts, "number")
		case "boolean":
			opts = append(opts, "boolean")
		case "null":
			opts = append(opts, "null")
		case "array":
			opts = append(opts, r.array(v, path, depth))
		case "object":
			opts = append(opts, r.object(v, path, depth))
		default:
			opts = append(opts, r.fail(path, "type "+n+" is not a JSON Schema type"))
		}
	}
	// null last reads better: string[] | null.
	sort.SliceStable(opts, func(i, j int) bool { return opts[i] != "null" && opts[j] == "null" })
	if len(opts) == 1 {
		return opts[0]
	}
	for i := range opts {
		opts[i] = paren(opts[i])
	}
	return strings.Join(opts, " | ")
}

func (r *root) array(v *value, path string, depth int) string {
	if p := v.obj["prefixItems"]; p != nil && p.kind == 'a' {
		var el []string
		for i, x := range p.arr {
			el = append(el, r.ts(x, fmt.Sprintf("%s[%d]", path, i), depth))
		}
		if it := v.obj["items"]; it == nil || (it.kind == 'b' && it.b) {
			el = append(el, "...unknown[]")
		} else if !(it.kind == 'b' && !it.b) {
			el = append(el, "..."+paren(r.ts(it, path+"[]", depth))+"[]")
		}
		return "[" + strings.Join(el, ", ") + "]"
	}
	it := v.obj["items"]
	if it == nil {
		return "unknown[]"
	}
	return paren(r.ts(it, path+"[]", depth)) + "[]"
}

func (r *root) object(v *value, path string, depth int) string {
	props := v.obj["properties"]
	req := map[string]bool{}
	var reqOrder []string
	if rq := v.obj["required"]; rq != nil && rq.kind == 'a' {
		for _, x := range rq.arr {
			req[x.str] = true
			reqOrder = append(reqOrder, x.str)
		}
	}
	ind := strings.Repeat("  ", depth+1)
	var lines []string
	seen := map[string]bool{}
	if props != nil && props.kind == 'o' {
		for _, k := range props.keys {
			seen[k] = true
			p := props.obj[k]
			if d := p.obj["description"]; p.kind == 'o' && d != nil && d.kind == 's' && d.str != "" {
				lines = append(lines, ind+"/** "+comment(d.str)+" */")
			}
			opt := "?"
			if req[k] {
				opt = ""
			}
			lines = append(lines, fmt.Sprintf("%s%s%s: %s;", ind, propKey(k), opt, r.ts(p, joinPath(path, k), depth+1)))
		}
	}
	for _, k := range reqOrder {
		if !seen[k] {
			lines = append(lines, fmt.Sprintf("%s%s: unknown;", ind, propKey(k)))
		}
	}
	if ap := v.obj["additionalProperties"]; ap != nil && !(ap.kind == 'b' && !ap.b) {
		el := "unknown"
		if ap.kind == 'o' && len(lines) == 0 {
			el = r.ts(ap, path+"[key]", depth+1)
		}
		lines = append(lines, fmt.Sprintf("%s[key: string]: %s;", ind, el))
	}
	if len(lines) == 0 {
		if ap := v.obj["additionalProperties"]; ap != nil {
			return "Record<string, never>" // additionalProperties: false and no properties
		}
		return "{ [key: string]: unknown }"
	}
	return "{\n" + strings.Join(lines, "\n") + "\n" + strings.Repeat("  ", depth) + "}"
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// paren wraps a union or intersection so it can take [] or join another union. It
// scans the type's text for a | or & outside any brackets, skipping what the generator
// writes inside double-quoted strings (literals and property keys) and comments
// (descriptions, untranslatable notes), whose brackets and bars are not syntax.
func paren(s string) string {
	if strings.HasPrefix(s, "unknown /*") {
		return s
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				end := strings.Index(s[i+2:], "*/")
				if end < 0 {
					return "(" + s + ")" // not written by the generator: wrapping is safe
				}
				i += 2 + end + 1
			}
		case '{', '(', '[':
			depth++
		case '}', ')', ']':
			depth--
		case '|', '&':
			if depth == 0 {
				return "(" + s + ")"
			}
		}
	}
	return s
}

func literal(v *value) (string, bool) {
	switch v.kind {
	case 's':
		return jsString(v.str), true
	case 'n':
		return v.str, true
	case 'b':
		if v.b {
			return "true", true
		}
		return "false", true
	case 'z':
		return "null", true
	}
	return "", false
}
