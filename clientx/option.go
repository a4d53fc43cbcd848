package clientx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
)

// Doer sends one HTTP request: the reference contract's fetch option. *http.Client satisfies it, and
// so does [InProcess] for serving an app in memory.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Retry says how often and how patiently a request is repeated after a network failure
// (a timeout included) or an HTTP 5xx answer. Nothing else is retried: a 4xx answer is
// the caller's to handle.
type Retry struct {
	// Retries is the number of extra attempts after the first; 0 means none.
	Retries int
	// Delay is the wait before the first retry; zero means [DefaultRetryDelay].
	Delay time.Duration
	// Backoff multiplies the delay after each retry; zero means [DefaultRetryBackoff].
	// It must be at least 1 so waits never shrink.
	Backoff float64
}

// The reference contract's retry defaults.
const (
	DefaultRetryDelay   = 50 * time.Millisecond
	DefaultRetryBackoff = 2.0
)

// Auth supplies bearer tokens. GetToken runs before every attempt; a "" token sends no
// Authorization header. Refresh runs at most once per call, on an HTTP 401, and the call
// is then repeated once; it must update whatever GetToken reads. It never runs on 403
// or 429, whose envelopes are decoded as usual.
type Auth struct {
	GetToken func(ctx context.Context) (string, error)
	Refresh  func(ctx context.Context) error
}

// Option configures a [Client] or a [Transport]. Options are validated: [New] reports a
// bad value as an error instead of misbehaving later.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is what options set; the client and the transport read it once.
type config struct {
	doer       Doer
	headers    http.Header
	headerFunc func(ctx context.Context) (http.Header, error)
	timeout    time.Duration
	retry      Retry
	auth       *Auth
	authFor    func(c *Client) Auth
	routes     engine.Routes
	table      map[string]engine.Route
}

func newConfig(opts []Option) (*config, error) {
	cfg := &config{retry: Retry{Delay: DefaultRetryDelay, Backoff: DefaultRetryBackoff}}
	var errs []error
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(cfg); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.auth != nil && cfg.authFor != nil {
		errs = append(errs, errors.New("clientx: WithAuth and WithClientAuth are both set; use one"))
	}
	return cfg, errors.Join(errs...)
}

// WithDoer sets the HTTP implementation (the reference contract's fetch). The default is a shared
// *http.Client whose transport keeps connections alive.
func WithDoer(d Doer) Option {
	return optionFunc(func(c *config) error {
		if d == nil {
			return errors.New("clientx: WithDoer: nil doer")
		}
		c.doer = d
		return nil
	})
}

// WithHeaders adds static headers to every request. Later calls add to earlier ones.
func WithHeaders(h http.Header) Option {
	return optionFunc(func(c *config) error {
		if c.headers == nil {
			c.headers = http.Header{}
		}
		for k, vs := range h {
			if k == "" {
				return errors.New("clientx: WithHeaders: empty header name")
			}
			for _, v := range vs {
				c.headers.Add(k, v)
			}
		}
		return nil
	})
}

// WithHeaderFunc sets a header getter called before every attempt (retries and the
// repeat after a refresh included), for values that change, such as a request id. Its
// headers replace static headers of the same name. An error from it fails the call
// with TransportError and sends nothing.
func WithHeaderFunc(f func(ctx context.Context) (http.Header, error)) Option {
	return optionFunc(func(c *config) error {
		if f == nil {
			return errors.New("clientx: WithHeaderFunc: nil function")
		}
		c.headerFunc = f
		return nil
	})
}

// WithTimeout aborts each attempt after d; the abort is a TransportError (and counts as
// a network failure for [Retry]). There is no timeout by default; the call's context
// still applies.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("clientx: WithTimeout: duration must be positive, got %v", d)
		}
		c.timeout = d
		return nil
	})
}

// WithRetry sets the retry policy; see [Retry] for its defaults.
func WithRetry(r Retry) Option {
	return optionFunc(func(c *config) error {
		if r.Retries < 0 {
			return fmt.Errorf("clientx: WithRetry: negative retries %d", r.Retries)
		}
		if r.Delay < 0 {
			return fmt.Errorf("clientx: WithRetry: negative delay %v", r.Delay)
		}
		if r.Backoff != 0 && (r.Backoff < 1 || r.Backoff != r.Backoff) {
			return fmt.Errorf("clientx: WithRetry: backoff %v must be at least 1", r.Backoff)
		}
		if r.Delay == 0 {
			r.Delay = DefaultRetryDelay
		}
		if r.Backoff == 0 {
			r.Backoff = DefaultRetryBackoff
		}
		c.retry = r
		return nil
	})
}

// WithAuth sets bearer authentication; see [Auth].
func WithAuth(a Auth) Option {
	return optionFunc(func(c *config) error {
		if a.GetToken == nil && a.Refresh == nil {
			return errors.New("clientx: WithAuth: neither GetToken nor Refresh is set")
		}
		c.auth = &a
		return nil
	})
}

// WithClientAuth sets bearer authentication built from the client under construction.
// It exists because a refresh usually calls a flow (auth.refresh) through the very
// client that needs the auth option: [New] calls build once with the finished client.
// Calls made through the client while Refresh runs never trigger another refresh.
func WithClientAuth(build func(c *Client) Auth) Option {
	return optionFunc(func(c *config) error {
		if build == nil {
			return errors.New("clientx: WithClientAuth: nil function")
		}
		c.authFor = build
		return nil
	})
}

// WithRoutes sets the runtime route map (the reference contract's $routes, as from
// [engine.App.Routes] or [engine.RoutesOf]); flows found in it are called over REST.
func WithRoutes(r engine.Routes) Option {
	return optionFunc(func(c *config) error {
		for unit, flows := range r {
			for flow, rt := range flows {
				if err := checkRoute(unit+"."+flow, rt); err != nil {
					return fmt.Errorf("clientx: WithRoutes: %w", err)
				}
			}
		}
		c.routes = r
		return nil
	})
}

// WithRouteTable sets a flat "unit.flow" → route table; its entries win over those of
// [WithRoutes].
func WithRouteTable(t map[string]engine.Route) Option {
	return optionFunc(func(c *config) error {
		for id, rt := range t {
			if err := checkRoute(id, rt); err != nil {
				return fmt.Errorf("clientx: WithRouteTable: %w", err)
			}
		}
		c.table = t
		return nil
	})
}

func checkRoute(id string, rt engine.Route) error {
	unit, flow, ok := strings.Cut(id, ".")
	if !ok || unit == "" || flow == "" || strings.Contains(flow, ".") {
		return fmt.Errorf("route key %q is not of the form unit.flow", id)
	}
	switch strings.ToUpper(rt.Method) {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return fmt.Errorf("route %s: unsupported method %q", id, rt.Method)
	}
	if !strings.HasPrefix(rt.Path, "/") {
		return fmt.Errorf("route %s: path %q must start with /", id, rt.Path)
	}
	return nil
}
