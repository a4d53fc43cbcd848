package engine

import "slices"

// Principal is the authenticated caller of a flow. Gates produce it from the request's
// access token; handlers read it with [Fx.Principal].
type Principal struct {
	ID       string   `json:"id"`
	Email    string   `json:"email"`
	Tenant   string   `json:"tenant"`
	Scopes   []string `json:"scopes"`
	Operator bool     `json:"operator"`
}

// HasScope reports whether the principal holds scope.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && slices.Contains(p.Scopes, scope)
}
