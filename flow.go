package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Unit groups flows under a name. Units and flows are declarations: they carry types,
// triggers and error codes but no handler, so a contract package can declare them and be
// imported by both the server (which binds handlers with [Bind]) and the client.
type Unit struct {
	name string

	mu    sync.Mutex
	flows []*FlowDef
}

// NewUnit declares a unit. Names are JavaScript-style identifiers ("math", "notes").
func NewUnit(name string) *Unit { return &Unit{name: name} }

// Name returns the unit's name.
func (u *Unit) Name() string { return u.name }

// Flows returns the unit's declared flows in declaration order.
func (u *Unit) Flows() []*FlowDef {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*FlowDef(nil), u.flows...)
}

// Routes returns the REST route map of the unit's flows that have an HTTP trigger, in
// the shape of [App.Routes], so a client built from a contract package can use REST
// without the app value.
func (u *Unit) Routes() Routes { return RoutesOf(u) }

// RoutesOf returns the route map of the given units.
func RoutesOf(units ...*Unit) Routes {
	r := Routes{}
	for _, u := range units {
		for _, f := range u.Flows() {
			r.add(f)
		}
	}
	return r
}

// Route is the HTTP trigger of a flow.
type Route struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// Routes is the runtime route map (the reference contract's $routes): unit → flow →
// route, for flows with an HTTP trigger.
type Routes map[string]map[string]Route

func (r Routes) add(f *FlowDef) {
	if f.route == nil {
		return
	}
	if r[f.unit] == nil {
		r[f.unit] = map[string]Route{}
	}
	r[f.unit][f.name] = *f.route
}

// FlowDef is the untyped description of a flow: everything the HTTP layer, gates, the
// journal and the descriptor need, without its type parameters.
type FlowDef struct {
	unit, name string
	id         string // unit.name, built once: every call of the flow uses it
	route      *Route
	params     []string // path parameter names, in order
	errors     []ErrorSpec
	public     bool
	tokenEnd   bool // TokenEndpoint: the request's credentials are not read
	durable    bool
	inType     reflect.Type
	outType    reflect.Type
	inSchema   *jsonschema.Schema
	outSchema  *jsonschema.Schema
	schemaErr  error
	descr      string

	// A streaming flow's ([DefineStream]): outSchema describes the event stream, these
	// its events and its handler's result.
	stream       bool
	evType       reflect.Type
	evSchema     *jsonschema.Schema
	resultSchema *jsonschema.Schema

	inSchemaJSON func() (json.RawMessage, error) // the input schema encoded, once
}

// Unit returns the name of the flow's unit.
func (f *FlowDef) Unit() string { return f.unit }

// Name returns the flow's name within its unit.
func (f *FlowDef) Name() string { return f.name }

// ID returns "unit.flow".
func (f *FlowDef) ID() string {
	if f.id != "" {
		return f.id
	}
	return f.unit + "." + f.name
}

// Trigger returns the flow's HTTP trigger, if it has one.
func (f *FlowDef) Trigger() (Route, bool) {
	if f.route == nil {
		return Route{}, false
	}
	return *f.route, true
}

// PathParams returns the names of the trigger's :name segments.
func (f *FlowDef) PathParams() []string { return f.params }

// Public reports whether the flow needs no authentication.
func (f *FlowDef) Public() bool { return f.public }

// Durable reports whether the flow runs under the journal.
func (f *FlowDef) Durable() bool { return f.durable }

// Streaming reports whether the flow answers with an event stream ([DefineStream]).
func (f *FlowDef) Streaming() bool { return f.stream }

// EventType returns the Go type of a streaming flow's events, nil for another flow.
func (f *FlowDef) EventType() reflect.Type { return f.evType }

// EventSchema returns the JSON Schema of a streaming flow's events, nil for another flow.
func (f *FlowDef) EventSchema() *jsonschema.Schema { return f.evSchema }

// ResultSchema returns the JSON Schema of what the flow's handler returns: the output's
// for a flow, the result's for a streaming flow (whose [FlowDef.OutputSchema] describes
// the event stream).
func (f *FlowDef) ResultSchema() *jsonschema.Schema {
	if f.stream {
		return f.resultSchema
	}
	return f.outSchema
}

// Errors returns the declared error codes.
func (f *FlowDef) Errors() []ErrorSpec { return f.errors }

// ErrorSpec returns the declared error with the given code.
func (f *FlowDef) ErrorSpec(code string) (ErrorSpec, bool) {
	for _, e := range f.errors {
		if e.Code() == code {
			return e, true
		}
	}
	return nil, false
}

// InputType returns the Go type of the flow's input.
func (f *FlowDef) InputType() reflect.Type { return f.inType }

// OutputType returns the Go type of the flow's output.
func (f *FlowDef) OutputType() reflect.Type { return f.outType }

// InputSchema returns the JSON Schema inferred from the input type (with any
// [InputSchema] adjustments). Do not modify it.
func (f *FlowDef) InputSchema() *jsonschema.Schema { return f.inSchema }

