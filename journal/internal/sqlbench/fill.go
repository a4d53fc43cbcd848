package sqlbench

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bbc28f59/engine/journal/journaltest"
)

// Fill stores n runs and their parks as [journaltest.BenchmarkQueries] describes them, in
// two statements that generate the rows inside the database (generate_series on Postgres,
// a recursive CTE on SQLite), so a million runs take seconds, not a million round trips.
// runs and parks are the table names.
func Fill(ctx context.Context, db *sql.DB, runs, parks string, postgres bool, n int) error {
	pre, from := fmt.Sprintf(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < %d) `, n), `FROM g`
	if postgres {
		pre, from = ``, fmt.Sprintf(`FROM generate_series(1::bigint, %d) AS g(i)`, n)
	}
	epoch := journaltest.QueryEpoch.UnixNano()
	every := max(n/journaltest.QueryPending, 1)
	stmts := []string{
		pre + `INSERT INTO ` + runs + ` (id, flow, input, principal, tenant, status, output, error, lease_owner, lease_expires, epoch, created_at, updated_at)
		SELECT 'r' || (1000000000 + i), 'flow.' || (i % 10), '{"q":"hello"}', '{"id":"u1"}', 't' || (i % 7),
			CASE WHEN i % 20 = 0 THEN 'failed' WHEN i % 1000 = 1 THEN 'running' WHEN i % ` + fmt.Sprint(every) + ` = 0 THEN 'parked' ELSE 'completed' END,
			'{"ok":true}', '', '', 0, 1, ` + fmt.Sprint(epoch) + ` + i * 1000000, ` + fmt.Sprint(epoch) + ` + i * 1000000 ` + from,
		pre + `INSERT INTO ` + parks + ` (run_id, park_key, deadline, payload, decision_kind, decision_payload, decided_at, created_at, tenant)
		SELECT 'r' || (1000000000 + i), 'k', ` + fmt.Sprint(epoch) + ` + i * 1000000 + 3600000000000, '{"tool":"tools.transfer"}',
			CASE WHEN i % ` + fmt.Sprint(every) + ` = 0 THEN '' ELSE 'approve' END, NULL, 0, ` + fmt.Sprint(epoch) + ` + i * 1000000, 't' || (i % 7)
		` + from + ` WHERE i % 10 = 3 OR i % ` + fmt.Sprint(every) + ` = 0`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlbench: filling %d runs: %w", n, err)
		}
	}
	for _, t := range []string{runs, parks} {
		if _, err := db.ExecContext(ctx, `ANALYZE `+t); err != nil {
			return err
		}
	}
	return nil
}
