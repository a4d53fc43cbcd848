package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
)

// Fx is the per-call context handed to every handler: the request's context and
// metadata, the caller, a logger, and the services of the app (journal, AI) that later
// capabilities add. An Fx is valid only during its call.
type Fx struct {
	ctx       context.Context
	app       *App
	flow      *FlowDef
	req       *http.Request
	logger    *slog.Logger
	principal *Principal

	mu   sync.Mutex
	meta map[string]any
	ext  map[any]any
}

// Context returns the call's context: cancelled when the client goes away or the call
// ends.
func (fx *Fx) Context() context.Context { return fx.ctx }

// WithContext returns a shallow copy of fx using ctx, for handlers that derive deadlines.
func (fx *Fx) WithContext(ctx context.Context) *Fx {
	c := &Fx{ctx: ctx, app: fx.app, flow: fx.flow, req: fx.req, logger: fx.logger, principal: fx.principal, meta: fx.meta, ext: fx.ext}
	return c
}

// App returns the app serving the call.
func (fx *Fx) App() *App { return fx.app }

// Flow returns the flow being called.
func (fx *Fx) Flow() *FlowDef { return fx.flow }

// Request returns the HTTP request, or nil when the flow runs without one (a tool call by
// an agent, a resumed durable run).
func (fx *Fx) Request() *http.Request { return fx.req }

// Header returns a request header, or "" when there is no request.
func (fx *Fx) Header(name string) string {
	if fx.req == nil {
		return ""
	}
	return fx.req.Header.Get(name)
}

// Logger returns the app's logger annotated with the flow.
func (fx *Fx) Logger() *slog.Logger { return fx.logger }

// Principal returns the authenticated caller, or nil for an anonymous call of a public
// flow.
func (fx *Fx) Principal() *Principal { return fx.principal }

// Tenant returns the caller's tenant, or "".
func (fx *Fx) Tenant() string {
	if fx.principal == nil {
		return ""
	}
	return fx.principal.Tenant
}

// SetMeta sets a member of the reply's top-level meta object (for example nextCursor).
func (fx *Fx) SetMeta(key string, value any) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.meta == nil {
		fx.meta = map[string]any{}
	}
	fx.meta[key] = value
}

func (fx *Fx) metaJSON() (json.RawMessage, error) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if len(fx.meta) == 0 {
		return nil, nil
	}
	return json.Marshal(fx.meta)
}

// Value returns a per-call value stored by an extension package with [Fx.SetValue].
// Keys should be unexported types of the storing package, as with context values.
func (fx *Fx) Value(key any) any {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.ext[key]
}

// SetValue stores a per-call value for extension packages (the journal run, the gate's
// decisions), so the root package need not know them.
func (fx *Fx) SetValue(key, value any) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.ext == nil {
		fx.ext = map[any]any{}
	}
	fx.ext[key] = value
}

// NewFx returns a call context for a plain route mounted beside the flows (for example the
// agent follow route), so it can use the app's services and write envelopes.
func (a *App) NewFx(r *http.Request, p *Principal) *Fx {
	fx := a.newFx(r.Context(), &FlowDef{unit: "_route", name: "route"}, r)
	fx.principal = p
	return fx
}
