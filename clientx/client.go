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
	"github.com/bbc28f59/engine/httpx"
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
// the result; see [Result]. A flow that answers with an event stream (a streamed agent
// run) is not read: Call hangs up at once and fails with a TransportError that says to
// use the streaming call instead.
func Call[In, Out any](ctx context.Context, c *Client, f *engine.Flow[In, Out], in In) Result[Out] {
	if f == nil {
		return callDef[Out](ctx, c, nil, in, "Call")
	}
	return callDef[Out](ctx, c, f.Def(), in, "Call")
}

// callDef encodes in and calls the flow def through c.
func callDef[Out any](ctx context.Context, c *Client, def *engine.FlowDef, in any, what string) Result[Out] {
	if c == nil || def == nil {
		return Result[Out]{Error: clientError(engine.CodeValidation, "clientx: "+what+": nil client or flow")}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return Result[Out]{Error: clientError(engine.CodeValidation, "encoding input of "+def.ID()+": "+err.Error())}
	}
	return send[Out](ctx, c, def.Unit(), def.Name(), body)
}

// CallResult calls the streaming flow f for its result alone: the server runs it as it
// would for a stream and answers the result as the envelope (the request asks for
// application/json), so a caller that has no use for the events (a job, another
// service) gets the outcome as from [Call]: a parked durable run answers 202 with its
// run id in Meta, a failure is the envelope's error.
func CallResult[In, Ev, Out any](ctx context.Context, c *Client, f *engine.StreamFlow[In, Ev, Out], in In) Result[Out] {
	if f == nil {
		return callDef[Out](ctx, c, nil, in, "CallResult")
	}
	return callDef[Out](ctx, c, f.Def(), in, "CallResult")
}

// Call calls a flow by name ("unit.flow") with any JSON-encodable input (nil for
// none; a json.RawMessage is sent as it is) and returns its output as raw JSON. A path
// naming only a unit returns an IncompletePath error without sending anything.
func (c *Client) Call(ctx context.Context, path string, in any) Result[json.RawMessage] {
	unit, flow, body, e := namedCall(path, in)
	if e != nil {
		return Result[json.RawMessage]{Error: e}
	}
	return send[json.RawMessage](ctx, c, unit, flow, body)
}

// OpenStream calls a flow by name ("unit.flow") as [Client.Call] does, over the same
// route with the same headers, auth (one refresh on 401) and retries (network failure and
// 5xx, before any reply has begun), but asks for an event stream (Accept:
// text/event-stream). It exists for flows that answer with one, such as an agent run;
// the typed way to read an agent run is Stream in the clientx/agent package.
//
// When the reply is a 2xx text/event-stream, OpenStream returns the response with its
// body unread: the caller reads it (httpx.NewSSEReader) and must close it. The client's
// timeout ([WithTimeout]) bounds the wait for the response headers, not the stream, which
// ctx bounds (and a [Doer] with a whole-response timeout of its own, such as
// http.Client.Timeout); a stream cut mid-way is not retried, since that would run the
// flow again. Any other reply is read and closed here and comes back as the error of its
// envelope, as Call would return it (Unauthorized, Forbidden, ValidationError, NotFound,
// a declared code...), with its HTTP status; or as a TransportError when it is not an
// envelope, or is a success envelope (the flow does not stream: call it with Call).
func (c *Client) OpenStream(ctx context.Context, path string, in any) (*http.Response, *engine.Error) {
	unit, flow, body, e := namedCall(path, in)
	if e != nil {
		return nil, e
	}
	req, e := c.request(unit, flow, body)
	if e != nil {
		return nil, e
	}
	req.accept = httpx.SSEContentType
	r, e := c.t.do(ctx, req)
	if e != nil {
		return nil, e
	}
	if r.stream != nil {
		return r.stream, nil
	}
	defer r.release()
	res := decodeReply[json.RawMessage](req.method, r)
	if res.Error != nil {
		return nil, res.Error
	}
	msg := fmt.Sprintf("flow %s.%s answered HTTP %d with a JSON envelope, not an event stream: it does not stream; call it with Call", unit, flow, r.status)
	if res.Meta.Parked {
		msg = fmt.Sprintf("flow %s.%s answered HTTP %d: its durable run %s parked awaiting a decision, and it does not stream; call it with Call", unit, flow, r.status, res.Meta.RunID)
	}
	return nil, transportError(msg, r.status)
}

// namedCall splits a "unit.flow" path and encodes the input of a call by name.
func namedCall(path string, in any) (unit, flow string, body []byte, e *engine.Error) {
	unit, flow, _ = strings.Cut(path, ".")
	if flow == "" {
		return "", "", nil, clientError(engine.CodeIncompletePath, "Incomplete path: api."+unit)
	}
	switch v := in.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(v) {
			return "", "", nil, clientError(engine.CodeValidation, "input of "+path+" is not valid JSON")
		}
		body = v
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return "", "", nil, clientError(engine.CodeValidation, "encoding input of "+path+": "+err.Error())
		}
		body = b
	}
	return unit, flow, body, nil
}

// send routes one call, runs it through the transport and decodes the envelope.
func send[Out any](ctx context.Context, c *Client, unit, flow string, body []byte) Result[Out] {
	req, e := c.request(unit, flow, body)
	if e != nil {
		return Result[Out]{Error: e}
	}
	r, e := c.t.do(ctx, req)
	if e != nil {
		return Result[Out]{Error: e, Status: e.Status}
	}
	defer r.release()
	if r.stream != nil {
		e := transportError(fmt.Sprintf("flow %s.%s answered HTTP %d with an event stream (%s), which Call does not read: "+
			"use the streaming call, Stream in clientx/agent for an agent run (or Client.OpenStream)",
			unit, flow, r.status, httpx.SSEContentType), r.status)
		return Result[Out]{Error: e, Status: r.status}
	}
	return decodeReply[Out](req.method, r)
}

// request routes one call: REST when the table has the flow, RPC otherwise. An event
// stream reply is kept unread: [Client.OpenStream] hands it over, and Call closes it at
// once rather than buffer a whole agent run only to report that it cannot decode it.
func (c *Client) request(unit, flow string, body []byte) (request, *engine.Error) {
	if rt, ok := c.routes[unit+"."+flow]; ok {
		target, body, e := rt.request(c.base, body)
		if e != nil {
			return request{}, e
		}
		return request{method: rt.route.Method, url: target, body: body, keepStream: true}, nil
	}
	if body == nil {
		body = []byte{}
	}
	target := c.base + engine.RPCPrefix + url.PathEscape(unit) + "/" + url.PathEscape(flow)
	return request{method: http.MethodPost, url: target, body: body, keepStream: true}, nil
}

// clientError is an error found by the client before anything was sent.
func clientError(code, msg string) *engine.Error {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return &engine.Error{Code: code, Data: json.RawMessage(b)}
}
