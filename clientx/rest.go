package clientx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/bbc28f59/engine"
)

// restRoute is a route compiled once when the client is built, so a call only fills in
// values: the path split into literal text and :name parameters.
type restRoute struct {
	route   engine.Route
	parts   []string // literal text and parameter names, alternating: lit, param, lit, …
	params  []string
	inQuery bool // GET and HEAD carry the remaining fields in the query string
}

func compileRoute(rt engine.Route) *restRoute {
	rt.Method = strings.ToUpper(rt.Method)
	r := &restRoute{route: rt, inQuery: rt.Method == http.MethodGet || rt.Method == http.MethodHead}
	var lit strings.Builder
	for _, seg := range strings.Split(rt.Path[1:], "/") {
		lit.WriteByte('/')
		if strings.HasPrefix(seg, ":") && len(seg) > 1 {
			r.parts = append(r.parts, lit.String(), seg[1:])
			r.params = append(r.params, seg[1:])
			lit.Reset()
			continue
		}
		lit.WriteString(seg)
	}
	r.parts = append(r.parts, lit.String())
	return r
}

// request maps the JSON input onto the route: path parameters from same-named fields,
// the remaining fields into the query string (GET, HEAD) or a JSON body.
func (r *restRoute) request(base string, input []byte) (target string, body []byte, e *engine.Error) {
	if len(r.params) == 0 && !r.inQuery {
		if input == nil {
			input = []byte("{}")
		}
		return base + r.parts[0], input, nil
	}
	fields, e := objectFields(r.route, input)
	if e != nil {
		return "", nil, e
	}
	var sb strings.Builder
	sb.WriteString(base)
	for i, part := range r.parts {
		if i%2 == 0 {
			sb.WriteString(part)
			continue
		}
		v, e := pathValue(r.route, part, fields[part])
		if e != nil {
			return "", nil, e
		}
		sb.WriteString(url.PathEscape(v))
		delete(fields, part)
	}
	if r.inQuery {
		q, e := queryOf(fields)
		if e != nil {
			return "", nil, e
		}
		if q != "" {
			sb.WriteByte('?')
			sb.WriteString(q)
		}
		return sb.String(), nil, nil
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return "", nil, inputError(r.route, "encoding the body: "+err.Error())
	}
	return sb.String(), body, nil
}

func objectFields(rt engine.Route, input []byte) (map[string]json.RawMessage, *engine.Error) {
	fields := map[string]json.RawMessage{}
	in := bytes.TrimSpace(input)
	if len(in) == 0 || isNull(in) {
		return fields, nil
	}
	if in[0] != '{' {
		return nil, inputError(rt, "the input must be a JSON object to fill the path and query")
	}
	if err := json.Unmarshal(in, &fields); err != nil {
		return nil, inputError(rt, "the input is not a JSON object: "+err.Error())
	}
	return fields, nil
}

// pathValue renders a field for a :name segment: strings as they are, numbers as their
// JSON text, booleans as true or false.
func pathValue(rt engine.Route, name string, raw json.RawMessage) (string, *engine.Error) {
	if len(raw) == 0 || isNull(raw) {
		return "", inputError(rt, fmt.Sprintf("path parameter :%s has no value in the input", name))
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", inputError(rt, fmt.Sprintf("path parameter :%s: %v", name, err))
		}
		if s == "" {
			return "", inputError(rt, fmt.Sprintf("path parameter :%s is empty", name))
		}
		return s, nil
	case '{', '[':
		return "", inputError(rt, fmt.Sprintf("path parameter :%s must be a string, number or boolean", name))
	}
	return string(raw), nil
}

// queryOf encodes the remaining fields: arrays as repeated keys, booleans as
// true/false, numbers as their JSON text, nested objects as JSON text, null omitted.
func queryOf(fields map[string]json.RawMessage) (string, *engine.Error) {
	if len(fields) == 0 {
		return "", nil
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	add := func(k, v string) {
		if sb.Len() > 0 {
			sb.WriteByte('&')
		}
		sb.WriteString(url.QueryEscape(k))
		sb.WriteByte('=')
		sb.WriteString(url.QueryEscape(v))
	}
	for _, k := range keys {
		raw := fields[k]
		if isNull(raw) {
			continue
		}
		if raw[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return "", clientError(engine.CodeValidation, "query field "+k+": "+err.Error())
			}
			for _, it := range items {
				if !isNull(it) {
					add(k, scalarText(it))
				}
			}
			continue
		}
		add(k, scalarText(raw))
	}
	return sb.String(), nil
}

// scalarText is the query text of one JSON value: a string unquoted, anything else as
// its compact JSON text.
func scalarText(raw json.RawMessage) string {
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	if raw[0] == '{' || raw[0] == '[' {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String()
		}
	}
	return string(raw)
}

func inputError(rt engine.Route, msg string) *engine.Error {
	return clientError(engine.CodeValidation, rt.Method+" "+rt.Path+": "+msg)
}
