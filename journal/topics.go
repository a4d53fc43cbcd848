package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Signals and channels are topics: a signal is a named value set under a key, a channel
// an ordered list of messages. A run waits for either with a park on its topic, which
// the driver decides in the same write that sets the value or publishes the message, so
// a wait resumes on whichever instance claims the run, and times out as any park does.

// ErrTimedOut is returned by [Run.WaitSignal] and [Run.Receive] when the wait's
// deadline passed before a value or a message arrived.
var ErrTimedOut = errors.New("journal: wait timed out")

// SignalTopic is the topic of signal name under key.
func SignalTopic(name, key string) string {
	return "signal/" + url.PathEscape(name) + "/" + url.PathEscape(key)
}

// ChannelTopic is the topic of channel name.
func ChannelTopic(name string) string { return "channel/" + url.PathEscape(name) }

// SetSignal stores value as the latest value of signal name under key (stored even when
// no run waits: a later wait sees it) and resumes the runs it was the last wait of (past
// the first 32, through the recovery loop). With once, a second value is [ErrConflict].
func (j *Journal) SetSignal(ctx context.Context, name, key string, value json.RawMessage, once bool) (TopicValue, error) {
	if name == "" {
		return TopicValue{}, errors.New("journal: SetSignal needs a name")
	}
	if err := j.checkOpen(); err != nil {
		return TopicValue{}, err
	}
	if value == nil {
		value = json.RawMessage("null")
	}
	v, runnable, err := j.d.SetSignal(ctx, SignalTopic(name, key), value, once, j.now())
	if err != nil {
		return TopicValue{}, err
	}
	j.resumeWoken(ctx, runnable)
	return v, nil
}

// Signal loads the latest value of signal name under key; [ErrNotFound] when none was set.
func (j *Journal) Signal(ctx context.Context, name, key string) (TopicValue, error) {
	return j.d.GetSignal(ctx, SignalTopic(name, key))
}

// Publish appends payload to channel name and returns its seq; runs waiting in
// [Run.Receive] on the channel resume.
func (j *Journal) Publish(ctx context.Context, channel string, payload json.RawMessage) (int64, error) {
	if channel == "" {
		return 0, errors.New("journal: Publish needs a channel")
	}
	if err := j.checkOpen(); err != nil {
		return 0, err
	}
	if payload == nil {
		payload = json.RawMessage("null")
	}
	seq, runnable, err := j.d.Publish(ctx, ChannelTopic(channel), payload, j.now())
	if err != nil {
		return 0, err
	}
	j.resumeWoken(ctx, runnable)
	return seq, nil
}

// maxInlineResumes bounds the runs a set or a publish claims itself, in its caller's
// time: past it, the runs it woke are left to the recovery loop (within
// [Options.PollInterval], on whichever instance gets there first), so a signal thousands
// of runs wait for costs its setter a bounded number of writes.
const maxInlineResumes = 32

// resumeWoken claims and resumes the first [maxInlineResumes] runs a set or a publish
// made runnable.
func (j *Journal) resumeWoken(ctx context.Context, runnable []string) {
	for _, id := range runnable[:min(len(runnable), maxInlineResumes)] {
		j.tryResume(ctx, id)
	}
}

// Messages returns up to limit messages of channel name after seq after, in seq order
// with no gap (retention removes only the oldest).
func (j *Journal) Messages(ctx context.Context, channel string, after int64, limit int) ([]Message, error) {
	if limit <= 0 {
		limit = 100
	}
	return j.d.ReadMessages(ctx, ChannelTopic(channel), after, limit)
}

// SubscribeChannel returns a channel woken (coalesced) after messages of channel name are
// committed, on this instance, or on any with [CapCrossProcessWakeups], and a function
// that ends the subscription. A reader that polls the history subscribes, reads, and
// reads again on each wake-up.
func (j *Journal) SubscribeChannel(channel string) (<-chan struct{}, func()) {
	return j.d.Subscribe(ChannelTopic(channel))
}

