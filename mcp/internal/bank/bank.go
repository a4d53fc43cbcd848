// Package bank is a small MCP server for package mcp's tests: tools balance, transfer
// and crash (which ends the process mid-call, as a server that dies does). Each call
// reports its tool and the idempotency key of its _meta, so a test counts effects by key.
package bank

import (
	"context"
	"errors"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TransferIn is the input of transfer.
type TransferIn struct {
	To     string  `json:"to" jsonschema:"who receives the money"`
	Amount float64 `json:"amount" jsonschema:"how much"`
}

// TransferOut is the output of transfer.
type TransferOut struct {
	OK     bool    `json:"ok"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// BalanceOut is the output of balance.
type BalanceOut struct {
	Balance float64 `json:"balance"`
}

// NewServer returns the bank; effect is told of every call of balance and transfer, and
// crash is how a call of crash ends the server (nil: the process exits).
func NewServer(effect func(tool, key string), crash func()) *mcp.Server {
	if crash == nil {
		crash = func() { os.Exit(3) }
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "v1"}, nil)
	key := func(req *mcp.CallToolRequest) string {
		k, _ := req.Params.Meta["engine/idempotencyKey"].(string)
		return k
	}
	mcp.AddTool(s, &mcp.Tool{Name: "balance", Description: "The account's balance."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, BalanceOut, error) {
			effect("balance", key(req))
			return nil, BalanceOut{Balance: 1000}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "transfer", Description: "Transfer an amount to someone."},
		func(_ context.Context, req *mcp.CallToolRequest, in TransferIn) (*mcp.CallToolResult, TransferOut, error) {
			effect("transfer", key(req))
			return nil, TransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Ends the server mid-call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			crash()
			return nil, struct{}{}, errors.New("bank: crashed")
		})
	return s
}
