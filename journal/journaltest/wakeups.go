package journaltest

import (
	"testing"
	"time"
)

// woken waits for a signal on ch with a generous deadline (not a timing assertion).
func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("no wake-up after %s", what)
	}
}

func wakeupCases() []testCase {
	return []testCase{
		{"Wakeups/AppendAndFinishWakeSubscribers", wakeupsAppendAndFinishWakeSubscribers},
		{"Wakeups/CancelledSubscriptionIsQuiet", wakeupsCancelledSubscriptionIsQuiet},
		{"Wakeups/LogWriterCommitWakes", wakeupsLogWriterCommitWakes},
	}
}

// wakeupsAppendAndFinishWakeSubscribers is the case "Wakeups/AppendAndFinishWakeSubscribers": append and finish wake subscribers.
func wakeupsAppendAndFinishWakeSubscribers(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	e.stream(a, "s1", "")
	ch, cancel := b.Subscribe("s1")
	defer cancel()
	must(t, "Append", a.AppendEvents(e.ctx, "s1", nil, rows(1)...))
	woken(t, ch, "an append")
	rs, err := b.ReadEvents(e.ctx, "s1", 0, 10)
	must(t, "ReadEvents", err)
	if len(rs) != 1 {
		t.Fatalf("woken before the row was readable: %v", rs)
	}
	must(t, "Finish", a.FinishStream(e.ctx, "s1"))
	woken(t, ch, "FinishStream")
}

// wakeupsCancelledSubscriptionIsQuiet is the case "Wakeups/CancelledSubscriptionIsQuiet": cancelled subscription is quiet.
func wakeupsCancelledSubscriptionIsQuiet(t *testing.T, e *env) {
	a := e.journal("a")
	e.stream(a, "s1", "")
	ch, cancel := a.Subscribe("s1")
	cancel()
	cancel() // idempotent
	must(t, "Append", a.AppendEvents(e.ctx, "s1", nil, rows(1)...))
	select {
	case <-ch:
		t.Fatal("a cancelled subscription was woken")
	default:
	}
}

// wakeupsLogWriterCommitWakes is the case "Wakeups/LogWriterCommitWakes": log writer commit wakes.
func wakeupsLogWriterCommitWakes(t *testing.T, e *env) {
	a := e.journal("a")
	e.stream(a, "s1", "")
	ch, cancel := a.Subscribe("s1")
	defer cancel()
	w, err := a.NewLogWriter(e.ctx, "s1", nil, quiet)
	must(t, "NewLogWriter", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"RUN_FINISHED"}`)
	woken(t, ch, "a terminal event")
}
