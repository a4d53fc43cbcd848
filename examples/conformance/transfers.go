package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/uptrace/bun"
)

// The transfers part: what tools.transfer does, made exactly once with its call's
// idempotency key, and admin.transfers, an operator's view of it. The handler may run
// more than once for one tool call (its instance dies after it started and before its
// result was recorded); every execution sees the same key, so the money moves once and
// the row counts the executions in attempts.

// transferRow is one money movement of the app table transfers.
type transferRow struct {
	bun.BaseModel `bun:"table:transfers"`

	Key       string  `bun:"call_key,pk"`
	Tenant    string  `bun:"tenant,notnull"`
	To        string  `bun:"recipient,notnull"`
	Amount    float64 `bun:"amount,notnull"`
	Attempts  int     `bun:"attempts,notnull"`
	CreatedAt int64   `bun:"created_at,notnull"` // Unix nanoseconds: insertion order
	Execution string  `bun:"execution,notnull"`  // the execution that wrote last
}

// TransferRecord is one row of admin.transfers's output.
type TransferRecord struct {
	Key      string  `json:"key"`
	Tenant   string  `json:"tenant"`
	To       string  `json:"to"`
	Amount   float64 `json:"amount"`
	Attempts int     `json:"attempts"`
}

// TransfersOut is admin.transfers's output.
type TransfersOut struct {
	Transfers []TransferRecord `json:"transfers"`
}

var Transfers = engine.Define[struct{}, TransfersOut](AdminUnit, "transfers",
	engine.Describe("Every transfer the app made, in insertion order, with how many times its handler ran (operators only)."))

func init() {
	register("transfers", func(_ context.Context, e *env) (engine.Option, error) {
		return engine.Options(
			engine.OnStart(func(ctx context.Context, _ *engine.App) error {
				_, err := e.DB.NewCreateTable().Model((*transferRow)(nil)).IfNotExists().Exec(ctx)
				return err
			}),
			engine.Bind(Transfers, func(fx *engine.Fx, _ struct{}) (TransfersOut, error) {
				var rows []transferRow
				if err := e.DB.NewSelect().Model(&rows).Order("created_at", "call_key").Scan(fx.Context()); err != nil {
					return TransfersOut{}, err
				}
				out := TransfersOut{Transfers: make([]TransferRecord, len(rows))}
				for i, r := range rows {
					out.Transfers[i] = TransferRecord{Key: r.Key, Tenant: r.Tenant, To: r.To, Amount: r.Amount, Attempts: r.Attempts}
				}
				return out, nil
			}, gate.Policy(func(fx *engine.Fx, _ struct{}) error {
				if !fx.Principal().Operator {
					return gate.Deny("admin.transfers is for operators")
				}
				return nil
			})),
		), nil
	})
}

// transfer moves the money once per call: the first execution inserts the row, a later
// one with the same key only counts itself. It then waits delay (ENGINE_TRANSFER_DELAY,
// default none) before it returns, so a fault harness can kill its instance after the
// money moved and before the result was recorded.
//
// Like any careful handler it tries its write again while the database is away (for up
// to 30 s). Each execution writes under an id of its own, so a retry that meets its own
// earlier, unacknowledged write does not count as another execution.
func transfer(db *bun.DB, delay time.Duration) func(fx *engine.Fx, in TransferIn) (TransferOut, error) {
	return func(fx *engine.Fx, in TransferIn) (TransferOut, error) {
		execution := fmt.Sprintf("%x", rand.Uint64())
		const upsert = `INSERT INTO transfers (call_key, tenant, recipient, amount, attempts, created_at, execution)
			VALUES (?, ?, ?, ?, 1, ?, ?)
			ON CONFLICT (call_key) DO UPDATE SET attempts = transfers.attempts + 1, execution = excluded.execution
			WHERE transfers.execution <> excluded.execution`
		var err error
		for wait, start := 50*time.Millisecond, time.Now(); ; wait = min(2*wait, time.Second) {
			_, err = db.ExecContext(fx.Context(), upsert, fx.IdempotencyKey(), fx.Tenant(), in.To, in.Amount, time.Now().UnixNano(), execution)
			if err == nil || fx.Context().Err() != nil || time.Since(start) > 30*time.Second {
				break
			}
			time.Sleep(wait)
		}
		if err != nil {
			return TransferOut{}, err
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-fx.Context().Done():
				return TransferOut{}, fx.Context().Err()
			}
		}
		return TransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
	}
}
