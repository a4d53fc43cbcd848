package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where [Serve] mounts the MCP endpoint unless [Options.Path] says otherwise.
const Path = "/_engine/mcp"

// Protocol revisions the endpoint answers: those of the official Go SDK it is built on,
// negotiated with each client (initialize, or per request from 2026-07-28 on).
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}

// Options configure [Serve].
type Options struct {
	// Name and Version are the server's identity in the handshake. Defaults "engine", "v1".
	Name, Version string
	// Instructions, when set, tell clients (and their models) how to use the server.
	Instructions string
	// Tools selects the flows served as tools; a flow any selector picks is a tool. Empty
	// means [PublicFlows]. Streaming flows are never tools.
	Tools []Selector
	// Resources are the store resources served read-only ([Resource]).
	Resources []Resource
	// AllowedHosts are host names the endpoint accepts in Host and Origin besides
	// localhost, 127.0.0.1 and [::1] when the request arrived on a loopback address: the
	// DNS-rebinding protection MCP's security practices ask of local servers. A request on
	// another address is not checked (put the app behind your proxy's host rules).
	AllowedHosts []string
	// Path is where the endpoint is mounted. Default [Path].
	Path string
}

// Selector picks flows to serve as tools.
type Selector struct {
	match func(def *engine.FlowDef) bool
	ids   []string // flows named explicitly: each must be a bound flow that can be a tool
}

// PublicFlows selects every public flow of the app (public flows of built-in units,
// such as a public sign-in, included: prefer [Units] or [Flows] to say exactly which).
func PublicFlows() Selector { return Selector{match: (*engine.FlowDef).Public} }

// Units selects every flow of the given units, gated ones included: a call runs the
// flow's gates as the caller.
func Units(units ...*engine.Unit) Selector {
	return Selector{match: func(def *engine.FlowDef) bool {
		return slices.ContainsFunc(units, func(u *engine.Unit) bool { return u.Name() == def.Unit() })
	}}
}

// Declared is a flow declaration: an *engine.Flow (or the flows of a store resource).
type Declared interface {
	Def() *engine.FlowDef
}

// Flows selects the given flows; each must be bound and able to be a tool (its input an
// object, not a streaming flow), or [Serve] refuses to build the app.
func Flows(flows ...Declared) Selector {
	s := Selector{}
	for _, f := range flows {
		if f == nil || f.Def() == nil {
			s.ids = append(s.ids, "")
			continue
		}
		s.ids = append(s.ids, f.Def().ID())
	}
	return s
}

// Serve mounts an MCP server (the streamable HTTP transport of the official Go SDK) at
// [Path] that serves the app's flows as tools and its store resources as resources. It
// is an [engine.Option].
//
//	mcp.Serve(mcp.Options{Tools: []mcp.Selector{mcp.Units(Math)}})
//
// The server is stateless: every request stands alone (no Mcp-Session-Id, nothing kept
// between requests), so any instance of the app answers any request behind a plain load
// balancer. It answers POST only; the server never calls the client back (no sampling,
// no elicitation, no notifications on a GET stream).
//
// Every request is authenticated as any route of the app is (invalid credentials: 401
// before MCP sees the request), and every tool call runs as [engine.App.Invoke] with the
// caller's principal: the flow's gates, tenant and rate limits apply as over HTTP. See
// the package documentation for what a tool carries and how results and failures read.
func Serve(opts Options) engine.Option {
	if opts.Path == "" {
		opts.Path = Path
	}
	if !strings.HasPrefix(opts.Path, "/") {
		return engine.InvalidOption(fmt.Errorf("mcp: Serve: path %q must begin with /", opts.Path))
	}
	if opts.Name == "" {
		opts.Name = "engine"
	}
	if opts.Version == "" {
		opts.Version = "v1"
	}
	for _, s := range opts.Tools {
		if slices.Contains(s.ids, "") {
			return engine.InvalidOption(errors.New("mcp: Serve: a nil flow in Flows"))
		}
	}
	for _, r := range opts.Resources {
		if err := r.check(); err != nil {
			return engine.InvalidOption(err)
		}
	}
	s := &server{opts: opts}
	return engine.Options(
		engine.Validate(s.build),
		engine.Handle(http.MethodPost, opts.Path, s.serve),
	)
}

