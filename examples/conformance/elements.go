package main

import (
	"context"
	"errors"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/journal"
	"github.com/uptrace/bun"
)

// The elements part: the server elements beside flows, each behind flows of its own (a
// client never reaches a clock, a signal or a channel directly).
//
//   - clock: jobs.tick runs every ENGINE_TICK (a Go duration, default 1m) and appends
//     {tick, instance} to the app table ticks, once per tick across every instance;
//     admin.ticks lists them (operators).
//   - signal: orders.place parks until the signal "paid" arrives for its run; orders.pay
//     sends it. The caller polls GET /_engine/runs/:runId for the outcome.
//   - channel: chat.post publishes to the channel room:<room> of the caller's tenant;
//     chat.history reads it after a seq, in publish order with no gap; chat.collect is a
//     durable receiver: its run receives the room's next count messages, each once and
//     in order, parked while there are none.
func init() {
	register("elements", elementsPart)
}

// tickRow is one tick of the app table ticks: the tick's time is the key, Instance the
// instance whose execution wrote the row first and Runs how many executions of the
// tick's handler there were, so a tick run twice shows instead of hiding behind the key.
type tickRow struct {
	bun.BaseModel `bun:"table:ticks"`
	Tick          time.Time `bun:"tick,pk"`
	Instance      string    `bun:"instance,notnull"`
	Runs          int       `bun:"runs,notnull"`
}

type (
	// TickRecord is one row of admin.ticks.
	TickRecord struct {
		Tick     time.Time `json:"tick"`
		Instance string    `json:"instance"`
		Runs     int       `json:"runs"`
	}
	// TicksOut is admin.ticks's output.
	TicksOut struct {
		Ticks []TickRecord `json:"ticks"`
	}
	// PlaceIn is orders.place's input.
	PlaceIn struct {
		Item string `json:"item"`
	}
	// PlaceOut is orders.place's output once paid.
	PlaceOut struct {
		Item string `json:"item"`
		Paid bool   `json:"paid"`
		By   string `json:"by"`
	}
	// PayIn is orders.pay's input: the run orders.place parked.
	PayIn struct {
		RunID string `json:"runId"`
	}
	// PayOut is orders.pay's output.
	PayOut struct {
		OK bool `json:"ok"`
	}
	// Payment is the value of the signal paid.
	Payment struct {
		By string `json:"by"`
	}
	// PostIn is chat.post's input.
	PostIn struct {
		Room string `json:"room"`
		Text string `json:"text"`
	}
	// PostOut is chat.post's output: the message's seq in its room.
	PostOut struct {
		Seq int64 `json:"seq"`
	}
	// HistoryIn is chat.history's input: messages after seq After (0: from the oldest).
	HistoryIn struct {
		Room  string `json:"room"`
		After int64  `json:"after,omitempty"`
	}
	// ChatMessage is one message of chat.history.
	ChatMessage struct {
		Seq  int64  `json:"seq"`
		Text string `json:"text"`
		By   string `json:"by"`
	}
	// HistoryOut is chat.history's output.
	HistoryOut struct {
		Messages []ChatMessage `json:"messages"`
	}
	// CollectIn is chat.collect's input: the room and how many messages to receive.
	CollectIn struct {
		Room  string `json:"room"`
		Count int    `json:"count"`
	}
	// CollectOut is chat.collect's output: the messages its run received, in order.
	CollectOut struct {
		Messages []ChatMessage `json:"messages"`
	}
	// roomMessage is what the room channel carries.
	roomMessage struct {
		Text string `json:"text"`
		By   string `json:"by"`
	}
)

var (
	Jobs   = engine.NewUnit("jobs")
	Orders = engine.NewUnit("orders")

	TickJob = engine.Define[durable.Tick, struct{}](Jobs, "tick", engine.Durable(),
		engine.Describe("Appends {tick, instance} to the table ticks on every tick of ENGINE_TICK (runs on its schedule only)."))
	Ticks = engine.Define[struct{}, TicksOut](AdminUnit, "ticks",
		engine.Describe("Every tick jobs.tick appended, oldest first (operators only)."))
	Place = engine.Define[PlaceIn, PlaceOut](Orders, "place", engine.Durable(),
		engine.Describe("Places an order and parks until it is paid (orders.pay); poll GET /_engine/runs/:runId for the outcome."))
	Pay = engine.Define[PayIn, PayOut](Orders, "pay",
		engine.Describe("Pays the order parked as runId: NotFound for an unknown or finished run, Conflict once paid."))
	Post = engine.Define[PostIn, PostOut](Chat, "post",
		engine.Describe("Publishes text to the room of the caller's tenant."))
	History = engine.Define[HistoryIn, HistoryOut](Chat, "history",
		engine.Describe("The room's messages after a seq, in publish order with no gap."))
	Collect = engine.Define[CollectIn, CollectOut](Chat, "collect", engine.Durable(),
		engine.Describe("Receives the room's next count messages (1 to 10,000) for this run, each once and in order, parked while there are none; poll GET /_engine/runs/:runId for them."))

	paid  = durable.NewSignal[Payment]("paid", durable.Once())
	rooms = durable.NewChannel[roomMessage]("room", durable.PerTenant())
)

