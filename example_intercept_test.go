package engine_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

// ExampleIntercept writes an audit log of every call with its outcome: the flow, the
// caller, the input and the envelope's error code. The interceptor wraps the whole call,
// so it sees calls that a gate refused as well as those that ran.
func ExampleIntercept() {
	audit := func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			out, err := next(fx, in)
			outcome := "ok"
			if e := engine.AsError(err); e != nil {
				outcome = e.Code
			}
			fmt.Printf("audit: %s %+v → %s\n", def.ID(), in, outcome)
			return out, err
		}
	}
	app, _ := engine.New(
		engine.Intercept(audit),
		engine.Bind(Price, func(fx *engine.Fx, in PriceIn) (PriceOut, error) {
			if in.SKU != "tea" {
				return PriceOut{}, UnknownSKU.New(UnknownSKUData{SKU: in.SKU})
			}
			return PriceOut{SKU: in.SKU, Total: 3 * in.Quantity}, nil
		}),
	)
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	c, _ := clientx.ForApp(app, srv.URL)
	ctx := context.Background()
	clientx.Call(ctx, c, Price, PriceIn{SKU: "tea", Quantity: 2})
	clientx.Call(ctx, c, Price, PriceIn{SKU: "mate", Quantity: 1})
	// Output:
	// audit: shop.price {SKU:tea Quantity:2} → ok
	// audit: shop.price {SKU:mate Quantity:1} → UnknownSKU
}