// WaitSignal waits for signal name under key: it returns the decision of its park, an
// approve whose payload is the signal's value, as soon as the signal has one (at once
// when it was set before), or nil while the run must suspend ([Run.Suspend]) until it is
// set; the journal then resumes the run, on whichever instance claims it. A wait whose
// deadline passed first returns [ErrTimedOut]. A zero deadline is
// [Options.ApprovalDeadline] from now. Each wait of an execution is a park of its own, so
// a wait after one that timed out waits again, with its own deadline, and a wait after
// the signal has a value returns its latest value at once.
func (r *Run) WaitSignal(ctx context.Context, name, key string, deadline time.Time) (*Decision, error) {
	topic := SignalTopic(name, key)
	parkKey := topic
	if n := r.nextWait(topic); n > 0 {
		parkKey += "#" + strconv.Itoa(n)
	}
	d, err := r.parkOn(ctx, ParkRecord{Key: parkKey, Deadline: deadline, Topic: topic})
	if err != nil || d == nil {
		return nil, err
	}
	switch d.Kind {
	case DecisionTimeout:
		return nil, fmt.Errorf("%w: signal %s under %q", ErrTimedOut, name, key)
	case DecisionDeny:
		return nil, fmt.Errorf("journal: the wait for signal %s under %q was denied, not set", name, key)
	case DecisionCancel:
		return nil, ErrStopped
	}
	return d, nil
}

// Receive returns the next message of channel name for this run: the first after the
// last one the run received (after seq 0 for its first receive), so each run gets every
// message once, in order. It is recorded as a step, so a replay receives the same
// messages. When none is there it parks on the channel and returns nil: the run must
// suspend ([Run.Suspend]) and resumes once a message is published. A wait whose deadline
// passed first returns [ErrTimedOut]; a zero deadline is [Options.ApprovalDeadline] from
// now. Messages retention removed before the run read them are not waited for: the park
// waits for one published after the channel's latest.
func (r *Run) Receive(ctx context.Context, channel string, deadline time.Time) (*Message, error) {
	topic := ChannelTopic(channel)
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		after := r.cursor(topic)
		out, err := r.Step(ctx, "receive "+channel, func(ctx context.Context) (json.RawMessage, error) {
			return r.receiveOnce(ctx, topic, after)
		})
		if err != nil {
			return nil, err
		}
		var got *receiveStep
		if err := json.Unmarshal(out, &got); err != nil {
			return nil, fmt.Errorf("journal: run %s recorded %s for a receive, not a message", r.ID, out)
		}
		if got != nil && got.Seq > 0 {
			r.setCursor(topic, got.Seq)
			return &got.Message, nil
		}
		waitAfter := after
		if got != nil {
			waitAfter = max(after, got.Latest)
		}
		// The attempt keeps parks apart when a message seen by a park is gone by the read
		// (retention): the next park waits for the one after.
		key := topic + "@" + strconv.FormatInt(waitAfter, 10) + "#" + strconv.Itoa(attempt)
		d, err := r.parkOn(ctx, ParkRecord{Key: key, Deadline: deadline, Topic: topic, After: waitAfter})
		if err != nil || d == nil {
			return nil, err
		}
		switch d.Kind {
		case DecisionTimeout:
			return nil, fmt.Errorf("%w: channel %s", ErrTimedOut, channel)
		case DecisionDeny:
			return nil, fmt.Errorf("journal: the receive on channel %s was denied", channel)
		case DecisionCancel:
			return nil, ErrStopped
		}
	}
}

// receiveOnce reads the first message of topic after seq after, or, when there is none,
// the channel's latest seq (above after when retention removed the messages after it).
// The latest seq is read before a second look for a message: with none after after even
// then, every message up to it is gone and one published since has a seq above it, so a
// park that waits after it misses nothing.
func (r *Run) receiveOnce(ctx context.Context, topic string, after int64) (json.RawMessage, error) {
	first := func() (json.RawMessage, error) {
		msgs, err := r.j.d.ReadMessages(ctx, topic, after, 1)
		if err != nil || len(msgs) == 0 {
			return nil, err
		}
		return json.Marshal(msgs[0])
	}
	if m, err := first(); m != nil || err != nil {
		return m, err
	}
	latest := int64(0)
	if v, err := r.j.d.GetSignal(ctx, topic); err == nil {
		latest = v.Version
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if m, err := first(); m != nil || err != nil {
		return m, err
	}
	return json.Marshal(receiveStep{Latest: latest})
}

// receiveStep is what a receive records: the message, or (Seq 0) none with the
// channel's latest seq at the read.
type receiveStep struct {
	Message
	Latest int64 `json:"latest,omitempty"`
}

// nextWait counts this execution's waits for topic: 0 for the first.
func (r *Run) nextWait(topic string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits == nil {
		r.waits = map[string]int{}
	}
	n := r.waits[topic]
	r.waits[topic] = n + 1
	return n
}

// cursor returns the seq of the last message this run received on topic.
func (r *Run) cursor(topic string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursors[topic]
}

func (r *Run) setCursor(topic string, seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cursors == nil {
		r.cursors = map[string]int64{}
	}
	r.cursors[topic] = seq
}