func elementsPart(_ context.Context, e *env) (engine.Option, error) {
	every, err := time.ParseDuration(getenv("ENGINE_TICK", "1m"))
	if err != nil {
		return nil, err
	}
	sched, err := durable.Every(every)
	if err != nil {
		return nil, err
	}
	instance := e.Instance
	operator := gate.Policy(func(fx *engine.Fx, _ struct{}) error {
		if !fx.Principal().Operator {
			return gate.Deny("admin.ticks is for operators")
		}
		return nil
	})
	return engine.Options(
		engine.OnStart(func(ctx context.Context, _ *engine.App) error {
			_, err := e.DB.NewCreateTable().Model((*tickRow)(nil)).IfNotExists().Exec(ctx)
			return err
		}),
		durable.Clock(TickJob, sched, func(fx *engine.Fx, in durable.Tick) (struct{}, error) {
			_, err := e.DB.ExecContext(fx.Context(), `INSERT INTO ticks (tick, instance, runs) VALUES (?, ?, 1)
				ON CONFLICT (tick) DO UPDATE SET runs = ticks.runs + 1`, in.At.UTC(), instance)
			return struct{}{}, err
		}),
		engine.Bind(Ticks, func(fx *engine.Fx, _ struct{}) (TicksOut, error) {
			var rows []tickRow
			if err := e.DB.NewSelect().Model(&rows).Order("tick").Scan(fx.Context()); err != nil {
				return TicksOut{}, err
			}
			out := TicksOut{Ticks: make([]TickRecord, len(rows))}
			for i, r := range rows {
				out.Ticks[i] = TickRecord{Tick: r.Tick.UTC(), Instance: r.Instance, Runs: r.Runs}
			}
			return out, nil
		}, operator),
		engine.Bind(Place, func(fx *engine.Fx, in PlaceIn) (PlaceOut, error) {
			p, err := paid.Wait(fx, durable.RunOf(fx).ID, time.Time{})
			if err != nil {
				return PlaceOut{}, err
			}
			return PlaceOut{Item: in.Item, Paid: true, By: p.By}, nil
		}),
		engine.Bind(Pay, func(fx *engine.Fx, in PayIn) (PayOut, error) {
			j := durable.JournalOf(fx.App())
			rec, err := j.GetRun(fx.Context(), in.RunID)
			notFound := engine.NotFound("no order awaiting payment under run %s", in.RunID)
			if errors.Is(err, journal.ErrNotFound) || (err == nil && (rec.Flow != Place.ID() || rec.Tenant != fx.Tenant())) {
				return PayOut{}, notFound
			}
			if err != nil {
				return PayOut{}, err
			}
			if rec.Status.Final() {
				// Paid already (and so finished) is the Conflict of a second payment.
				_, ok, err := paid.Get(fx, in.RunID)
				if err != nil {
					return PayOut{}, err
				}
				if !ok {
					return PayOut{}, notFound
				}
				return PayOut{}, engine.NewError(engine.CodeConflict, map[string]any{"message": "the order is paid already"})
			}
			if err := paid.Set(fx, in.RunID, Payment{By: fx.Principal().Email}); err != nil {
				return PayOut{}, err
			}
			return PayOut{OK: true}, nil
		}),
		engine.Bind(Post, func(fx *engine.Fx, in PostIn) (PostOut, error) {
			if in.Room == "" {
				return PostOut{}, engine.Invalid(engine.ValidationIssue{Path: "room", Message: "required"})
			}
			seq, err := rooms.Publish(fx, "room:"+in.Room, roomMessage{Text: in.Text, By: fx.Principal().Email})
			return PostOut{Seq: seq}, err
		}),
		engine.Bind(Collect, func(fx *engine.Fx, in CollectIn) (CollectOut, error) {
			if in.Room == "" {
				return CollectOut{}, engine.Invalid(engine.ValidationIssue{Path: "room", Message: "required"})
			}
			if in.Count < 1 || in.Count > 10000 {
				return CollectOut{}, engine.Invalid(engine.ValidationIssue{Path: "count", Message: "from 1 to 10000"})
			}
			out := CollectOut{Messages: make([]ChatMessage, 0, in.Count)}
			for len(out.Messages) < in.Count {
				m, err := rooms.Receive(fx, "room:"+in.Room, time.Time{})
				if err != nil {
					return CollectOut{}, err
				}
				out.Messages = append(out.Messages, ChatMessage{Seq: m.Seq, Text: m.Value.Text, By: m.Value.By})
			}
			return out, nil
		}),
		engine.Bind(History, func(fx *engine.Fx, in HistoryIn) (HistoryOut, error) {
			msgs, err := rooms.History(fx, "room:"+in.Room, in.After, 500)
			if err != nil {
				return HistoryOut{}, err
			}
			out := HistoryOut{Messages: make([]ChatMessage, len(msgs))}
			for i, m := range msgs {
				out.Messages[i] = ChatMessage{Seq: m.Seq, Text: m.Value.Text, By: m.Value.By}
			}
			return out, nil
		}),
	), nil
}