// InputSchemaJSON returns [FlowDef.InputSchema] encoded as JSON ("null" for a flow
// without one). It is encoded once, on the first call, and the same bytes are returned
// after: do not modify them. Encoding a schema walks it by reflection, which an agent
// offering the flow as a tool would otherwise pay on every run.
func (f *FlowDef) InputSchemaJSON() (json.RawMessage, error) {
	if f.inSchemaJSON == nil { // a FlowDef not made by Define
		return json.Marshal(f.inSchema)
	}
	return f.inSchemaJSON()
}

// OutputSchema returns the JSON Schema of the output type.
func (f *FlowDef) OutputSchema() *jsonschema.Schema { return f.outSchema }

// Description returns the flow's description (see [Describe]).
func (f *FlowDef) Description() string { return f.descr }

// Flow is a typed flow handle: the declaration shared by server and client. In and Out
// are the flow's input and output types.
type Flow[In, Out any] struct {
	def *FlowDef
}

// Def returns the untyped description.
func (f *Flow[In, Out]) Def() *FlowDef { return f.def }

// ID returns "unit.flow".
func (f *Flow[In, Out]) ID() string { return f.def.ID() }

// FlowOption configures a flow declaration.
type FlowOption func(*FlowDef) error

// GET gives the flow the HTTP trigger GET path. Path segments of the form :name are
// filled from the same-named input field, the other fields from the query string. A HEAD
// request to the path is served by the same flow unless another declares HEAD for it. See
// [Trigger] for the path rules.
func GET(path string) FlowOption { return Trigger(http.MethodGet, path) }

// POST gives the flow the HTTP trigger POST path. Path segments of the form :name are
// filled from the same-named input field, the other fields from the JSON body.
func POST(path string) FlowOption { return Trigger(http.MethodPost, path) }

// PUT gives the flow the HTTP trigger PUT path. Path segments of the form :name are
// filled from the same-named input field, the other fields from the JSON body.
func PUT(path string) FlowOption { return Trigger(http.MethodPut, path) }

// PATCH gives the flow the HTTP trigger PATCH path. Path segments of the form :name are
// filled from the same-named input field, the other fields from the JSON body.
func PATCH(path string) FlowOption { return Trigger(http.MethodPatch, path) }

// DELETE gives the flow the HTTP trigger DELETE path. Path segments of the form :name
// are filled from the same-named input field, the other fields from the JSON body.
func DELETE(path string) FlowOption { return Trigger(http.MethodDelete, path) }

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Trigger gives the flow an HTTP trigger: method is GET, HEAD, POST, PUT, PATCH or
// DELETE; path starts with "/", is not under /_engine/ (reserved for RPC, the descriptor
// and the routes of [Handle]), and names input fields with :name segments. Mistakes are
// reported by [New].
func Trigger(method, path string) FlowOption { return trigger(method, path, false) }

// trigger is [Trigger]; engine allows paths under /_engine/ ([Handle]).
func trigger(method, path string, engine bool) FlowOption {
	return func(f *FlowDef) error {
		method = strings.ToUpper(method)
		switch method {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			return fmt.Errorf("unsupported trigger method %q", method)
		}
		if !strings.HasPrefix(path, "/") {
			return fmt.Errorf("trigger path %q must start with /", path)
		}
		if !engine && (strings.HasPrefix(path, "/_engine/") || path == "/_engine") {
			return fmt.Errorf("trigger path %q is reserved for engine", path)
		}
		var params []string
		for _, seg := range strings.Split(path[1:], "/") {
			if strings.HasPrefix(seg, ":") {
				name := seg[1:]
				if !paramName.MatchString(name) {
					return fmt.Errorf("trigger path %q: bad parameter %q", path, seg)
				}
				params = append(params, name)
			} else if strings.ContainsAny(seg, "{}*") {
				return fmt.Errorf("trigger path %q: use :name segments", path)
			}
		}
		f.route = &Route{Method: method, Path: path}
		f.params = params
		return nil
	}
}

// Errors declares the flow's error codes, each with its status and payload type.
func Errors(specs ...ErrorSpec) FlowOption {
	return func(f *FlowDef) error {
		for _, s := range specs {
			if IsFrameworkCode(s.Code()) {
				return fmt.Errorf("error code %q is a framework code; flows need not declare it", s.Code())
			}
			if s.Status() < 400 || s.Status() > 599 {
				return fmt.Errorf("error code %q: status %d is not an error status", s.Code(), s.Status())
			}
			f.errors = append(f.errors, s)
		}
		return nil
	}
}

// Public marks a flow that needs no authentication. Flows are gated by default. A public
// flow called with credentials the app's authenticator refuses (an expired access token)
// still answers 401 Unauthorized, as a gated flow does, so that the client refreshes and
// retries rather than running the call anonymously; without credentials it runs
// anonymously.
func Public() FlowOption {
	return func(f *FlowDef) error { f.public = true; return nil }
}

// TokenEndpoint marks a public flow that takes the caller's credentials in its input and
// issues tokens (sign-in, sign-up, refresh), like OAuth's token endpoint: the request's
// Authorization header is not read, so a stale access token that a client still sends
// cannot refuse the very call that replaces it. Its handler sees no principal.
func TokenEndpoint() FlowOption {
	return func(f *FlowDef) error { f.public, f.tokenEnd = true, true; return nil }
}

