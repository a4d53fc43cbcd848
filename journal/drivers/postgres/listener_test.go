package postgres_test

import (
	"context"
	"encoding/json"
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
