package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
)

// Channel is a named stream of messages of type T between flows, across instances: a
// flow publishes under a key (a room, an order), any flow reads the history after a seq,
// and a durable flow receives the next message, parked in the journal while there is
// none. Messages of one key are numbered 1, 2, 3... with no gap in commit order, on every
// instance. Declare channels once, at package level; clients never see them.
type Channel[T any] struct {
	name   string
	tenant bool
}

// ChannelOption configures a [Channel].
type ChannelOption func(*channelConfig)

type channelConfig struct{ tenant bool }

// PerTenant scopes a channel to the caller's tenant: the same key in two tenants names
// two channels.
func PerTenant() ChannelOption { return func(c *channelConfig) { c.tenant = true } }

// NewChannel declares the channel name. It panics on an empty name or one with a "/".
func NewChannel[T any](name string, opts ...ChannelOption) *Channel[T] {
	if name == "" || strings.Contains(name, "/") {
		panic(fmt.Sprintf("durable: NewChannel: bad name %q", name))
	}
	var c channelConfig
	for _, o := range opts {
		o(&c)
	}
	return &Channel[T]{name: name, tenant: c.tenant}
}

// Msg is one message of a channel.
type Msg[T any] struct {
	Seq   int64     `json:"seq"`
	Value T         `json:"value"`
	At    time.Time `json:"at"`
}

// journalName is the journal's channel of key for the call's tenant.
func (c *Channel[T]) journalName(fx *engine.Fx, key string) string {
	tenant := ""
	if c.tenant {
		tenant = fx.Tenant()
	}
	return url.PathEscape(tenant) + "/" + c.name + "/" + url.PathEscape(key)
}

func (c *Channel[T]) journal(fx *engine.Fx) (*journal.Journal, error) {
	j := JournalOf(fx.App())
	if j == nil {
		return nil, fmt.Errorf("durable: channel %s needs durable.With", c.name)
	}
	return j, nil
}

// Publish appends v under key and returns its seq; runs waiting in [Channel.Receive]
// resume. In a durable run the publish is a [Step], so a replay does not publish again.
func (c *Channel[T]) Publish(fx *engine.Fx, key string, v T) (int64, error) {
	j, err := c.journal(fx)
	if err != nil {
		return 0, err
	}
	name := c.journalName(fx, key)
	return Step(fx, "publish "+c.name, func(ctx context.Context) (int64, error) {
		raw, err := json.Marshal(v)
		if err != nil {
			return 0, fmt.Errorf("durable: channel %s: %w", c.name, err)
		}
		return j.Publish(ctx, name, raw)
	})
}

// History returns up to limit messages under key after seq after (0: from the oldest
// kept), in seq order with no gap. Retention removes the oldest messages only.
func (c *Channel[T]) History(fx *engine.Fx, key string, after int64, limit int) ([]Msg[T], error) {
	j, err := c.journal(fx)
	if err != nil {
		return nil, err
	}
	msgs, err := j.Messages(fx.Context(), c.journalName(fx, key), after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Msg[T], len(msgs))
	for i, m := range msgs {
		out[i] = Msg[T]{Seq: m.Seq, At: m.CreatedAt}
		if err := json.Unmarshal(m.Payload, &out[i].Value); err != nil {
			return nil, fmt.Errorf("durable: channel %s: decoding message %d: %w", c.name, m.Seq, err)
		}
	}
	return out, nil
}

// Receive returns the next message under key for this run: every run receives every
// message once, in seq order, from the oldest kept. With none there it returns an error
// wrapping [engine.ErrParked], which the handler returns: the run parks and runs again,
// on whichever instance claims it, once a message is published. Past deadline (zero: the
// journal's default, 24 h) it returns [ErrTimedOut]. Only durable flows receive.
func (c *Channel[T]) Receive(fx *engine.Fx, key string, deadline time.Time) (Msg[T], error) {
	var out Msg[T]
	e, ok := execKey.Call(fx)
	if !ok {
		return out, fmt.Errorf("durable: flow %s cannot receive from channel %s: it is not durable (declare it with engine.Durable())", fx.Flow().ID(), c.name)
	}
	name := c.journalName(fx, key)
	m, err := e.run.Receive(fx.Context(), name, deadline)
	e.setPending("channel "+name, err == nil && m == nil)
	if err != nil {
		return out, err
	}
	if m == nil {
		return out, fmt.Errorf("%w for channel %s under %q", engine.ErrParked, c.name, key)
	}
	out = Msg[T]{Seq: m.Seq, At: m.CreatedAt}
	if err := json.Unmarshal(m.Payload, &out.Value); err != nil {
		return out, fmt.Errorf("durable: channel %s: decoding message %d: %w", c.name, m.Seq, err)
	}
	return out, nil
}
