package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
)

// TestListenerReconnects kills the LISTEN connection's backend and checks that followers
// are still woken: once on reconnect (rows may have been missed) and by later NOTIFYs.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dsn(t)
	app := "jt_listener_" + uniquePrefix()
	prefix := uniquePrefix()
	writer := newDriver(t, openDB(t), prefix)
	// The follower is another instance on the same tables, listening on its own connection.
	follower, err := postgres.New(openDB(t), postgres.Options{TablePrefix: prefix, PollInterval: time.Hour,
		Listener: func(ctx context.Context) (*pgx.Conn, error) {
			cfg, err := pgx.ParseConfig(url)
			if err != nil {
				return nil, err
			}
			cfg.RuntimeParams["application_name"] = app
			return pgx.ConnectConfig(ctx, cfg)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follower.Close() })

	if err := writer.CreateStream(ctx, journal.Stream{ID: "s1", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	wake, cancel := follower.Subscribe("s1")
	defer cancel()
	wait := func(what string) {
		t.Helper()
		select {
		case <-wake:
		case <-time.After(20 * time.Second):
			t.Fatalf("no wake-up: %s", what)
		}
	}
	wait("listener connected")
	if _, err := writer.DB().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?`, app); err != nil {
		t.Fatal(err)
	}
	wait("listener reconnected")
	if err := writer.AppendEvents(ctx, nil, journal.Append{StreamID: "s1", Rows: []journal.EventRow{{Seq: 1, Event: json.RawMessage(`{"type":"RUN_STARTED"}`)}}}); err != nil {
		t.Fatal(err)
	}
	wait("append after reconnect")
}

// TestBatchedAppendWakesOtherInstances checks that a batched append wakes another
// instance's followers of each of its streams, whose ids may hold any character, and
// that the notifications of a batch too large for one payload are all sent.
func TestBatchedAppendWakesOtherInstances(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dsn(t)
	prefix := uniquePrefix()
	writer := newDriver(t, openDB(t), prefix)
	follower, err := postgres.New(openDB(t), postgres.Options{TablePrefix: prefix, PollInterval: time.Hour,
		Listener: func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follower.Close() })

	ids := []string{`a "quoted", \ id`, "[not json", "plain"}
	for i := range 400 { // about 12 KB of ids: more than one payload
		ids = append(ids, fmt.Sprintf("stream-with-a-longish-id-%04d", i))
	}
	batch := make([]journal.FencedAppend, len(ids))
	wakes := make([]<-chan struct{}, len(ids))
	for i, id := range ids {
		if err := writer.CreateStream(ctx, journal.Stream{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var cancel func()
		wakes[i], cancel = follower.Subscribe(id)
		defer cancel()
		batch[i] = journal.FencedAppend{Append: journal.Append{StreamID: id, Rows: []journal.EventRow{{Seq: 1, Event: json.RawMessage(`{"type":"RUN_STARTED"}`)}}}}
	}
	// A follower of a stream outside the batch must not be woken by it.
	if err := writer.CreateStream(ctx, journal.Stream{ID: "bystander", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	bystander, cancel := follower.Subscribe("bystander")
	defer cancel()
	// The listener wakes everyone once it is connected; drain that first.
	select {
	case <-wakes[0]:
	case <-time.After(20 * time.Second):
		t.Fatal("listener did not connect")
	}
	for _, w := range append(wakes[1:], bystander) {
		select {
		case <-w:
		default:
		}
	}
	for i, err := range writer.AppendBatch(ctx, batch) {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	for i, w := range wakes {
		select {
		case <-w:
		case <-time.After(20 * time.Second):
			t.Fatalf("follower of %q not woken by the batch", ids[i])
		}
	}
	// Notifications arrive in commit order: once a later append's has, the batch's all have.
	if err := writer.AppendEvents(ctx, nil, journal.Append{StreamID: "plain", Rows: []journal.EventRow{{Seq: 2, Event: json.RawMessage(`{"type":"RUN_FINISHED"}`)}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wakes[2]:
	case <-time.After(20 * time.Second):
		t.Fatal("follower of plain not woken by a later append")
	}
	select {
	case <-bystander:
		t.Fatal("a follower of a stream outside the batch was woken by it")
	default:
	}
}

// TestOwnCommitsWakeFollowersOnce checks that a write wakes this instance's followers
// once, at its commit, and not again when its notification comes back to the
// instance's own listener (a second wake sends a follower that is up to date to the
// database for nothing), while another instance's writes, and notifications in the
// format that carries no origin, still wake them.
func TestOwnCommitsWakeFollowersOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	prefix := uniquePrefix()
	local := newDriver(t, openDB(t), prefix)
	other := newDriver(t, openDB(t), prefix)
	for _, id := range []string{"s1", "s2", "marker"} {
		if err := local.CreateStream(ctx, journal.Stream{ID: id, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	var wakes atomic.Int64
	defer local.Hub().SubscribeFunc("s1", func() { wakes.Add(1) })()
	marker, cancel := local.Subscribe("marker")
	defer cancel()
	// caughtUp waits until the local listener has received everything committed before a
	// write of the other instance to the marker stream: notifications arrive in commit
	// order on the one connection.
	seq := int64(0)
	caughtUp := func() {
		t.Helper()
		for {
			select {
			case <-marker:
				continue
			default:
			}
			break
		}
		seq++
		if err := other.AppendEvents(ctx, nil, journal.Append{StreamID: "marker", Rows: []journal.EventRow{{Seq: seq, Event: json.RawMessage(`{"type":"CUSTOM"}`)}}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-marker:
		case <-time.After(20 * time.Second):
			t.Fatal("the other instance's write did not wake the local follower")
		}
	}
	// The listener wakes everyone once it connects, which may be what the first wake of
	// the marker was; the second comes through the listener, after that.
	caughtUp()
	caughtUp()
	wakes.Store(0)

	row := func(seq int64) []journal.EventRow {
		return []journal.EventRow{{Seq: seq, Event: json.RawMessage(`{"type":"CUSTOM"}`)}}
	}
	for i, err := range local.AppendBatch(ctx, []journal.FencedAppend{
		{Append: journal.Append{StreamID: "s1", Rows: row(1)}},
		{Append: journal.Append{StreamID: "s2", Rows: row(1)}},
	}) {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if err := local.AppendEvents(ctx, nil, journal.Append{StreamID: "s1", Rows: row(2)}); err != nil {
		t.Fatal(err)
	}
	caughtUp()
	if n := wakes.Load(); n != 2 {
		t.Fatalf("two local writes woke the local follower %d times, want 2", n)
	}

	if err := other.AppendEvents(ctx, nil, journal.Append{StreamID: "s1", Rows: row(3)}); err != nil {
		t.Fatal(err)
	}
	caughtUp()
	if n := wakes.Load(); n != 3 {
		t.Fatalf("the other instance's write left the local follower at %d wakes, want 3", n)
	}
	// An instance of an earlier version sends bare arrays of ids.
	if _, err := other.DB().ExecContext(ctx, `SELECT pg_notify(?, ?)`, prefix+"events_batch", `["s1"]`); err != nil {
		t.Fatal(err)
	}
	caughtUp()
	if n := wakes.Load(); n != 4 {
		t.Fatalf("a notification without an origin left the local follower at %d wakes, want 4", n)
	}
}
