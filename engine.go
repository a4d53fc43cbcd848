package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/bbc28f59/engine/internal/flatjson"
)

// App is an application server built from units of flows. Build it with [New]; serve it
// with [App.Handler] on any mux; run its background work between [App.Start] and
// [App.Close].
type App struct {
	logger      *slog.Logger
	maxBody     int64
	bodyTimeout time.Duration
	cop         *http.CrossOriginProtection // nil: off
	auth        Authenticator
	bindings    map[string]*binding // "unit.flow" → binding
	order       []*binding
	units       map[string][]*binding
	router      *router
	startHooks  []func(context.Context, *App) error
	closeHooks  []func(context.Context, *App) error
	outer       []Interceptor // around the whole call ([Intercept])
	inner       []Interceptor // around the handler, inside the gates ([InterceptHandler])
	descriptor  []byte
	descOnce    sync.Once
	tsFiles     tsFiles // /_engine/client.d.ts and client.js, built on first request
	lifecycleMu sync.Mutex
	started     bool
	extraRoutes []extraRoute
	values      map[any]any
	validators  []func(*App) error
}

// Option configures an [App]. Options are validated by [New].
type Option interface{ apply(*App) error }

type optionFunc func(*App) error

func (f optionFunc) apply(a *App) error { return f(a) }

