package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Interceptor wraps the untyped handler of every flow of an app, unary and streaming
// alike: it is called once per flow when the app is built, with the flow's declaration,
// and returns the handler calls go through. The returned handler sees each call's
// context (principal, tenant, request), the decoded input (a value of the flow's input
// type) and the outcome: the output value, or the error the caller is answered with (an
// [*Error] carries the envelope's code; [ErrParked] a parked durable call). A streaming
// flow's output is its handler's result; its events go to the call's stream meanwhile.
//
// An interceptor that has nothing to do for a flow returns next unchanged, so the flows it
// skips pay nothing:
//
//	audit := func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
//		return func(fx *engine.Fx, in any) (any, error) {
//			out, err := next(fx, in)
//			log.Printf("%s by %v: %v", def.ID(), fx.Principal(), err)
//			return out, err
//		}
//	}
//	app, err := engine.New(engine.Intercept(audit), …)
//
// Interceptors are how the module's own extensions hook into calls (the durable runner
// is one); nothing they use is out of reach of yours.
type Interceptor func(def *FlowDef, next HandlerFunc) HandlerFunc

// Intercept adds interceptors around the whole call of every flow: outside the check
// that a gated flow has a principal and outside the flow's gates, so they see every call
// that got as far as a decoded input, denials included. The first given is the
// outermost; several Intercept options stack in the order given.
func Intercept(ics ...Interceptor) Option {
	return optionFunc(func(a *App) error {
		for _, ic := range ics {
			if ic == nil {
				return errors.New("engine: Intercept: nil interceptor")
			}
		}
		a.outer = append(a.outer, ics...)
		return nil
	})
}

// InterceptHandler adds interceptors around the handler of every flow only, inside its
// gates: for an extension that runs handlers itself under rules of its own, which the
// gates must have passed once already. The durable runner is one: a durable run begins
// after the caller passed the gates, and its later executions (a resume after an
// approval, a recovery) run the handler again without checking them a second time. The
// first given is the outermost.
func InterceptHandler(ics ...Interceptor) Option {
	return optionFunc(func(a *App) error {
		for _, ic := range ics {
			if ic == nil {
				return errors.New("engine: InterceptHandler: nil interceptor")
			}
		}
		a.inner = append(a.inner, ics...)
		return nil
	})
}

// RouteFunc serves a route mounted with [Handle]. fx is the request's call context: its
// principal is the authenticated caller (nil when the request carries no credentials,
// or the app has no authenticator) and its logger the app's. Answer with [WriteData] and
// [WriteError], which write the envelope, or write the response yourself.
type RouteFunc func(fx *Fx, w http.ResponseWriter, r *http.Request)

// Handle mounts h at method and path behind the app's authentication: a request whose
// credentials are invalid is answered Unauthorized before h runs, one without credentials
// reaches h with no principal (h decides what an anonymous caller may see). path uses the
// trigger syntax (:name segments, read with r.PathValue).
//
// Paths under /_engine/ may be mounted here, and only here: it is the namespace of the
// engine's own routes and its extensions' (a durable run's state, the console). An RPC
// call (POST /_engine/<unit>/<flow> of a bound flow) and the descriptor always win over a
// route mounted at the same path.
func Handle(method, path string, h RouteFunc) Option {
	return optionFunc(func(a *App) error {
		if h == nil {
			return fmt.Errorf("engine: Handle %s %s: nil handler", method, path)
		}
		def := &FlowDef{}
		if err := trigger(method, path, true)(def); err != nil {
			return fmt.Errorf("engine: Handle: %w", err)
		}
		route := &FlowDef{unit: "_route", name: def.route.Method + " " + def.route.Path}
		a.extraRoutes = append(a.extraRoutes, extraRoute{route: *def.route, params: def.params,
			h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fx := a.newFx(r.Context(), route, r)
				defer a.recoverPanic(w, r, route, nil)
				p, err := a.authenticate(r)
				if err != nil {
					a.writeError(w, r, route, err)
					return
				}
				fx.principal = p
				h(fx, w, r)
			})})
		return nil
	})
}

// Authenticate runs the app's authenticator on r: the principal, nil without credentials
// (or without an authenticator), or the error to answer (Unauthorized) when the
// credentials are invalid. Routes mounted with [Handle] are authenticated already.
func (a *App) Authenticate(r *http.Request) (*Principal, error) { return a.authenticate(r) }

