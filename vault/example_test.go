package vault_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/vault"
)

// Example gives a handler a secret: the app's vault reads a chain of sources (here a
// map; in an app vault.Env("APP_") or vault.Files(dir) first), and the secret redacts
// itself everywhere but an explicit Reveal.
func Example() {
	v, err := vault.New(vault.Chain(
		vault.Env("EXAMPLE_VAULT_"), // EXAMPLE_VAULT_PAYMENTS_KEY would win over the map
		vault.Map{"PAYMENTS_KEY": "sk-test-123"},
	))
	if err != nil {
		fmt.Println(err)
		return
	}
	type chargeIn struct {
		Amount int `json:"amount"`
	}
	type chargeOut struct {
		KeyUsed vault.Secret `json:"keyUsed"` // a reply that carries it by mistake shows [REDACTED]
		Signed  string       `json:"signed"`
	}
	charge := engine.Define[chargeIn, chargeOut](engine.NewUnit("pay"), "charge", engine.Public())

	app, err := engine.New(vault.With(v), engine.Bind(charge, func(fx *engine.Fx, in chargeIn) (chargeOut, error) {
		key, err := vault.Of(fx).Get(fx.Context(), "PAYMENTS_KEY")
		if err != nil {
			return chargeOut{}, err
		}
		fx.Logger().Debug("charging", "key", key) // logged as [REDACTED]
		signed := fmt.Sprintf("%d signed with a key of %d bytes", in.Amount, len(key.Reveal()))
		return chargeOut{KeyUsed: key, Signed: signed}, nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, httptest.NewRequest("POST", "/_engine/pay/charge", strings.NewReader(`{"amount":5}`)))
	fmt.Print(rec.Body.String())

	key, _ := v.Get(context.Background(), "PAYMENTS_KEY")
	b, _ := json.Marshal(map[string]any{"key": key})
	fmt.Println(key, string(b))
	// Output:
	// {"data":{"keyUsed":"[REDACTED]","signed":"5 signed with a key of 11 bytes"},"error":null}
	// [REDACTED] {"key":"[REDACTED]"}
}
