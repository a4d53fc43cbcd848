// Package gate guards flows: bearer-token authentication with refresh ([Auth]), required
// scopes ([Scopes]), typed policies ([Policy]) and rate limits ([RateLimit]). Each guard
// is an [engine.BindOption] — plain middleware that answers with the envelope — so a
// binding lists its gates beside its handler, outermost first:
//
//	engine.Bind(Notes.Remove, remove,
//		gate.RateLimit(limiter, gate.ByPrincipal()),
//		gate.Scopes("notes:write"),
//		gate.Policy(func(fx *engine.Fx, in RemoveIn) error { … }))
//
// Denials are the spec's gate codes: Unauthorized (401, data {}), Forbidden (403, data
// {gate, reason} with gate "scope" or "policy") and RateLimited (429, data
// {retryAfterMs} and a Retry-After header). Flows need not declare them.
//
// [Auth] adds the unit auth with these REST triggers (RPC works too):
//
//	POST /auth/sign-up/email  auth.signUpEmail  token endpoint  {email, password} → token set
//	POST /auth/sign-in/email  auth.signInEmail  token endpoint  {email, password} → token set
//	POST /auth/refresh        auth.refresh      token endpoint  {refreshToken}    → token set
//	GET  /auth/me             auth.me           auth            {}                → principal
//	POST /auth/sign-out       auth.signOut      auth            {refreshToken?}   → 204
//
// Sign-up, sign-in and refresh are token endpoints ([engine.TokenEndpoint]): they do not
// read the Authorization header, so the expired access token a client still sends does
// not refuse them. Every other flow, public ones included, and every engine.Handle route
// answer a refused token with Unauthorized and a WWW-Authenticate challenge
// ([Auth.Authenticate]).
//
// Sign-up is bound only when the app opts in ([AuthConfig.PublicSignUp]). Sign-in is
// limited per client IP and per email ([AuthConfig.AttemptsPerIP],
// [AuthConfig.FailuresPerEmail]), and password hashing runs under a bound ([HashBound])
// that answers Unavailable (503, Retry-After) beyond it.
//
// Every gate also tags the binding under "gate" (and details under "gate.<kind>") so the
// descriptor marks the flow gated even when it is public but rate limited.
package gate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/bbc28f59/engine"
)

// Gate names in Forbidden denials.
const (
	GateScope  = "scope"
	GatePolicy = "policy"
)

// tagged marks the binding as gated, records one detail of this gate under
// "gate.<kind>", and adds its middleware.
func tagged(kind string, detail any, mw engine.Middleware) engine.BindOption {
	return engine.BindOptions(engine.Tag("gate", true), engine.Tag("gate."+kind, detail), engine.Use(mw))
}

// Scopes requires the caller to hold every listed scope. A missing scope is denied with
// Forbidden {gate: "scope", reason: "missing scope <name>"}; an anonymous caller (on a
// public flow) with Unauthorized.
func Scopes(scopes ...string) engine.BindOption {
	want := append([]string(nil), scopes...)
	if len(want) == 0 {
		return engine.InvalidBindOption(errors.New("gate.Scopes: no scope given"))
	}
	for _, s := range want {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			return engine.InvalidBindOption(fmt.Errorf("gate.Scopes: bad scope %q", s))
		}
	}
	return tagged("scopes", want, func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			p := fx.Principal()
			if p == nil {
				return nil, engine.Unauthorized()
			}
			for _, s := range want {
				if !p.HasScope(s) {
					return nil, engine.Forbidden(GateScope, "missing scope "+s)
				}
			}
			return next(fx, in)
		}
	})
}

// Deny is what a [Policy] returns to refuse a call: Forbidden {gate: "policy", reason}.
// The reason is sent to the caller, so keep it free of data they may not see.
func Deny(reason string) error { return engine.Forbidden(GatePolicy, reason) }

// Policy runs fn before the handler with the decoded, validated input; a non-nil result
// refuses the call. Return [Deny] for a Forbidden denial; any other [engine.Error] (such
// as NotFound, to hide that a record exists) is answered as is, and a plain error is an
// internal error. In must be the flow's input type; a mismatch is an internal error on
// every call, logged with both types.
func Policy[In any](fn func(fx *engine.Fx, in In) error) engine.BindOption {
	if fn == nil {
		return engine.InvalidBindOption(errors.New("gate.Policy: nil policy"))
	}
	return tagged("policy", true, func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			v, ok := in.(In)
			if !ok && in != nil {
				return nil, fmt.Errorf("gate.Policy on %s: input of type %T, policy wants %v",
					fx.Flow().ID(), in, reflect.TypeFor[In]())
			}
			if err := fn(fx, v); err != nil {
				return nil, err
			}
			return next(fx, in)
		}
	})
}