// server is one app's MCP endpoint.
type server struct {
	opts Options
	app  *engine.App
	mcp  *sdk.Server
	http http.Handler
}

// principalKey carries the caller into the SDK's handlers, which run on the request's
// context.
type principalKey struct{}

func principalOf(ctx context.Context) *engine.Principal {
	p, _ := ctx.Value(principalKey{}).(*engine.Principal)
	return p
}

func (s *server) serve(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	if err := s.checkHost(r); err != nil {
		engine.WriteError(fx, w, r, err)
		return
	}
	ctx := context.WithValue(r.Context(), principalKey{}, fx.Principal())
	s.http.ServeHTTP(w, r.WithContext(ctx))
}

// build makes the MCP server once the app is complete.
func (s *server) build(app *engine.App) error {
	s.app = app
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: s.opts.Name, Version: s.opts.Version}, &sdk.ServerOptions{
		Instructions:              s.opts.Instructions,
		Logger:                    quiet(app.Logger()),
		Capabilities:              capabilities(len(s.opts.Resources) > 0),
		SupportedProtocolVersions: ProtocolVersions,
	})
	tools, err := s.selectTools(app)
	if err != nil {
		return err
	}
	for _, def := range tools {
		t, err := toolOf(def)
		if err != nil {
			return err
		}
		s.mcp.AddTool(t, s.callTool(def))
	}
	if err := s.addResources(app); err != nil {
		return err
	}
	s.http = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp }, &sdk.StreamableHTTPOptions{
		// Each reply is one SSE event: the SDK's application/json path measured ~1 ms
		// slower a call on loopback (bench/mcp_test.go).
		Stateless: true,
		Logger:    quiet(app.Logger()),
		// Our own check below (checkHost) also reads Origin and takes AllowedHosts.
		DisableLocalhostProtection: true,
	})
	return nil
}

// capabilities are what the server offers: tools, and resources when it has some, with no
// list-changed notifications (a stateless server cannot send them) and no logging (it has
// no session to log to).
func capabilities(resources bool) *sdk.ServerCapabilities {
	c := &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}
	if resources {
		c.Resources = &sdk.ResourceCapabilities{}
	}
	return c
}

// selectTools returns the flows the selectors pick, in the app's order.
func (s *server) selectTools(app *engine.App) ([]*engine.FlowDef, error) {
	sels := s.opts.Tools
	if len(sels) == 0 {
		sels = []Selector{PublicFlows()}
	}
	var out []*engine.FlowDef
	picked := map[string]bool{}
	for _, sel := range sels {
		for _, id := range sel.ids {
			def, ok := app.Lookup(id)
			if !ok {
				return nil, fmt.Errorf("mcp: tool flow %s is not bound in this app", id)
			}
			if why := notATool(def); why != "" {
				return nil, fmt.Errorf("mcp: flow %s cannot be a tool: %s", id, why)
			}
			picked[id] = true
		}
	}
	for _, def := range app.Flows() {
		id := def.ID()
		if !picked[id] {
			for _, sel := range sels {
				if sel.match != nil && sel.match(def) && notATool(def) == "" {
					picked[id] = true
				}
			}
		}
		if picked[id] {
			out = append(out, def)
		}
	}
	return out, nil
}

// notATool says why a flow cannot be a tool, or "".
func notATool(def *engine.FlowDef) string {
	switch s := def.InputSchema(); {
	case def.Streaming():
		return "it streams events, which a tool result cannot carry"
	case s == nil || s.Type != "object":
		return "its input is not a JSON object, as MCP tools take"
	}
	return ""
}

