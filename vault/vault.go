package vault

import (
	"context"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine"
)

// ErrNotFound is returned by [Vault.Get] when no source holds the name.
var ErrNotFound = errors.New("vault: secret not found")

// Vault is the app's secret store: a [Source] behind a small API that handlers and gates
// reach through [Of]. It reads through to its source on every call, so rotated files and
// variables are seen without a restart.
type Vault struct {
	src Source
}

// New returns a vault over src.
func New(src Source) (*Vault, error) {
	if src == nil {
		return nil, errors.New("vault: nil source")
	}
	return &Vault{src: src}, nil
}

// Lookup returns the named secret and whether it exists.
func (v *Vault) Lookup(ctx context.Context, name string) (Secret, bool, error) {
	return v.src.Lookup(ctx, name)
}

// Get returns the named secret, or an error wrapping [ErrNotFound] naming it.
func (v *Vault) Get(ctx context.Context, name string) (Secret, error) {
	s, ok, err := v.src.Lookup(ctx, name)
	if err != nil {
		return Secret{}, err
	}
	if !ok {
		return Secret{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return s, nil
}

var vaultKey = engine.NewKey[*Vault]("vault")

// With installs v as the app's vault; a nil vault makes [engine.New] fail.
func With(v *Vault) engine.Option {
	if v == nil {
		return engine.InvalidOption(errors.New("vault: With: nil vault"))
	}
	return vaultKey.Option(v)
}

// FromApp returns the app's vault, or nil when none was installed.
func FromApp(a *engine.App) *Vault {
	if a == nil {
		return nil
	}
	v, _ := vaultKey.App(a)
	return v
}

// Of returns the vault of the app serving the call, or nil when none was installed.
func Of(fx *engine.Fx) *Vault {
	if fx == nil {
		return nil
	}
	return FromApp(fx.App())
}
