package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine/internal/hook"
)

// internals is what the module's own extensions (durable, ai) need of an app and no
// user should call, handed to them through internal/ext so that it stays out of this
// package's API. Its methods are documented where internal/ext declares them.
type internals struct{}

func init() { hook.Engine = internals{} }

func (internals) AppOption(fn func(*App) error) Option { return optionFunc(fn) }

func (internals) SetDurable(a *App, wrap func(def *FlowDef, next HandlerFunc) HandlerFunc) error {
	if wrap == nil {
		return errors.New("engine: nil durable runner")
	}
	if a.durableWrap != nil {
		return errors.New("engine: a durable runner is already set")
	}
	a.durableWrap = wrap
	return nil
}

func (internals) MountEngine(unit, param string, h http.Handler) Option {
	return optionFunc(func(a *App) error {
		if unit == "" || param == "" || h == nil {
			return errors.New("engine: MountEngine needs a unit, a parameter and a handler")
		}
		if _, dup := a.engineGets[unit]; dup {
			return fmt.Errorf("engine: GET /_engine/%s/:%s is already mounted", unit, param)
		}
		if a.engineGets == nil {
			a.engineGets = map[string]engineGet{}
		}
		a.engineGets[unit] = engineGet{param: param, h: h}
		return nil
	})
}

func (internals) SetContext(fx *Fx, ctx context.Context) { fx.ctx = ctx }

func (internals) CallFx(a *App, ctx context.Context, def *FlowDef, p *Principal) *Fx {
	fx := a.newFx(ctx, def, nil)
	fx.principal = p
	return fx
}

func (internals) RouteFx(a *App, r *http.Request, p *Principal) *Fx {
	fx := a.newFx(r.Context(), &FlowDef{unit: "_route", name: "route"}, r)
	fx.principal = p
	return fx
}

func (internals) Handler(a *App, id string) (h HandlerFunc, decode func(raw []byte) (any, error), ok bool) {
	b, ok := a.bindings[id]
	if !ok {
		return nil, nil, false
	}
	return b.handle, b.decode, true
}

func (internals) AppOf(r *http.Request) *App {
	a, _ := r.Context().Value(appKey{}).(*App)
	return a
}

func (internals) Authenticate(a *App, r *http.Request) (*Principal, error) {
	if a.auth == nil {
		return nil, nil
	}
	return a.auth.Authenticate(r)
}

func (internals) WriteParked(fx *Fx, w http.ResponseWriter, r *http.Request) {
	fx.app.writeParked(w, r, fx)
}

func (internals) HasGates(a *App, id string) bool {
	b, ok := a.bindings[id]
	return ok && len(b.mw) > 0
}

func (internals) CheckGates(a *App, ctx context.Context, id string, p *Principal, input json.RawMessage) error {
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
	pass := func(*Fx, any) (any, error) { return nil, nil }
	h := HandlerFunc(pass)
	for i := len(b.mw) - 1; i >= 0; i-- {
		h = b.mw[i](h)
	}
	if !b.def.public && p == nil {
		return Unauthorized()
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
