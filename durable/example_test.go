package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

type RefundIn struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

type RefundOut struct {
	Refunded int `json:"refunded"`
}

var shop = engine.NewUnit("shop")

var Refund = engine.Define[RefundIn, RefundOut](shop, "refund", engine.Public(), engine.Durable())

// paymentProvider stands for a payment API that takes an idempotency key, as most do: a
// second request under a key it has seen moves no money.
type paymentProvider struct{ done map[string]int }

func (p *paymentProvider) refund(key string, amount int) {
	if _, seen := p.done[key]; !seen {
		p.done[key] = amount
	}
}

// Example makes an external effect exactly once with the call's idempotency key
// ([engine.Fx.IdempotencyKey]). A durable handler runs again when its instance dies
// after the handler started and before its result was recorded; every execution of the
// call sees the same key, on any instance, so the provider refunds once. Inside a
// [durable.Step], engine.IdempotencyKey(ctx) is the step's own key.
func Example() {
	j, _ := journal.New(memory.New(), journal.Options{})
	provider := &paymentProvider{done: map[string]int{}}
	app, _ := engine.New(
		durable.With(j),
		engine.Bind(Refund, func(fx *engine.Fx, in RefundIn) (RefundOut, error) {
			provider.refund(fx.IdempotencyKey(), in.Amount)
			// A step runs once across executions; its key is its own.
			_, err := durable.Step(fx, "notify", func(ctx context.Context) (string, error) {
				return engine.IdempotencyKey(ctx), nil // e.g. the key of a mail to send once
			})
			return RefundOut{Refunded: in.Amount}, err
		}),
	)
	ctx := context.Background()
	out, _ := app.Invoke(ctx, Refund.ID(), nil, json.RawMessage(`{"order":"o-1","amount":30}`))
	fmt.Println(string(out), len(provider.done))
	for key := range provider.done {
		run, _ := j.GetRun(ctx, key) // a durable call's key is its run's id
		fmt.Println(run.Flow, run.Status)
	}
	// Output:
	// {"refunded":30} 1
	// shop.refund completed
}

type ShipIn struct {
	Order string `json:"order"`
}

var Ship = engine.Define[ShipIn, string](shop, "ship", engine.Public(), engine.Durable())

// ExamplePark waits for a human's decision. While it is pending, Park's error (which
// wraps engine.ErrParked) is the handler's: the run parks and the caller gets 202 with
// meta {parked, runId}. The decision resumes the run, on whichever instance claims it,
// and Park returns it there.
func ExamplePark() {
	j, _ := journal.New(memory.New(), journal.Options{})
	app, _ := engine.New(
		durable.With(j),
		engine.Bind(Ship, func(fx *engine.Fx, in ShipIn) (string, error) {
			d, err := durable.Park(fx, "confirm", time.Time{}, in)
			if err != nil {
				return "", err // parked until decided (or the journal failed)
			}
			return "shipped: " + string(d.Kind), nil
		}),
	)
	ctx := context.Background()
	_ = app.Start(ctx)
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	c, _ := clientx.New(srv.URL)
	res := clientx.Call(ctx, c, Ship, ShipIn{Order: "o-1"})
	var meta struct {
		Parked bool   `json:"parked"`
		RunID  string `json:"runId"`
	}
	_ = json.Unmarshal(res.Meta.Raw, &meta)
	fmt.Println(res.Status, meta.Parked)

	_ = j.Decide(ctx, meta.RunID, "confirm", journal.Decision{Kind: journal.DecisionApprove})
	_ = app.Close(ctx) // waits for the resumed run
	run, _ := j.GetRun(ctx, meta.RunID)
	fmt.Println(run.Status, string(run.Output))
	// Output:
	// 202 true
	// completed "shipped: approve"
}
