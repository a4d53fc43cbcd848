// Package tsgen writes the TypeScript declarations of an app (engine-client.d.ts) and its
// runtime route table (engine-client.js) from the app's descriptor, the body of
// GET /_engine/client.json. The declarations augment the client package's Register
// interface, so a browser app gets typed calls with no import of server code.
package tsgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Descriptor is the part of the descriptor the generator reads. Schemas stay raw: a
// schema may be a boolean, and a member the generator does not know must not be lost
// before it can say so.
type Descriptor struct {
	Version int    `json:"version"`
	RPC     string `json:"rpc"`
	Units   []Unit `json:"units"`
}

// Unit is a unit of the [Descriptor].
type Unit struct {
	Name  string `json:"name"`
	Flows []Flow `json:"flows"`
}

// Flow is a flow of the [Descriptor].
type Flow struct {
	Name        string                `json:"name"`
	ID          string                `json:"id"`
	Description string                `json:"description"`
	Trigger     *Route                `json:"trigger"`
	Public      bool                  `json:"public"`
	Gated       bool                  `json:"gated"`
	Input       json.RawMessage       `json:"input"`
	Output      json.RawMessage       `json:"output"`
	Errors      map[string]ErrorEntry `json:"errors"`
}

// Route is a flow's HTTP trigger.
type Route struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// ErrorEntry is a declared error code of a [Flow].
type ErrorEntry struct {
	Status int             `json:"status"`
	Data   json.RawMessage `json:"data"`
}

// Problem is a schema the generator could not translate: the declarations say unknown
// there, with a comment, and the command reports it.
type Problem struct {
	Flow  string // the flow id
	Where string // input, output or the error code's data, then the JSON path of the field
	Msg   string
}

func (p Problem) String() string { return p.Flow + ": " + p.Where + ": " + p.Msg }

// PackageName is the module the declarations augment and import from.
const PackageName = "engine/client"

// isIdent reports whether s is an ASCII identifier: [A-Za-z_][A-Za-z0-9_]*. (A function,
// not a package-level regexp: the package has no initialisation work, so the engine
// package, which serves the generated files, costs its importers nothing until it runs.)
func isIdent(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// Parse decodes and checks a descriptor. Its errors say what is wrong with the reply, so
// that pointing the command at something that is not an engine app is plain.
func Parse(body []byte) (*Descriptor, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, fmt.Errorf("not a descriptor: the reply is not a JSON object (%v)", err)
	}
	if _, ok := probe["units"]; !ok {
		return nil, errors.New("not a descriptor: the reply has no units member")
	}
	var d Descriptor
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("not a descriptor: %v", err)
	}
	if d.Version != 1 {
		return nil, fmt.Errorf("descriptor version %d is not supported (this generator reads version 1)", d.Version)
	}
	for _, u := range d.Units {
		if !isIdent(u.Name) {
			return nil, fmt.Errorf("not a descriptor: unit name %q is not an identifier", u.Name)
		}
		for _, f := range u.Flows {
			if !isIdent(f.Name) {
				return nil, fmt.Errorf("not a descriptor: flow name %q in unit %s is not an identifier", f.Name, u.Name)
			}
			if f.Trigger != nil && (f.Trigger.Method == "" || !strings.HasPrefix(f.Trigger.Path, "/")) {
				return nil, fmt.Errorf("not a descriptor: flow %s.%s has a trigger without a method or an absolute path", u.Name, f.Name)
			}
		}
	}
	return &d, nil
}

// Output is what [Generate] writes: the declarations and the runtime module they describe.
type Output struct {
	DTS      []byte // engine-client.d.ts
	JS       []byte // engine-client.js
	Problems []Problem
}

