package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaIdempotencyKey is the _meta key under which a tool call carries its idempotency
// key ([engine.Fx.IdempotencyKey]): the same for every execution of the same call of a
// durable run, so a server can make the call's effect happen once.
const MetaIdempotencyKey = "engine/idempotencyKey"

// The declared errors of a remote tool, fed back to the model as the tool's result like
// any declared error.
var (
	// Unavailable: the server could not be reached, or the connection broke mid-call
	// (data {message}). The run goes on; the model sees the failure.
	Unavailable = engine.NewCode[RemoteFailure]("MCPUnavailable", http.StatusServiceUnavailable)
	// ToolFailed: the server answered the call with isError (data {message}: the
	// result's text).
	ToolFailed = engine.NewCode[RemoteFailure]("MCPToolError", http.StatusBadGateway)
)

// RemoteFailure is the payload of [Unavailable] and [ToolFailed].
type RemoteFailure struct {
	Message string `json:"message"`
}

// Transport reaches another MCP server: [HTTP] or [Command].
type Transport struct {
	name string
	dial func() sdk.Transport
}

// HTTP reaches the server at endpoint over the streamable HTTP transport; client, when
// not nil, carries the requests (credentials, timeouts).
func HTTP(endpoint string, client *http.Client) Transport {
	return Transport{name: endpoint, dial: func() sdk.Transport {
		return &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
	}}
}

// Command runs a local server as a command and speaks to it over its stdin and stdout.
// A fresh process is started whenever the last one is gone (it exited, or a call to it
// failed).
func Command(name string, args ...string) Transport {
	return Transport{name: name, dial: func() sdk.Transport {
		return &sdk.CommandTransport{Command: exec.Command(name, args...)}
	}}
}

// Remote is tools of another MCP server, served to agents as flows of a unit of the app:
// an agent names them like any tool ([Remote.Tools]), and because they are flows, gates
// and approvals wrap them like any tool ([Remote.Bind] with [Each] and [ForTool]).
//
//	bank := mcp.NewRemote(engine.NewUnit("bank"), mcp.HTTP("https://bank.example/mcp", nil), "balance", "transfer")
//	assistant := ai.Agent("assistant", model, ai.Tools(Weather).With(bank.Tools()), 6)
//	app, err := engine.New(…,
//		bank.Bind(mcp.Each(gate.Scopes("bank")),
//			mcp.ForTool("transfer", ai.Approval(func(in map[string]any) bool { return in["amount"].(float64) > 100 }))),
//	)
//
// The model sees each tool's description and input schema as the server lists them
// (asked once, then kept); the arguments it gives are validated against that schema, and
// a validation error is fed back like a flow's. Inside a durable run every call is a
// journal step (recorded once, replayed on resume) and carries the step's idempotency key
// in _meta ([MetaIdempotencyKey]). A server that cannot be reached, or that fails
// mid-call, is the declared error [Unavailable] and a call it answers with isError is
// [ToolFailed]: both are the tool's result the model sees, never a failed run.
//
// The flows are not public: like every tool flow they can also be called over HTTP by a
// signed-in caller whom their gates admit.
type Remote struct {
	unit      *engine.Unit
	transport Transport
	names     []string
	flows     map[string]*engine.Flow[map[string]any, json.RawMessage] // by tool name

	mu      sync.Mutex
	session *sdk.ClientSession
	listed  map[string]*remoteTool // the server's tools, once listed
}

// remoteTool is a tool as the server listed it.
type remoteTool struct {
	desc   ai.ToolDescription
	schema *jsonschema.Resolved // nil when the schema does not resolve: the server checks
}

// NewRemote declares the tools named (as the server names them) of the server t reaches
// as flows of unit u: a tool "get-forecast" is the flow "<unit>.get_forecast".
func NewRemote(u *engine.Unit, t Transport, tools ...string) *Remote {
	r := &Remote{unit: u, transport: t, names: slices.Clone(tools),
		flows: map[string]*engine.Flow[map[string]any, json.RawMessage]{}}
	for _, name := range tools {
		r.flows[name] = engine.Define[map[string]any, json.RawMessage](u, flowName(name),
			engine.Describe("Tool "+name+" of the MCP server at "+t.name+"."), engine.Errors(Unavailable, ToolFailed))
	}
	return r
}

