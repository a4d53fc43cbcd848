// Command client calls one flow through clientx: the smallest real client of an app,
// whose dependencies and binary size the clientsize test holds to the design's promise.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
)

type AddIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type AddOut struct {
	Sum float64 `json:"sum"`
}

var Add = engine.Define[AddIn, AddOut](engine.NewUnit("math"), "add", engine.Public())

func main() {
	c, err := clientx.New(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	res := clientx.Call(context.Background(), c, Add, AddIn{A: 1, B: 2})
	if res.Failed() {
		fmt.Fprintln(os.Stderr, res.Error.Code, res.Error.Message())
		os.Exit(1)
	}
	fmt.Println(res.Data.Sum)
}