// Generate translates the descriptor. source names where it came from, for the header.
func Generate(d *Descriptor, source string) Output {
	g := &gen{used: map[string]bool{"App": true, "AppOf": true, "GateCode": true}}
	var app strings.Builder
	app.WriteString("export type App = {\n")
	routes := map[string]map[string]Route{}
	var units []string
	for _, u := range d.Units {
		units = append(units, u.Name)
		fmt.Fprintf(&app, "  %s: {\n", u.Name)
		for _, f := range u.Flows {
			id := u.Name + "." + f.Name
			base := pascal(u.Name) + pascal(f.Name)
			in := g.named(id, "input", base+"Input", f.Input, f.Description)
			out := g.named(id, "output", base+"Output", f.Output, "")
			var errs []string
			codes := make([]string, 0, len(f.Errors))
			for c := range f.Errors {
				codes = append(codes, c)
			}
			sort.Strings(codes)
			for _, c := range codes {
				name := g.named(id, "errors."+c+".data", base+pascal(c)+"Data", f.Errors[c].Data, "")
				errs = append(errs, fmt.Sprintf("%s: %s", propKey(c), name))
			}
			if f.Description != "" {
				fmt.Fprintf(&app, "    /** %s */\n", comment(f.Description))
			}
			errType := "{}"
			if len(errs) > 0 {
				errType = "{ " + strings.Join(errs, "; ") + " }"
			}
			fmt.Fprintf(&app, "    %s: { input: %s; output: %s; errors: %s; gated: %t };\n",
				f.Name, in, out, errType, f.Gated)
			if f.Trigger != nil {
				if routes[u.Name] == nil {
					routes[u.Name] = map[string]Route{}
				}
				routes[u.Name][f.Name] = Route{Method: strings.ToUpper(f.Trigger.Method), Path: f.Trigger.Path}
			}
		}
		app.WriteString("  };\n")
	}
	app.WriteString("};\n")

	routeJSON := routeMap(units, routes)
	var dts bytes.Buffer
	fmt.Fprintf(&dts, "// Code generated by engine from %s; DO NOT EDIT.\n", source)
	dts.WriteString("// The declarations of this app's flows, for the client package " + PackageName + ".\n\n")
	dts.WriteString("import type { AppOf } from \"" + PackageName + "\";\n\n")
	dts.WriteString(g.decls.String())
	dts.WriteString(app.String())
	dts.WriteString("\n/** The gate codes: any gated flow may answer with them, though no flow declares them. */\n")
	dts.WriteString("export type GateCode = \"Unauthorized\" | \"Forbidden\" | \"RateLimited\";\n\n")
	dts.WriteString("/** The REST routes of the flows that have an HTTP trigger, by unit and flow (app.$routes). */\n")
	fmt.Fprintf(&dts, "export declare const $routes: %s;\n\n", routeJSON)
	dts.WriteString("/** The app value for createClient(app, url): its types, and REST for the flows with a trigger. */\n")
	dts.WriteString("export declare const app: AppOf<App>;\n\n")
	dts.WriteString("declare module \"" + PackageName + "\" {\n  interface Register {\n    app: App;\n  }\n}\n")

	var js bytes.Buffer
	fmt.Fprintf(&js, "// Code generated by engine from %s; DO NOT EDIT.\n", source)
	js.WriteString("// The REST routes of the app's flows; engine-client.d.ts holds their types.\n\n")
	fmt.Fprintf(&js, "export const $routes = %s;\n\n", routeJSON)
	js.WriteString("export const app = { $routes };\n")
	return Output{DTS: dts.Bytes(), JS: js.Bytes(), Problems: g.problems}
}

func routeMap(units []string, routes map[string]map[string]Route) string {
	var sb strings.Builder
	sb.WriteString("{")
	first := true
	for _, u := range units {
		flows := routes[u]
		if len(flows) == 0 {
			continue
		}
		if !first {
			sb.WriteString(",")
		}
		first = false
		names := make([]string, 0, len(flows))
		for f := range flows {
			names = append(names, f)
		}
		sort.Strings(names)
		fmt.Fprintf(&sb, "\n  %s: {", routeKey(u))
		for i, f := range names {
			if i > 0 {
				sb.WriteString(",")
			}
			r := flows[f]
			fmt.Fprintf(&sb, "\n    %s: { method: %s, path: %s }", routeKey(f), jsString(r.Method), jsString(r.Path))
		}
		sb.WriteString("\n  }")
	}
	if !first {
		sb.WriteString("\n")
	}
	sb.WriteString("}")
	return sb.String()
}

// pascal turns a unit, flow, code or definition name into a part of a type name: ASCII
// letters and digits are kept, and every other character (_ - . space, but also : / <
// and any non-ASCII rune) is dropped and starts a new word. Distinct names can meet
// (a_b and aB, not_found and NotFound): [gen.unique] tells the type names apart.
func pascal(s string) string {
	var sb strings.Builder
	up := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		sb.WriteRune(r)
	}
	return sb.String()
}

// comment makes text safe inside a /** */ comment on one line.
func comment(s string) string {
	s = strings.ReplaceAll(s, "*/", "*\\/")
	return strings.Join(strings.Fields(s), " ")
}

// propKey writes a property name of an object type: bare when it is an identifier,
// else a string literal.
func propKey(k string) string {
	if isIdent(k) {
		return k
	}
	return jsString(k)
}

// routeKey writes a unit or flow name (an identifier) as a key of the $routes object
// literal. A plain or quoted __proto__ key there would set the object's prototype
// instead of making a property; the computed form makes an own property (and, in the
// declarations, a property named __proto__).
func routeKey(k string) string {
	if k == "__proto__" {
		return "[" + jsString(k) + "]"
	}
	return k
}

// jsString quotes s as a JSON string, which JavaScript and TypeScript read as the same
// string (Go's strconv.Quote writes escapes such as \a and \U0010ffff that they read
// differently). HTML is not escaped: the output is a module, not a script in a page.
func jsString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
