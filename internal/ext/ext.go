// Package ext gives the module's own extension packages (durable, ai) what they need of
// an app's internals and no user should call: the seam through which durable flows run,
// a durable run's re-execution, a flow's gates checked for another caller, and the call
// context of a route mounted beside the flows. Package engine hands them over when it is
// initialised (through internal/hook), so they stay out of its public API.
package ext

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/internal/hook"
)

// internals are the methods of engine's value in [hook.Engine].
type internals interface {
	AppOption(fn func(*engine.App) error) engine.Option
	SetDurable(a *engine.App, wrap func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc) error
	SetContext(fx *engine.Fx, ctx context.Context)
	MountEngine(unit, param string, h http.Handler) engine.Option
	CallFx(a *engine.App, ctx context.Context, def *engine.FlowDef, p *engine.Principal) *engine.Fx
	RouteFx(a *engine.App, r *http.Request, p *engine.Principal) *engine.Fx
	Handler(a *engine.App, id string) (h engine.HandlerFunc, decode func(raw []byte) (any, error), ok bool)
	AppOf(r *http.Request) *engine.App
	Authenticate(a *engine.App, r *http.Request) (*engine.Principal, error)
	HasGates(a *engine.App, id string) bool
	CheckGates(a *engine.App, ctx context.Context, id string, p *engine.Principal, input json.RawMessage) error
	WriteParked(fx *engine.Fx, w http.ResponseWriter, r *http.Request)
}

// in fails the module's start-up, not some later call, if engine's internals and this
// interface of them part ways.
var in = hook.Engine.(internals)

// MountEngine serves GET (and HEAD) /_engine/<unit>/:<param> with h, beside the RPC
// calls of the same unit (which are POST): the module's own read routes live under the
// prefix that user triggers may not take. h finds the app with [AppOf] and the segment
// with r.PathValue(param).
func MountEngine(unit, param string, h http.Handler) engine.Option {
	return in.MountEngine(unit, param, h)
}

// AppOption returns an option that calls fn with the app being built.
func AppOption(fn func(*engine.App) error) engine.Option { return in.AppOption(fn) }

// SetDurable makes wrap the runner of the app's durable flows: each durable flow's
// handler is wrapped once, inside its gates and middleware. An app has one runner; a
// second is an error.
func SetDurable(a *engine.App, wrap func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc) error {
	return in.SetDurable(a, wrap)
}

// SetContext replaces the context of the call of fx, for the durable runner, which puts
// its run's call scope in it for everything the handler and the reply do afterwards.
func SetContext(fx *engine.Fx, ctx context.Context) { in.SetContext(fx, ctx) }

// CallFx returns the context of a call of def without a request, as principal p (nil for
// anonymous): a durable run's re-execution.
func CallFx(a *engine.App, ctx context.Context, def *engine.FlowDef, p *engine.Principal) *engine.Fx {
	return in.CallFx(a, ctx, def, p)
}

// RouteFx returns a call context for a route mounted with [engine.Mount] beside the
// flows, as principal p, so it can write envelopes and use the app's services.
func RouteFx(a *engine.App, r *http.Request, p *engine.Principal) *engine.Fx {
	return in.RouteFx(a, r, p)
}

// Handler returns the bound flow id's handler as the app wraps it, before its
// middleware and its durable runner, and the decoder of its JSON input; ok is false
// when id is not bound.
func Handler(a *engine.App, id string) (h engine.HandlerFunc, decode func(raw []byte) (any, error), ok bool) {
	return in.Handler(a, id)
}

// AppOf returns the app serving a route mounted with [engine.Mount].
func AppOf(r *http.Request) *engine.App { return in.AppOf(r) }

// Authenticate runs the app's authenticator on r: (nil, nil) without credentials or
// without an authenticator.
func Authenticate(a *engine.App, r *http.Request) (*engine.Principal, error) {
	return in.Authenticate(a, r)
}

// HasGates reports whether the bound flow id has middleware (gates) beyond the
// authentication every gated flow needs, so a caller of [CheckGates] can skip preparing
// an input nothing would read.
func HasGates(a *engine.App, id string) bool { return in.HasGates(a, id) }

// CheckGates runs the bound flow id's gates for principal p and input without running
// its handler: nil when the call would be let through, the gate's denial otherwise. A
// nil input gives the gates the zero value of the flow's input type. The approval and
// follow routes check a flow's gates for whoever decides or follows.
func CheckGates(a *engine.App, ctx context.Context, id string, p *engine.Principal, input json.RawMessage) error {
	return in.CheckGates(a, ctx, id, p, input)
}

// WriteParked answers fx's call with the reply of a durable call that parked (202
// Accepted, no data, meta parked and what the handler set): for a [engine.Responder]
// whose work parked a run other than its call's own (an agent resume that parked again).
func WriteParked(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	in.WriteParked(fx, w, r)
}

// Route begins a request of a route mounted with [MountEngine]: it finds the app,
// authenticates the caller and returns the call context the route answers with. When
// authentication fails it has answered the request already, and ok is false.
func Route(w http.ResponseWriter, r *http.Request) (fx *engine.Fx, p *engine.Principal, ok bool) {
	app := AppOf(r)
	p, err := Authenticate(app, r)
	fx = RouteFx(app, r, p)
	if err != nil {
		engine.WriteError(fx, w, r, err)
		return fx, p, false
	}
	return fx, p, true
}

// readKey marks the context of a gate check made by [CheckRead].
type readKey struct{}

// CheckRead runs the gates of the bound flow id for principal p as a read of one of its
// runs (a poll of its state, a follow of its events), not as a call: gates that meter
// calls (gate.RateLimit) see [Reading] and draw nothing. A denial is notFound, so a run
// the caller may not read looks like one that does not exist; Unauthorized (sign in
// first) and a failure of the gates themselves (5xx) are returned as they are.
func CheckRead(a *engine.App, ctx context.Context, id string, p *engine.Principal, input json.RawMessage, notFound error) error {
	err := in.CheckGates(a, context.WithValue(ctx, readKey{}, true), id, p, input)
	if err == nil {
		return nil
	}
	if e := engine.AsError(err); e != nil && e.Code != engine.CodeUnauthorized && e.HTTPStatus() < 500 {
		return notFound
	}
	return err
}

// Reading reports whether ctx is that of a gate check made by [CheckRead]: a read of a
// run, which a gate metering calls of the flow lets through without counting it.
func Reading(ctx context.Context) bool {
	v, _ := ctx.Value(readKey{}).(bool)
	return v
}
