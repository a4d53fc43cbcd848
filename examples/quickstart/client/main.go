// Command client calls the quickstart server with the typed Go client. It imports only
// the contract package and clientx: no server code.
//
//	go run ./examples/quickstart/client -url http://127.0.0.1:8080
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/quickstart/contract"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "quickstart server")
	flag.Parse()
	ctx := context.Background()

	// REST where the contract declares a trigger, RPC elsewhere.
	c, err := clientx.New(*url, clientx.WithRoutes(contract.Greeter.Routes()), clientx.WithTimeout(5*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	hello := clientx.Call(ctx, c, contract.Hello, contract.HelloIn{Name: "gopher"})
	if hello.Failed() {
		fmt.Fprintln(os.Stderr, "hello failed:", hello.Error)
		os.Exit(1)
	}
	fmt.Println(hello.Data.Message)

	// Flow failures are values, never Go errors: the declared code carries typed data.
	div := clientx.Call(ctx, c, contract.Divide, contract.DivideIn{A: 1, B: 0})
	if data, ok := contract.DivideByZero.DataOf(div.Error); ok {
		fmt.Printf("divide failed with %s (dividend %v)\n", div.Error.Code, data.Dividend)
	}

	// By name, untyped: for scripts and tools.
	raw := c.Call(ctx, "greeter.divide", map[string]any{"a": 6, "b": 3})
	fmt.Println("by name:", string(raw.Data))
}
