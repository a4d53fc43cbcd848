package main

import (
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
)

// One of each server element, each behind flows (clients only ever call flows):
// a clock that posts to the board every minute, a signal an order waits for, and a
// channel the board's messages go through.
var (
	Board = engine.NewUnit("board")
	// Post publishes to the board; Read returns its messages after a seq, with no gap.
	Post = engine.Define[string, int64](Board, "post", engine.Public())
	Read = engine.Define[int64, []durable.Msg[string]](Board, "read", engine.Public())
	// Pulse runs every minute on one instance of those sharing the journal.
	Pulse = engine.Define[durable.Tick, int64](Board, "pulse", engine.Public(), engine.Durable())

	Orders = engine.NewUnit("orders")
	// Place parks until its order is paid (202 with meta.runId; poll GET /_engine/runs/:runId).
	Place = engine.Define[string, string](Orders, "place", engine.Public(), engine.Durable())
	// Pay sends the signal paid to the run Place parked.
	Pay = engine.Define[string, bool](Orders, "pay", engine.Public())

	board = durable.NewChannel[string]("board")
	paid  = durable.NewSignal[string]("paid", durable.Once())
)

func elements() engine.Option {
	minute, _ := durable.Every(time.Minute)
	return engine.Options(
		engine.Bind(Post, func(fx *engine.Fx, text string) (int64, error) { return board.Publish(fx, "main", text) }),
		engine.Bind(Read, func(fx *engine.Fx, after int64) ([]durable.Msg[string], error) {
			return board.History(fx, "main", after, 100)
		}),
		durable.Clock(Pulse, minute, func(fx *engine.Fx, t durable.Tick) (int64, error) {
			return board.Publish(fx, "main", "tick "+t.At.Format(time.RFC3339))
		}),
		engine.Bind(Place, func(fx *engine.Fx, item string) (string, error) {
			by, err := paid.Wait(fx, durable.RunOf(fx).ID, time.Time{})
			return item + " paid by " + by, err
		}),
		engine.Bind(Pay, func(fx *engine.Fx, runID string) (bool, error) {
			return true, paid.Set(fx, runID, "the quickstart")
		}),
	)
}
