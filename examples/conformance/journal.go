package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
	"github.com/bbc28f59/engine/journal/drivers/sqlite"
)

// The journal part: the durable-execution journal on the app database (memory, SQLite or
// Postgres, as ENGINE_JOURNAL says) and the built-in agent routes: approve, deny, follow.
// ENGINE_LEASE_TTL (a Go duration, default 15s) sets how soon another instance takes over
// the runs of one that died; ENGINE_APPROVAL_WAIT (a Go duration, default 24h) how long an
// approval waits before it is denied with reason timeout.
func init() {
	register("journal", journalPart)
}

func journalPart(ctx context.Context, e *env) (engine.Option, error) {
	var d journal.Driver
	switch {
	case e.Journal == "memory":
		d = memory.New()
	case e.Postgres:
		pd, err := postgres.New(e.DB, postgres.Options{ListenDSN: e.DSN})
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func(context.Context) error { return pd.Close() })
		d = pd
	default:
		sd, err := sqlite.New(e.DB, sqlite.Options{})
		if err != nil {
			return nil, err
		}
		d = sd
	}
	ttl := 15 * time.Second
	if v := os.Getenv("ENGINE_LEASE_TTL"); v != "" {
		var err error
		if ttl, err = time.ParseDuration(v); err != nil {
			return nil, err
		}
	}
	j, err := journal.New(d, journal.Options{Owner: e.Instance, LeaseTTL: ttl, PollInterval: min(time.Second, ttl/5), Logger: e.Logger})
	if err != nil {
		return nil, err
	}
	var wait time.Duration
	if v := os.Getenv("ENGINE_APPROVAL_WAIT"); v != "" {
		if wait, err = time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("ENGINE_APPROVAL_WAIT: %w", err)
		}
	}
	return engine.Options(durable.With(j), ai.Install(ai.Options{ApprovalWait: wait})), nil
}