// Options groups several options into one, so an extension package (auth, a store
// resource) can hand the app everything it needs as a single value.
func Options(opts ...Option) Option {
	return optionFunc(func(a *App) error {
		for _, o := range opts {
			if o == nil {
				continue
			}
			if err := o.apply(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// InvalidOption is an option that makes [New] fail with err: an extension package whose
// own configuration is wrong reports it where every other option error surfaces.
func InvalidOption(err error) Option {
	return optionFunc(func(*App) error { return err })
}

// WithLogger sets the logger for internal errors and panics (logged with detail, never
// sent to callers). The default is [slog.Default].
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(a *App) error {
		if l == nil {
			return errors.New("engine: WithLogger: nil logger")
		}
		a.logger = l
		return nil
	})
}

// DefaultMaxBodyBytes is the default request body limit.
const DefaultMaxBodyBytes = 1 << 20

// WithMaxBodyBytes sets the request body limit; larger bodies are answered with
// PayloadTooLarge (413).
func WithMaxBodyBytes(n int64) Option {
	return optionFunc(func(a *App) error {
		if n <= 0 {
			return fmt.Errorf("engine: WithMaxBodyBytes: limit must be positive, got %d", n)
		}
		a.maxBody = n
		return nil
	})
}

// Authenticator turns a request's credentials into a principal. It returns (nil, nil)
// when the request carries no credentials, and an error (usually [Unauthorized], with a
// WWW-Authenticate header set by [Error.WithHeader]) when they are present but invalid or
// expired. The app answers that error on every flow, public ones included, but those
// declared [TokenEndpoint], and on every route mounted with [Handle]. The gate package
// provides one.
type Authenticator interface {
	Authenticate(r *http.Request) (*Principal, error)
}

// WithAuthenticator sets how callers are authenticated. Gated (non-public) flows answer
// Unauthorized without a principal.
func WithAuthenticator(auth Authenticator) Option {
	return optionFunc(func(a *App) error {
		if auth == nil {
			return errors.New("engine: WithAuthenticator: nil authenticator")
		}
		if a.auth != nil {
			return errors.New("engine: WithAuthenticator: an authenticator is already set")
		}
		a.auth = auth
		return nil
	})
}

// OnStart registers work run by [App.Start] in order, such as schema migrations.
func OnStart(fn func(ctx context.Context, app *App) error) Option {
	return optionFunc(func(a *App) error { a.startHooks = append(a.startHooks, fn); return nil })
}

// OnClose registers work run by [App.Close] in reverse order.
func OnClose(fn func(ctx context.Context, app *App) error) Option {
	return optionFunc(func(a *App) error { a.closeHooks = append(a.closeHooks, fn); return nil })
}

// Mount mounts a plain HTTP handler beside the flows (for example a server-sent events
// route that is not a flow). Method and path use the trigger syntax (:name segments,
// available through r.PathValue). The app reads no credentials for it, so h may take its
// own (a webhook's signature, another service's token); mount with [Handle] for a route
// behind the app's authentication.
func Mount(method, path string, h http.Handler) Option {
	return optionFunc(func(a *App) error {
		def := &FlowDef{}
		if err := Trigger(method, path)(def); err != nil {
			return fmt.Errorf("engine: Mount: %w", err)
		}
		a.extraRoutes = append(a.extraRoutes, extraRoute{route: *def.route, params: def.params, h: h})
		return nil
	})
}

type extraRoute struct {
	route  Route
	params []string
	h      http.Handler
}

// New builds an app. It starts nothing: no goroutines, no listeners, no signal handlers.
func New(opts ...Option) (*App, error) {
	a := &App{
		logger:      slog.Default(),
		maxBody:     DefaultMaxBodyBytes,
		bodyTimeout: DefaultBodyTimeout,
		cop:         http.NewCrossOriginProtection(),
		bindings:    map[string]*binding{},
		units:       map[string][]*binding{},
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(a); err != nil {
			return nil, err
		}
	}
	if err := a.checkConfig(); err != nil {
		return nil, err
	}
	for _, v := range a.validators {
		if err := v(a); err != nil {
			return nil, err
		}
	}
	r, err := newRouter(a)
	if err != nil {
		return nil, err
	}
	a.router = r
	return a, nil
}

// Validate adds a function that [New] runs with the app once every option has been
// applied: a check of a configuration only the whole app shows (a flow that another
// option left unprotected), whose error fails New, or the set-up of an extension that
// needs the app itself (the durable runner hands it to its journal here).
func Validate(check func(app *App) error) Option {
	return optionFunc(func(a *App) error {
		if check == nil {
			return errors.New("engine: Validate: nil check")
		}
		a.validators = append(a.validators, check)
		return nil
	})
}

// checkConfig refuses an app that could only fail at run time: a gated flow that no
// caller can pass because nothing authenticates callers.
func (a *App) checkConfig() error {
	if a.auth != nil {
		return nil
	}
	for _, b := range a.order {
		if !b.def.public && !b.serverOnly {
			return fmt.Errorf("engine: flow %s is gated (not engine.Public()) but the app has no authenticator, so every call of it would be Unauthorized: add one (engine.WithAuthenticator, gate.Auth's Option) or declare the flow engine.Public()", b.def.ID())
		}
	}
	return nil
}

// Logger returns the app's logger.
func (a *App) Logger() *slog.Logger { return a.logger }

// Routes returns the route map of the flows with an HTTP trigger (the reference
// contract's $routes), for a client that calls over REST.
func (a *App) Routes() Routes {
	r := Routes{}
	for _, b := range a.order {
		if b.serverOnly {
			continue
		}
		r.add(b.def)
	}
	return r
}

// Flows returns the bound flows, sorted by unit and name.
func (a *App) Flows() []*FlowDef {
	out := make([]*FlowDef, 0, len(a.order))
	for _, b := range a.order {
		out = append(out, b.def)
	}
	sortFlows(out)
	return out
}

// Lookup returns the bound flow with the given "unit.flow" id.
func (a *App) Lookup(id string) (*FlowDef, bool) {
	b, ok := a.bindings[id]
	if !ok {
		return nil, false
	}
	return b.def, true
}

// Start runs the start hooks (migrations, the journal's background work). Call it once
// before serving; pair it with [App.Close].
func (a *App) Start(ctx context.Context) error {
	a.lifecycleMu.Lock()
	defer a.lifecycleMu.Unlock()
	if a.started {
		return errors.New("engine: app already started")
	}
	for _, h := range a.startHooks {
		if err := h(ctx, a); err != nil {
			return err
		}
	}
	a.started = true
	return nil
}

// Close runs the close hooks in reverse order and returns their joined errors.
func (a *App) Close(ctx context.Context) error {
	a.lifecycleMu.Lock()
	defer a.lifecycleMu.Unlock()
	if !a.started {
		return nil
	}
	var errs []error
	for i := len(a.closeHooks) - 1; i >= 0; i-- {
		errs = append(errs, a.closeHooks[i](ctx, a))
	}
	a.started = false
	return errors.Join(errs...)
}

// HandlerFunc is the untyped form of a bound flow: the typed handler is wrapped once into
// it, so gates, the journal and the HTTP layer share one shape without generics. in is a
// value of the flow's input type.
type HandlerFunc func(fx *Fx, in any) (any, error)

// Middleware wraps a flow's untyped handler; gates are middleware.
type Middleware func(next HandlerFunc) HandlerFunc

// BindOption configures a flow binding.
type BindOption func(*binding) error

// Use adds middleware to a binding, outermost first.
func Use(mw ...Middleware) BindOption {
	return func(b *binding) error {
		for _, m := range mw {
			if m == nil {
				return errors.New("nil middleware")
			}
		}
		b.mw = append(b.mw, mw...)
		return nil
	}
}

// BindOptions groups several bind options into one, so an extension (a gate) can hand a
// binding everything it needs as a single value.
func BindOptions(opts ...BindOption) BindOption {
	return func(b *binding) error {
		for _, o := range opts {
			if o == nil {
				continue
			}
			if err := o(b); err != nil {
				return err
			}
		}
		return nil
	}
}

// InvalidBindOption is a bind option that makes [New] fail with err: a misconfigured gate
// reports itself where every other registration error surfaces, instead of guarding
// nothing.
func InvalidBindOption(err error) BindOption {
	return func(*binding) error { return err }
}

// Tag attaches a descriptor flag to a binding, published in the descriptor under "tags".
// The gate package tags the gates it adds under "gate", which also marks a public flow
// (one that can still be rate limited) as gated.
func Tag(key string, value any) BindOption {
	return func(b *binding) error {
		if b.tags == nil {
			b.tags = map[string]any{}
		}
		b.tags[key] = value
		return nil
	}
}

// ServerOnly binds a flow that only server code runs (a scheduled flow, an internal job):
// it gets no route, RPC or REST, so a client calling it gets NotFound as for an unknown
// flow, and the descriptor lists it under "server" (id, description, tags) instead of
// among the callable flows. [App.Invoke] and the app's own machinery still run it.
func ServerOnly() BindOption {
	return func(b *binding) error {
		b.serverOnly = true
		return nil
	}
}

type binding struct {
	serverOnly bool
	def        *FlowDef
	mw         []Middleware
	tags       map[string]any
	handle     HandlerFunc // the typed handler wrapped, before middleware
	call       HandlerFunc // with middleware and the durable runner
	decode     func(raw []byte) (any, error)
	flat       *flatjson.Decoder // decode's reader of plain inputs; nil for an In it leaves to json.Unmarshal
	zero       func() any
	values     map[any]any
}

// Bind binds handler h to flow f. It is an [Option] of [New].
func Bind[In, Out any](f *Flow[In, Out], h func(fx *Fx, in In) (Out, error), opts ...BindOption) Option {
	if f == nil || f.def == nil {
		return InvalidOption(errors.New("engine: Bind: nil flow"))
	}
	if h == nil {
		return InvalidOption(fmt.Errorf("engine: Bind %s: nil handler", f.def.ID()))
	}
	return bind[In](f.def, func(fx *Fx, in In) (any, error) { return h(fx, in) }, opts)
}

// bind binds the handler h of def, whose input type is In: the typed handler is wrapped
// once into the untyped [HandlerFunc] everything else shares.
func bind[In any](def *FlowDef, h func(fx *Fx, in In) (any, error), opts []BindOption) Option {
	return optionFunc(func(a *App) error {
		if def.schemaErr != nil {
			return fmt.Errorf("engine: %w", def.schemaErr)
		}
		check, err := compileInput(def.ID(), def.inSchema)
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		b := &binding{def: def, flat: flatjson.New(reflect.TypeFor[In]())}
		b.handle = func(fx *Fx, in any) (any, error) {
			v, ok := in.(In)
			if !ok && in != nil {
				return nil, fmt.Errorf("engine: flow %s: input of type %T, want %v", def.ID(), in, reflect.TypeFor[In]())
			}
			return h(fx, v)
		}
		b.zero = func() any { var in In; return in }
		b.decode = func(raw []byte) (any, error) {
			var in In
			if err := decodeInput(raw, &in, def, check, b.flat); err != nil {
				return nil, err
			}
			return in, nil
		}
		for _, o := range opts {
			if err := o(b); err != nil {
				return fmt.Errorf("engine: Bind %s: %w", def.ID(), err)
			}
		}
		return a.addBinding(b)
	})
}

func (a *App) addBinding(b *binding) error {
	id := b.def.ID()
	if _, dup := a.bindings[id]; dup {
		return fmt.Errorf("engine: flow %s is bound twice", id)
	}
	a.bindings[id] = b
	a.order = append(a.order, b)
	a.units[b.def.unit] = append(a.units[b.def.unit], b)
	return nil
}

// chain composes a binding's handler: the outer interceptors, authentication for gated
// flows, the binding's middleware (its gates), the inner interceptors, the handler.
func (a *App) chain(b *binding) HandlerFunc {
	h := b.handle
	for i := len(a.inner) - 1; i >= 0; i-- {
		h = a.inner[i](b.def, h)
	}
	for i := len(b.mw) - 1; i >= 0; i-- {
		h = b.mw[i](h)
	}
	if !b.def.public {
		next := h
		h = func(fx *Fx, in any) (any, error) {
			if fx.principal == nil {
				return nil, Unauthorized()
			}
			return next(fx, in)
		}
	}
	for i := len(a.outer) - 1; i >= 0; i-- {
		h = a.outer[i](b.def, h)
	}
	return h
}