// flowName makes a tool name a flow name: characters other than letters, digits and _
// become _, and a leading digit gets a _ before it.
func flowName(tool string) string {
	var b strings.Builder
	for i, c := range tool {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c >= '0' && c <= '9' && i > 0:
			b.WriteRune(c)
		case c >= '0' && c <= '9':
			b.WriteString("_")
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Tools is the set of the remote tools, for an agent's tools.
func (r *Remote) Tools() ai.ToolSet {
	ids := make([]string, 0, len(r.names))
	for _, name := range r.names {
		ids = append(ids, r.flows[name].ID())
	}
	return ai.ToolNames(ids...)
}

// Flow returns the flow of the tool named name, or nil.
func (r *Remote) Flow(name string) *engine.Flow[map[string]any, json.RawMessage] {
	return r.flows[name]
}

// ToolOption gives bind options (a gate, an approval) to remote tools: [Each] to
// every one, [ForTool] to one.
type ToolOption struct {
	tool string // "" for every tool
	opts []engine.BindOption
}

// Each gives opts to every tool of the Remote.
func Each(opts ...engine.BindOption) ToolOption { return ToolOption{opts: opts} }

// ForTool gives opts to the tool named tool (as the server names it).
func ForTool(tool string, opts ...engine.BindOption) ToolOption {
	return ToolOption{tool: tool, opts: opts}
}

// Bind binds every tool's flow with the options given for it. It is an [engine.Option].
func (r *Remote) Bind(opts ...ToolOption) engine.Option {
	for _, o := range opts {
		if _, ok := r.flows[o.tool]; o.tool != "" && !ok {
			return engine.InvalidOption(fmt.Errorf("mcp: Bind: %q is not a tool of this Remote", o.tool))
		}
	}
	var all []engine.Option
	for _, name := range r.names {
		var bo []engine.BindOption
		for _, o := range opts {
			if o.tool == "" || o.tool == name {
				bo = append(bo, o.opts...)
			}
		}
		bo = append(bo, ai.DescribeTool(func(ctx context.Context) (ai.ToolDescription, error) {
			t, err := r.tool(ctx, name)
			if err != nil {
				return ai.ToolDescription{}, err
			}
			return t.desc, nil
		}))
		all = append(all, engine.Bind(r.flows[name], r.call(name), bo...))
	}
	all = append(all, engine.OnClose(func(context.Context, *engine.App) error { return r.Close() }))
	return engine.Options(all...)
}

// Close ends the connection to the server (a command's process exits).
func (r *Remote) Close() error {
	r.mu.Lock()
	s := r.session
	r.session = nil
	r.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// connect returns the session, connecting when there is none.
func (r *Remote) connect(ctx context.Context) (*sdk.ClientSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.session != nil {
		return r.session, nil
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "engine", Version: "v1"}, nil)
	s, err := c.Connect(ctx, r.transport.dial(), nil)
	if err != nil {
		return nil, err
	}
	r.session = s
	return s, nil
}

// drop forgets a session that failed, so the next call connects again.
func (r *Remote) drop(s *sdk.ClientSession) {
	r.mu.Lock()
	if r.session == s {
		r.session = nil
	}
	r.mu.Unlock()
	_ = s.Close()
}

// tool returns the server's listing of the tool named name, listing the tools the first
// time it is asked.
func (r *Remote) tool(ctx context.Context, name string) (*remoteTool, error) {
	r.mu.Lock()
	listed := r.listed
	r.mu.Unlock()
	if listed == nil {
		s, err := r.connect(ctx)
		if err != nil {
			return nil, err
		}
		listed = map[string]*remoteTool{}
		for t, err := range s.Tools(ctx, nil) {
			if err != nil {
				r.drop(s)
				return nil, err
			}
			params, err := json.Marshal(t.InputSchema)
			if err != nil {
				continue
			}
			rt := &remoteTool{desc: ai.ToolDescription{Description: t.Description, Parameters: params}}
			var schema jsonschema.Schema
			if json.Unmarshal(params, &schema) == nil {
				rt.schema, _ = schema.Resolve(nil)
			}
			listed[t.Name] = rt
		}
		r.mu.Lock()
		r.listed = listed
		r.mu.Unlock()
	}
	t, ok := listed[name]
	if !ok {
		return nil, fmt.Errorf("mcp: the server at %s has no tool %q", r.transport.name, name)
	}
	return t, nil
}

// call is the handler of the tool named name.
func (r *Remote) call(name string) func(fx *engine.Fx, in map[string]any) (json.RawMessage, error) {
	return func(fx *engine.Fx, in map[string]any) (json.RawMessage, error) {
		ctx := fx.Context()
		if in == nil {
			in = map[string]any{}
		}
		t, err := r.tool(ctx, name)
		if err != nil {
			return nil, unavailable(ctx, err)
		}
		if t.schema != nil {
			if err := t.schema.Validate(in); err != nil {
				return nil, engine.Invalid(engine.ValidationIssue{Message: err.Error()})
			}
		}
		s, err := r.connect(ctx)
		if err != nil {
			return nil, unavailable(ctx, err)
		}
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: in,
			Meta: sdk.Meta{MetaIdempotencyKey: fx.IdempotencyKey()}})
		if err != nil {
			if ctx.Err() == nil {
				r.drop(s) // the connection may be broken: the next call connects again
			}
			return nil, unavailable(ctx, err)
		}
		text := resultText(res)
		if res.IsError {
			return nil, ToolFailed.New(RemoteFailure{Message: text})
		}
		if res.StructuredContent != nil {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				return b, nil
			}
		}
		b, err := json.Marshal(map[string]string{"text": text})
		return b, err
	}
}

// unavailable is the tool's answer when the server is away, unless the call itself was
// cancelled (the run stops, and is not told a story about the server).
func unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.Join(ctx.Err(), err)
	}
	return Unavailable.New(RemoteFailure{Message: err.Error()})
}

// resultText joins the text contents of a tool result.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
