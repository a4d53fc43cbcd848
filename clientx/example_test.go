package clientx_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

// A contract: declarations only, shareable by the server and its clients.
type (
	priceIn struct {
		SKU string `json:"sku"`
	}
	priceOut struct {
		Cents int `json:"cents"`
	}
	stockData struct {
		SKU string `json:"sku"`
	}
)

var (
	shop       = engine.NewUnit("shop")
	outOfStock = engine.NewCode[stockData]("OutOfStock", http.StatusConflict)
	price      = engine.Define[priceIn, priceOut](shop, "price", engine.GET("/shop/price/:sku"), engine.Public(), engine.Errors(outOfStock))
)

// Example calls a flow with the typed client, the app served in memory through
// InProcess. Over the network, drop WithDoer and pass the server's URL.
func Example() {
	app, err := engine.New(engine.Bind(price, func(_ *engine.Fx, in priceIn) (priceOut, error) {
		if in.SKU == "gone" {
			return priceOut{}, outOfStock.New(stockData(in))
		}
		return priceOut{Cents: 250}, nil
	}))
	if err != nil {
		panic(err)
	}
	c, err := clientx.ForApp(app, "http://shop.example", clientx.WithDoer(clientx.InProcess(app.Handler())))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	res := clientx.Call(ctx, c, price, priceIn{SKU: "tea"}) // GET /shop/price/tea
	fmt.Println(res.Data.Cents, res.Status)

	res = clientx.Call(ctx, c, price, priceIn{SKU: "gone"})
	if d, ok := outOfStock.DataOf(res.Error); ok {
		fmt.Println(res.Error.Code, res.Status, d.SKU)
	}

	raw := c.Call(ctx, "shop", nil) // a unit without a flow: nothing is sent
	fmt.Println(raw.Error)
	// Output:
	// 250 200
	// OutOfStock 409 gone
	// IncompletePath: Incomplete path: api.shop
}
