package gate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

type TransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// Gates are bind options listed beside the handler, outermost first: here a rate limit
// per principal, a scope, and a typed policy on the input.
func Example() {
	sqldb, _ := sql.Open("sqlite", "file:gate-example?mode=memory&cache=shared")
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	v, _ := vault.New(vault.Chain(vault.Env("APP_"), vault.Map{"JWT_KEY": "dev only: a key of at least 32 bytes"}))
	keys, _ := gate.KeysFromVault(context.Background(), v, "JWT_KEY")
	auth, _ := gate.NewAuth(gate.AuthConfig{DB: db, Keys: keys, Hash: gate.FastHashParams})
	limiter, _ := gate.NewMemoryLimiter(gate.Limit{Events: 10, Per: time.Minute})

	bank := engine.NewUnit("bank")
	transfer := engine.Define[TransferIn, TransferIn](bank, "transfer")
	app, err := engine.New(
		auth.Option(),
		vault.With(v),
		engine.Bind(transfer, func(_ *engine.Fx, in TransferIn) (TransferIn, error) { return in, nil },
			gate.RateLimit(limiter, gate.ByPrincipal()),
			gate.Scopes("bank:transfer"),
			gate.Policy(func(fx *engine.Fx, in TransferIn) error {
				if in.Amount > 100 {
					return gate.Deny("amounts over 100 need approval")
				}
				return nil
			})),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_ = app.Start(ctx)
	defer app.Close(ctx)

	alice := &engine.Principal{ID: "alice", Tenant: "t1", Scopes: []string{"bank:transfer"}}
	bob := &engine.Principal{ID: "bob", Tenant: "t1"}
	for _, c := range []struct {
		who *engine.Principal
		in  string
	}{{alice, `{"to":"bob","amount":20}`}, {alice, `{"to":"bob","amount":500}`}, {bob, `{"to":"alice","amount":1}`}} {
		out, err := app.Invoke(ctx, "bank.transfer", c.who, json.RawMessage(c.in))
		if e := engine.AsError(err); e != nil {
			d, _ := json.Marshal(e.Data)
			fmt.Println(c.who.ID, e.Code, string(d))
			continue
		}
		fmt.Println(c.who.ID, "ok", string(out))
	}
	// Output:
	// alice ok {"to":"bob","amount":20}
	// alice Forbidden {"gate":"policy","reason":"amounts over 100 need approval"}
	// bob Forbidden {"gate":"scope","reason":"missing scope bank:transfer"}
}
