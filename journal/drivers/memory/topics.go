package memory

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// topicEntry is a signal's latest value or a channel's messages, with its version.
type topicEntry struct {
	journal.TopicValue
	msgs []journal.Message // ordered by seq; retention removes a prefix
}

// topic returns the entry of name, created empty. Caller holds d.mu.
func (d *Driver) topic(name string) *topicEntry {
	t := d.topics[name]
	if t == nil {
		t = &topicEntry{TopicValue: journal.TopicValue{Topic: name}}
		d.topics[name] = t
	}
	return t
}

// approveWaiters stores the approve decision of every pending park on topic whose After
// is below version, and returns the runs that became runnable. Caller holds d.mu.
func (d *Driver) approveWaiters(topic string, version int64, payload json.RawMessage, now time.Time, trace string) []string {
	var runnable []string
	w := d.waiting[topic]
	for id := range w {
		e := d.runs[id]
		decided, pending := false, false
		for _, p := range e.parks {
			if p.Decision != nil || p.Topic != topic {
				continue
			}
			if p.After < version {
				p.Decision = &journal.Decision{Kind: journal.DecisionApprove, Payload: clone(payload), DecidedAt: now, Trace: trace}
				decided = true
			} else {
				pending = true
			}
		}
		if !pending {
			delete(w, id)
		}
		if decided && e.runnable() {
			runnable = append(runnable, id)
		}
	}
	if len(w) == 0 {
		delete(d.waiting, topic)
	}
	slices.Sort(runnable)
	return runnable
}

// SetSignal implements journal.Driver.
func (d *Driver) SetSignal(ctx context.Context, topic string, value json.RawMessage, once bool, now time.Time) (journal.TopicValue, []string, error) {
	d.mu.Lock()
	t := d.topic(topic)
	if once && t.Version > 0 {
		d.mu.Unlock()
		return journal.TopicValue{}, nil, journal.ErrConflict
	}
	t.Version++
	t.Value, t.UpdatedAt = clone(value), now
	out := t.TopicValue
	out.Value = clone(value)
	runnable := d.approveWaiters(topic, t.Version, value, now, journal.TraceContextOf(ctx))
	d.mu.Unlock()
	d.hub.Notify(topic)
	return out, runnable, nil
}

// GetSignal implements journal.Driver.
func (d *Driver) GetSignal(_ context.Context, topic string) (journal.TopicValue, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.topics[topic]
	if t == nil || t.Version == 0 {
		return journal.TopicValue{}, journal.ErrNotFound
	}
	out := t.TopicValue
	out.Value = clone(t.Value)
	return out, nil
}

// Publish implements journal.Driver.
func (d *Driver) Publish(ctx context.Context, topic string, payload json.RawMessage, now time.Time) (int64, []string, error) {
	d.mu.Lock()
	t := d.topic(topic)
	t.Version++
	t.UpdatedAt = now
	t.msgs = append(t.msgs, journal.Message{Seq: t.Version, Payload: clone(payload), CreatedAt: now})
	seq := t.Version
	runnable := d.approveWaiters(topic, seq, nil, now, journal.TraceContextOf(ctx))
	d.mu.Unlock()
	d.hub.Notify(topic)
	return seq, runnable, nil
}

// ReadMessages implements journal.Driver.
func (d *Driver) ReadMessages(_ context.Context, topic string, after int64, limit int) ([]journal.Message, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.topics[topic]
	if t == nil {
		return nil, nil
	}
	i, _ := slices.BinarySearchFunc(t.msgs, after+1, func(m journal.Message, seq int64) int { return int(m.Seq - seq) })
	var out []journal.Message
	for ; i < len(t.msgs) && len(out) < limit; i++ {
		m := t.msgs[i]
		m.Payload = clone(m.Payload)
		out = append(out, m)
	}
	return out, nil
}

// DeleteMessages implements journal.Driver.
func (d *Driver) DeleteMessages(_ context.Context, before time.Time, limit int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, t := range d.topics {
		k := 0
		for k < len(t.msgs) && n < limit && t.msgs[k].CreatedAt.Before(before) {
			k++
			n++
		}
		t.msgs = slices.Delete(t.msgs, 0, k)
	}
	return n, nil
}
