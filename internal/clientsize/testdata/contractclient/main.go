// Command contractclient is a client of a contract that declares an agent flow and a store
// resource: it creates a note and streams the agent's run.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/internal/clientsize/testdata/contract"
	"github.com/bbc28f59/engine/store/resource"
)

func main() {
	c, err := clientx.New(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	n := clientx.Call(ctx, c, contract.Notes.Create, resource.Fields{"title": "groceries"})
	if n.Failed() {
		fmt.Fprintln(os.Stderr, n.Error.Code, n.Error.Message())
		os.Exit(1)
	}
	fmt.Println(n.Data.ID)
	for ev, err := range clientx.Stream(ctx, c, contract.Ask, agui.Input{}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(ev.Type)
	}
}
