package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

// Declarations: a unit, its flows, a declared error code. They carry no handler, so a
// contract package holding them can be shared by the server and its clients.
var shop = engine.NewUnit("shop")

type PriceIn struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

type PriceOut struct {
	SKU   string `json:"sku"`
	Total int    `json:"total"`
}

type UnknownSKUData struct {
	SKU string `json:"sku"`
}

var UnknownSKU = engine.NewCode[UnknownSKUData]("UnknownSKU", http.StatusNotFound)

var Price = engine.Define[PriceIn, PriceOut](shop, "price",
	engine.GET("/shop/price/:sku"), engine.Public(), engine.Errors(UnknownSKU))

// Example shows a whole round trip: bind a handler, serve the app, call it with the
// typed client over REST, and read a declared error as a value.
func Example() {
	prices := map[string]int{"tea": 3}
	app, err := engine.New(
		engine.Bind(Price, func(fx *engine.Fx, in PriceIn) (PriceOut, error) {
			unit, ok := prices[in.SKU]
			if !ok {
				return PriceOut{}, UnknownSKU.New(UnknownSKUData{SKU: in.SKU})
			}
			return PriceOut{SKU: in.SKU, Total: unit * in.Quantity}, nil
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()

	c, _ := clientx.ForApp(app, srv.URL) // REST: GET /shop/price/tea?quantity=4
	ctx := context.Background()

	res := clientx.Call(ctx, c, Price, PriceIn{SKU: "tea", Quantity: 4})
	fmt.Println(res.Data.Total, res.Error == nil)

	res = clientx.Call(ctx, c, Price, PriceIn{SKU: "coffee", Quantity: 1})
	if data, ok := UnknownSKU.DataOf(res.Error); ok {
		fmt.Println(res.Error.Code, data.SKU, res.Status)
	}
	// Output:
	// 12 true
	// UnknownSKU coffee 404
}

// ExampleApp_Handler mounts the app under a prefix on the application's own mux.
func ExampleApp_Handler() {
	app, _ := engine.New(engine.Bind(Price, func(fx *engine.Fx, in PriceIn) (PriceOut, error) {
		return PriceOut{SKU: in.SKU, Total: in.Quantity}, nil
	}))
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", app.Handler()))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/shop/price/tea?quantity=2", nil))
	fmt.Print(rec.Body.String())
	// Output:
	// {"data":{"sku":"tea","total":2},"error":null}
}
