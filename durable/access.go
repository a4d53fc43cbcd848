package durable

import (
	"context"
	"encoding/json"

	"github.com/bbc28f59/engine"
)

// Owner is whom a durable run, or an event log of one, belongs to: what the rules of
// reading it ([MayRead]) look at.
type Owner struct {
	Flow        string // the flow that started it
	Tenant      string // its starter's tenant
	PrincipalID string // its starter; "" when it was started anonymously
}

// MayRead applies the rules of reading a run — its state at [RunPath], its events on
// the follow route of package ai — to principal p: p must be in the run's tenant, be its
// starter or an operator, and pass the gates of the flow that started it, checked as a
// read ([engine.ForRead]: a rate limit of the flow draws nothing from a poll). A run
// started anonymously with no tenant is public. owner is nil when there is no such run;
// input returns the run's input for the gates (called only when the flow has gates).
//
// A caller without credentials is asked to sign in (Unauthorized) unless the run is
// public or the app authenticates nobody; every other refusal is NotFound, the answer for
// a run that does not exist, so run ids of other tenants reveal nothing.
func MayRead(ctx context.Context, app *engine.App, p *engine.Principal, id string, owner *Owner, input func() json.RawMessage) error {
	notFound := engine.NotFound("no run %s", id)
	public := owner != nil && owner.PrincipalID == "" && owner.Tenant == ""
	if p == nil && !public {
		if !app.HasAuthenticator() {
			return notFound
		}
		return engine.Unauthorized()
	}
	if owner == nil {
		return notFound
	}
	if !public && (owner.Tenant != p.Tenant || (owner.PrincipalID != p.ID && !p.Operator)) {
		return notFound
	}
	if !app.HasGates(owner.Flow) {
		return nil
	}
	var in json.RawMessage
	if input != nil {
		in = input()
	}
	err := app.CheckGates(engine.ForRead(ctx), owner.Flow, p, in)
	if err == nil {
		return nil
	}
	if e := engine.AsError(err); e != nil && e.Code != engine.CodeUnauthorized && e.HTTPStatus() < 500 {
		return notFound
	}
	return err
}