// HasAuthenticator reports whether the app authenticates callers ([WithAuthenticator]):
// without one, asking an anonymous caller to sign in (Unauthorized) makes no sense.
func (a *App) HasAuthenticator() bool { return a.auth != nil }

// authenticate runs the app's authenticator for a request a route is about to serve. It
// is the one place credentials are judged, by the flows (but [TokenEndpoint] ones) and the
// routes mounted with [Handle] alike, and both answer its error before anything else: a
// request that presents credentials the authenticator refuses (an invalid or expired
// bearer token) gets 401 Unauthorized on every such route, public flows included, so that
// a client refreshes its token and retries instead of being served as someone anonymous
// (an approval answering "no approval is waiting"). A request without credentials goes
// on with no principal, and each route answers it as it would.
func (a *App) authenticate(r *http.Request) (*Principal, error) {
	if a.auth == nil {
		return nil, nil
	}
	return a.auth.Authenticate(r)
}

// NewCall returns the context of a call of the bound flow id that server code makes as
// principal p (nil for none), without a request: for an extension that runs a flow's
// handler itself, such as the durable runner re-executing a run with the handler its
// [Interceptor] was given. A streaming flow's events go nowhere (nobody is listening; a
// durable run's log still gets them). To call a flow as a caller would, gates and all,
// use [App.Invoke].
func (a *App) NewCall(ctx context.Context, id string, p *Principal) (*Fx, error) {
	b, ok := a.bindings[id]
	if !ok {
		return nil, NotFound("no flow %s", id)
	}
	fx := a.newFx(ctx, b.def, nil)
	fx.principal = p
	return fx, nil
}

// DecodeInput decodes and validates a JSON input of the bound flow id as a call of it
// would: the value a handler of the flow receives, or a validation error with the issues.
func (a *App) DecodeInput(id string, raw json.RawMessage) (any, error) {
	b, ok := a.bindings[id]
	if !ok {
		return nil, NotFound("no flow %s", id)
	}
	return b.decode(raw)
}

// HasGates reports whether the bound flow id has gates (middleware) beyond the
// authentication every gated flow needs, so a caller of [App.CheckGates] can skip
// preparing an input nothing would read.
func (a *App) HasGates(id string) bool {
	b, ok := a.bindings[id]
	return ok && len(b.mw) > 0
}

// CheckGates runs the gates of the bound flow id for principal p with input, without
// running its handler: nil when a call would be let through, the denial (Unauthorized,
// Forbidden, RateLimited …) otherwise. A nil input gives the gates the zero value of the
// flow's input type. An approval route checks the gates of the tool it approves for the
// person deciding this way. Give it a context from [ForRead] when the check is for a read
// of one of the flow's runs rather than a call.
func (a *App) CheckGates(ctx context.Context, id string, p *Principal, input json.RawMessage) error {
	b, ok := a.bindings[id]
	if !ok {
		return NotFound("no flow %s", id)
	}
	var in any
	if input == nil {
		in = b.zero()
	} else {
		var err error
		if in, err = b.decode(input); err != nil {
			return err
		}
	}
	if !b.def.public && p == nil {
		return Unauthorized()
	}
	pass := HandlerFunc(func(*Fx, any) (any, error) { return nil, nil })
	h := pass
	for i := len(b.mw) - 1; i >= 0; i-- {
		h = b.mw[i](h)
	}
	fx := a.newFx(ctx, b.def, nil)
	fx.principal = p
	if _, err := h(fx, in); err != nil {
		if e := a.publicError(ctx, b.def, err); e != nil {
			return e
		}
		return err
	}
	return nil
}

// readKey marks the context of a gate check made for a read.
type readKey struct{}

// ForRead returns ctx marked as that of a gate check for a read of one of a flow's runs
// (a poll of its state, a follow of its events), not a call of the flow: gates that meter
// calls ([IsForRead]) let it through without counting it.
func ForRead(ctx context.Context) context.Context { return context.WithValue(ctx, readKey{}, true) }

// IsForRead reports whether ctx is marked by [ForRead]. A gate that meters calls (a rate
// limit) checks it and draws nothing for a read.
func IsForRead(ctx context.Context) bool {
	v, _ := ctx.Value(readKey{}).(bool)
	return v
}
