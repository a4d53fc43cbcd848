package engine

import "fmt"

// Key is a typed slot in which an extension package keeps its own values: on the app
// ([Key.Option], [Key.App]), on a flow's binding ([Key.BindOption], [Key.Flow]) or on
// one call ([Key.Set], [Key.Call]). The root package stores them without knowing their
// types, and only code that holds the key can read or write them, so declare keys as
// unexported package-level variables:
//
//	var vaultKey = engine.NewKey[*Vault]("vault")
//
//	func With(v *Vault) engine.Option { return vaultKey.Option(v) }
//	func Of(fx *engine.Fx) *Vault     { v, _ := vaultKey.App(fx.App()); return v }
type Key[T any] struct{ name string }

// NewKey returns a new key; name appears in error messages only. Two keys are never
// the same key, whatever their names.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name: name} }

// Option stores v on the app being built. A second value under the same key makes [New]
// fail: an extension installed twice is a configuration mistake.
func (k *Key[T]) Option(v T) Option {
	return optionFunc(func(a *App) error {
		if a.values == nil {
			a.values = map[any]any{}
		}
		if _, dup := a.values[k]; dup {
			return fmt.Errorf("engine: %s is already set", k.name)
		}
		a.values[k] = v
		return nil
	})
}

// App returns the value stored on the app with [Key.Option].
func (k *Key[T]) App(a *App) (T, bool) {
	v, ok := a.values[k].(T)
	return v, ok
}

// BindOption stores v on the binding it is given to (a later value replaces an earlier
// one); the ai package marks tool flows that need approval this way.
func (k *Key[T]) BindOption(v T) BindOption {
	return func(b *binding) error {
		if b.values == nil {
			b.values = map[any]any{}
		}
		b.values[k] = v
		return nil
	}
}

// Flow returns the value stored with [Key.BindOption] on the binding of the flow id
// ("unit.flow").
func (k *Key[T]) Flow(a *App, id string) (T, bool) {
	var v T
	b, ok := a.bindings[id]
	if !ok {
		return v, false
	}
	v, ok = b.values[k].(T)
	return v, ok
}

// Set stores v for the call of fx, for whatever else runs in the call (middleware, the
// handler, [Fx.WithContext] copies of fx) to read with [Key.Call].
func (k *Key[T]) Set(fx *Fx, v T) {
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range st.vals {
		if st.vals[i].k == k {
			st.vals[i].v = v
			return
		}
	}
	st.vals = append(st.vals, keyValue{k, v})
}

// Call returns the value stored for the call of fx with [Key.Set].
func (k *Key[T]) Call(fx *Fx) (T, bool) {
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, kv := range st.vals {
		if kv.k == k {
			v, ok := kv.v.(T)
			return v, ok
		}
	}
	var zero T
	return zero, false
}
