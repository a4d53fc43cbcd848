// Command bankserver serves package mcp's test bank (mcp/internal/bank) over stdin and
// stdout, and appends one line "<tool> <idempotency key>" to the file named by
// BANK_EFFECTS for every call, so a test counts effects by key across processes.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/bbc28f59/engine/mcp/internal/bank"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	var mu sync.Mutex
	s := bank.NewServer(func(tool, key string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(os.Getenv("BANK_EFFECTS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(f, "%s %s\n", tool, key)
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}, nil)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