// Durable marks a flow that runs under a journal when the app has one (package durable):
// its run is recorded before its handler starts, its steps are recorded and replayed,
// and it may park awaiting a decision. In an app without a journal it runs as an
// ordinary flow.
func Durable() FlowOption {
	return func(f *FlowDef) error { f.durable = true; return nil }
}

// ErrParked is the error (possibly wrapped) with which the handler of a durable flow
// says that its run parked awaiting a decision: the run is suspended, its lease
// released, and it resumes when every open park is decided or times out. The caller
// gets 202 Accepted with meta {parked: true, runId}.
var ErrParked = errors.New("engine: run parked awaiting a decision")

// Describe sets a description, published in the descriptor and used as a tool description
// for agents.
func Describe(text string) FlowOption {
	return func(f *FlowDef) error { f.descr = text; return nil }
}

// InputSchema lets the declaration refine the inferred input schema, for constraints Go
// types cannot express (minLength, enum, minimum). The request is validated against it.
func InputSchema(adjust func(s *jsonschema.Schema)) FlowOption {
	return func(f *FlowDef) error {
		if f.inSchema != nil {
			adjust(f.inSchema)
		}
		return nil
	}
}

// Define declares a flow of unit u with input In and output Out. Declaration errors (a
// bad trigger, a type JSON Schema cannot describe) are reported by [New] when the flow is
// bound, so package-level declarations stay one-liners.
func Define[In, Out any](u *Unit, name string, opts ...FlowOption) *Flow[In, Out] {
	return &Flow[In, Out]{def: declare(u, name, reflect.TypeFor[In](), reflect.TypeFor[Out](), opts)}
}

// declare declares a flow of unit u with the given input and output types.
func declare(u *Unit, name string, in, out reflect.Type, opts []FlowOption) *FlowDef {
	def := &FlowDef{unit: u.name, name: name, id: u.name + "." + name, inType: in, outType: out}
	def.inSchemaJSON = sync.OnceValues(func() (json.RawMessage, error) {
		b, err := json.Marshal(def.inSchema)
		return b[:len(b):len(b)], err // full, so that a caller's append copies the shared bytes
	})
	def.inSchema, def.schemaErr = schemaFor(def.inType)
	if def.schemaErr == nil {
		def.outSchema, def.schemaErr = schemaFor(def.outType)
	}
	if !paramName.MatchString(name) || !paramName.MatchString(u.name) {
		def.schemaErr = fmt.Errorf("flow %s.%s: unit and flow names must be identifiers", u.name, name)
	}
	for _, o := range opts {
		if err := o(def); err != nil && def.schemaErr == nil {
			def.schemaErr = fmt.Errorf("flow %s: %w", def.ID(), err)
		}
	}
	if def.schemaErr == nil && def.route != nil {
		for _, p := range def.params {
			if !hasInputField(def, p) {
				def.schemaErr = fmt.Errorf("flow %s: path parameter :%s is not a field of the input", def.ID(), p)
			}
		}
	}
	u.mu.Lock()
	u.flows = append(u.flows, def)
	u.mu.Unlock()
	return def
}

// hasInputField reports whether a path parameter can be carried by the input: a struct
// field with that JSON name, or any map or interface input.
func hasInputField(def *FlowDef, name string) bool {
	s := def.inSchema
	if s == nil {
		return false
	}
	if s.Properties == nil {
		t := def.inType
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return t.Kind() == reflect.Map || t.Kind() == reflect.Interface
	}
	_, ok := s.Properties[name]
	return ok
}

var schemaCache sync.Map // reflect.Type → *jsonschema.Schema (shared, never mutated after cloning)

// schemaFor infers a schema and returns a private copy so InputSchema adjustments of one
// flow never leak into another flow of the same type.
func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	if t == reflect.TypeFor[NoContent]() {
		return &jsonschema.Schema{}, nil
	}
	if t.Implements(schemaProviderType) {
		return reflect.Zero(t).Interface().(SchemaProvider).JSONSchema(), nil
	}
	if v, ok := schemaCache.Load(t); ok {
		return v.(*jsonschema.Schema).CloneSchemas(), nil
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err != nil {
		return nil, err
	}
	schemaCache.Store(t, s)
	return s.CloneSchemas(), nil
}

// SchemaProvider is implemented by input or output types whose JSON Schema cannot be
// inferred from their Go fields (an event stream). JSONSchema must work on the zero value.
type SchemaProvider interface {
	JSONSchema() *jsonschema.Schema
}

var schemaProviderType = reflect.TypeFor[SchemaProvider]()

// NoContent is the output type of flows that answer HTTP 204 with no body, such as a
// store resource's remove flow.
type NoContent struct{}

// sortFlows orders flows by unit then name, for the descriptor and stable listings.
func sortFlows(fs []*FlowDef) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].unit != fs[j].unit {
			return fs[i].unit < fs[j].unit
		}
		return fs[i].name < fs[j].name
	})
}