// toolOf describes flow def as a tool: its id as the name, its description (with its
// declared errors), its input schema, and its output schema: as it is when the output
// is an object, under "result" when it is another value (structured content is an
// object), and none for a durable flow, whose call may answer with a parked run instead.
func toolOf(def *engine.FlowDef) (*sdk.Tool, error) {
	t := &sdk.Tool{Name: def.ID(), Title: def.ID(), InputSchema: def.InputSchema(),
		Meta: sdk.Meta{"engine/flow": def.ID()}}
	t.Description = def.Description()
	if t.Description == "" {
		t.Description = "Calls flow " + def.ID() + "."
	}
	if errs := def.Errors(); len(errs) > 0 {
		codes := make([]string, len(errs))
		decl := make([]map[string]any, len(errs))
		for i, e := range errs {
			codes[i] = e.Code()
			decl[i] = map[string]any{"code": e.Code(), "status": e.Status()}
		}
		t.Description += " Fails with: " + strings.Join(codes, ", ") + "."
		t.Meta["engine/errors"] = decl
	}
	if r, ok := def.Trigger(); ok && r.Method == http.MethodGet {
		t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	}
	if out := def.OutputSchema(); out != nil && !def.Durable() && !isEmpty(out) {
		if out.Type == "object" {
			t.OutputSchema = out
		} else {
			t.OutputSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"result": out},
				Required: []string{"result"}}
		}
	}
	// Encoded once here: the SDK re-encodes a tool's input schema on every call (to look
	// for header annotations), which costs far less from bytes than from a Schema value.
	for _, sch := range []*any{&t.InputSchema, &t.OutputSchema} {
		if *sch == nil {
			continue
		}
		b, err := json.Marshal(*sch)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s: %w", def.ID(), err)
		}
		*sch = json.RawMessage(b)
	}
	return t, nil
}

// isEmpty reports whether s says nothing (any value, or no content).
func isEmpty(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "{}" || string(b) == "true")
}

// callTool runs flow def for a tools/call, as the caller.
func (s *server) callTool(def *engine.FlowDef) sdk.ToolHandler {
	wrap := def.OutputSchema() != nil && def.OutputSchema().Type != "object"
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		out, err := s.app.Invoke(ctx, def.ID(), principalOf(ctx), args)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var acc *engine.AcceptedError
		switch {
		case errors.As(err, &acc):
			return parked(acc.RunID), nil
		case err != nil:
			return failed(err), nil
		}
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}
		switch {
		case wrap:
			res.StructuredContent = map[string]json.RawMessage{"result": out}
		case len(out) > 0 && out[0] == '{':
			res.StructuredContent = out
		}
		return res, nil
	}
}

// failed is the tool result of a call that failed: isError, with the envelope's error
// object as JSON text ({"code": …, "data": …}), and no structured content, which a
// client would check against the tool's output schema.
func failed(err error) *sdk.CallToolResult {
	e := engine.AsError(err)
	if e == nil {
		e = engine.NewError(engine.CodeInternal, map[string]any{"message": "internal error"})
	}
	b, mErr := json.Marshal(map[string]any{"code": e.Code, "data": e.Data})
	if mErr != nil {
		b = []byte(`{"code":"` + e.Code + `"}`)
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
}

// parked is the tool result of a call whose durable run waits for a decision: not an
// error, the run's id in text, in structured content and in _meta, and where to read
// the run's state (and, once it completes, its result).
func parked(runID string) *sdk.CallToolResult {
	state := strings.Replace(durable.RunPath, ":runId", runID, 1)
	text := fmt.Sprintf("The call's durable run %s waits for a decision. Its state, and its result once it completes, are at GET %s; an operator decides it with the flow runs.decide (or, for an agent's tool, the approval routes).", runID, state)
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: map[string]any{"parked": true, "runId": runID, "state": state},
		Meta:              sdk.Meta{"engine/runId": runID, "engine/parked": true},
	}
}

// quiet passes on the SDK's warnings and errors only: it logs every request's session
// at level info, which a stateless server would repeat for every call.
func quiet(l *slog.Logger) *slog.Logger { return slog.New(warnings{l.Handler()}) }

type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn && w.Handler.Enabled(ctx, level)
}
func (w warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(as)} }
func (w warnings) WithGroup(name string) slog.Handler    { return warnings{w.Handler.WithGroup(name)} }
