package clientx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bbc28f59/engine"
)

// Client calls the flows of one engine app. Build it with [New] or [ForApp]; call flows
// with [Call] (typed) or [Client.Call] (by name). It is safe for concurrent use.
type Client struct {
	base   string // without a trailing slash
	t      *Transport
	routes map[string]*restRoute // "unit.flow" → compiled REST route
}

// New builds a client for the app served at baseURL (which may carry a path prefix,
// such as "https://example.com/api"). Calls go to RPC unless routes are given with
// [WithRoutes] or [WithRouteTable].
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("clientx: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("clientx: base URL %q: scheme must be http or https", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("clientx: base URL %q has no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("clientx: base URL %q must not carry a query or fragment", baseURL)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{base: strings.TrimRight(u.String(), "/"), t: newTransport(cfg), routes: map[string]*restRoute{}}
	table := FlattenRoutes(cfg.routes)
	for id, rt := range cfg.table {
		table[id] = rt
	}
	for id, rt := range table {
		c.routes[id] = compileRoute(rt)
	}
	if cfg.authFor != nil {
		a := cfg.authFor(c)
		if a.GetToken == nil && a.Refresh == nil {
			return nil, errors.New("clientx: WithClientAuth: the built Auth sets neither GetToken nor Refresh")
		}
		c.t.auth = &a
	}
	return c, nil
}

// ForApp builds a client whose types and routes come from the app value: flows with an
// HTTP trigger are called over REST, the others over RPC. Options may add a route table.
func ForApp(app *engine.App, baseURL string, opts ...Option) (*Client, error) {
	if app == nil {
		return nil, errors.New("clientx: ForApp: nil app")
	}
	return New(baseURL, append([]Option{WithRoutes(app.Routes())}, opts...)...)
}

// FlattenRoutes turns a route map into the flat "unit.flow" table.
func FlattenRoutes(r engine.Routes) map[string]engine.Route {
	out := make(map[string]engine.Route)
	for unit, flows := range r {
		for flow, rt := range flows {
			out[unit+"."+flow] = rt
		}
	}
	return out
}

// Transport returns the client's transport, for requests that are not flow calls (an
// agent stream) but need the same headers, auth, timeout and retries.
func (c *Client) Transport() *Transport { return c.t }

// BaseURL returns the base URL without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// Route returns the REST route the client uses for the flow id, and false when it
// calls the flow over RPC.
func (c *Client) Route(id string) (engine.Route, bool) {
	r, ok := c.routes[id]
	if !ok {
		return engine.Route{}, false
	}
	return r.route, true
}

// Call calls flow f with input in. Every outcome, a transport failure included, is in
// the result; see [Result].
func Call[In, Out any](ctx context.Context, c *Client, f *engine.Flow[In, Out], in In) Result[Out] {
	if c == nil || f == nil || f.Def() == nil {
		return Result[Out]{Error: clientError(engine.CodeValidation, "clientx: Call: nil client or flow")}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return Result[Out]{Error: clientError(engine.CodeValidation, "encoding input of "+f.ID()+": "+err.Error())}
	}
	def := f.Def()
	return send[Out](ctx, c, def.Unit(), def.Name(), body)
}

// Call calls a flow by name ("unit.flow") with any JSON-encodable input (nil for
// none; a json.RawMessage is sent as it is) and returns its output as raw JSON. A path
// naming only a unit returns an IncompletePath error without sending anything.
func (c *Client) Call(ctx context.Context, path string, in any) Result[json.RawMessage] {
	unit, flow, _ := strings.Cut(path, ".")
	if flow == "" {
		return Result[json.RawMessage]{Error: clientError(engine.CodeIncompletePath, "Incomplete path: api."+unit)}
	}
	var body []byte
	switch v := in.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(v) {
			return Result[json.RawMessage]{Error: clientError(engine.CodeValidation, "input of "+path+" is not valid JSON")}
		}
		body = v
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return Result[json.RawMessage]{Error: clientError(engine.CodeValidation, "encoding input of "+path+": "+err.Error())}
		}
		body = b
	}
	return send[json.RawMessage](ctx, c, unit, flow, body)
}

// send routes one call (REST when the table has the flow, RPC otherwise), runs it
// through the transport and decodes the envelope.
func send[Out any](ctx context.Context, c *Client, unit, flow string, body []byte) Result[Out] {
	method, target := http.MethodPost, ""
	if rt, ok := c.routes[unit+"."+flow]; ok {
		var e *engine.Error
		method = rt.route.Method
		target, body, e = rt.request(c.base, body)
		if e != nil {
			return Result[Out]{Error: e}
		}
	} else {
		target = c.base + engine.RPCPrefix + url.PathEscape(unit) + "/" + url.PathEscape(flow)
		if body == nil {
			body = []byte{}
		}
	}
	r, e := c.t.do(ctx, method, target, body)
	if e != nil {
		return Result[Out]{Error: e, Status: e.Status}
	}
	defer r.release()
	return decodeReply[Out](method, r)
}

// clientError is an error found by the client before anything was sent.
func clientError(code, msg string) *engine.Error {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return &engine.Error{Code: code, Data: json.RawMessage(b)}
}
