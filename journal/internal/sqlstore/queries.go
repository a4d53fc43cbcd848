package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// The operator queries. Each page is one keyset read: the filter's equality columns lead
// an index that goes on with (created_at, id), so the database walks that index backwards
// from the cursor and stops after the page, whatever the size of the table. Their
// indexes are created by Migrate (migrateQueries).

// migrateQueries creates the indexes of the operator queries. Idempotent.
func (s *Store) migrateQueries(ctx context.Context) error {
	// A park carries its run's tenant, so a tenant's pending parks are one index range
	// with no join: parks written before the column existed get it here (the pending
	// ones; decided parks are never listed).
	if err := s.addColumn(ctx, s.parks, "tenant", "TEXT NOT NULL DEFAULT ''"); err != nil {
		return err
	}
	for _, q := range []string{
		`UPDATE ` + s.parks + ` SET tenant = (SELECT r.tenant FROM ` + s.runs + ` r WHERE r.id = ` + s.parks + `.run_id)
			WHERE decision_kind = '' AND tenant = ''`,
		`CREATE INDEX IF NOT EXISTS ` + s.runs + `_created_idx ON ` + s.runs + ` (created_at, id)`,
		`CREATE INDEX IF NOT EXISTS ` + s.runs + `_status_created_idx ON ` + s.runs + ` (status, created_at, id)`,
		`CREATE INDEX IF NOT EXISTS ` + s.runs + `_flow_created_idx ON ` + s.runs + ` (flow, created_at, id)`,
		`CREATE INDEX IF NOT EXISTS ` + s.runs + `_tenant_created_idx ON ` + s.runs + ` (tenant, created_at, id)`,
		`CREATE INDEX IF NOT EXISTS ` + s.parks + `_waiting_idx ON ` + s.parks + ` (decision_kind, topic, created_at, run_id, park_key)`,
		`CREATE INDEX IF NOT EXISTS ` + s.parks + `_waiting_tenant_idx ON ` + s.parks + ` (decision_kind, topic, tenant, created_at, run_id, park_key)`,
		`CREATE INDEX IF NOT EXISTS ` + s.streams + `_run_idx ON ` + s.streams + ` (run_id, created_at)`,
	} {
		if _, err := s.db.DB.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// ListRuns implements journal.Driver. The statement text depends on which filters are
// set (eight shapes at most), so each shape keeps its own plan.
func (s *Store) ListRuns(ctx context.Context, q journal.RunQuery) ([]journal.RunRecord, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	stmt, args := s.runsQuery(q)
	rows, err := s.query(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.RunRecord
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// runsQuery is the statement of ListRuns and its arguments.
func (s *Store) runsQuery(q journal.RunQuery) (string, []any) {
	var where []string
	var args []any
	for _, f := range []struct{ col, val string }{{"status", string(q.Status)}, {"flow", q.Flow}, {"tenant", q.Tenant}} {
		if f.val != "" {
			where = append(where, f.col+` = ?`)
			args = append(args, f.val)
		}
	}
	if !q.After.IsZero() {
		where = append(where, `(created_at, id) < (?, ?)`)
		args = append(args, ns(q.After.CreatedAt), q.After.ID)
	}
	stmt := `SELECT ` + runCols + ` FROM ` + s.runs
	if len(where) > 0 {
		stmt += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return stmt + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, q.Limit)
}

// parkColsP is parkCols qualified by the alias p.
var parkColsP = "p." + strings.ReplaceAll(parkCols, ", ", ", p.")

// PendingParks implements journal.Driver: a walk of the waiting index (undecided parks
// without a topic), or of the tenant's range of it.
func (s *Store) PendingParks(ctx context.Context, q journal.ParkQuery) ([]journal.ParkRecord, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	stmt, args := s.parksQuery(q)
	return s.queryParks(ctx, s.query, stmt, args...)
}

// parksQuery is the statement of PendingParks and its arguments.
func (s *Store) parksQuery(q journal.ParkQuery) (string, []any) {
	stmt := `SELECT ` + parkColsP + ` FROM ` + s.parks + ` p WHERE p.decision_kind = '' AND p.topic = ''`
	var args []any
	if q.Tenant != "" {
		stmt += ` AND p.tenant = ?`
		args = append(args, q.Tenant)
	}
	if !q.After.IsZero() {
		stmt += ` AND (p.created_at, p.run_id, p.park_key) < (?, ?, ?)`
		args = append(args, ns(q.After.CreatedAt), q.After.ID, q.After.Key)
	}
	stmt += ` ORDER BY p.created_at DESC, p.run_id DESC, p.park_key DESC LIMIT ?`
	return stmt, append(args, q.Limit)
}

// Explain returns the database's plan of the statement ListRuns (when rq is set) or
// PendingParks (otherwise) runs, one line per plan node: EXPLAIN on Postgres, EXPLAIN
// QUERY PLAN on SQLite. For benchmarks that name the plans they measure.
func (s *Store) Explain(ctx context.Context, rq *journal.RunQuery, pq journal.ParkQuery) ([]string, error) {
	stmt, args := s.parksQuery(pq)
	if rq != nil {
		stmt, args = s.runsQuery(*rq)
	}
	prefix := `EXPLAIN QUERY PLAN `
	if s.dia.Dollar {
		prefix = `EXPLAIN `
	}
	rows, err := s.db.DB.QueryContext(ctx, s.rebind(prefix+stmt), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprint(vals[len(vals)-1])) // the detail column
	}
	return out, rows.Err()
}

// RunStreams implements journal.Driver.
func (s *Store) RunStreams(ctx context.Context, runID string) ([]journal.Stream, error) {
	if runID == "" {
		return nil, nil // streams of no durable run are not a run's
	}
	return s.queryStreams(ctx, `SELECT `+streamCols+` FROM `+s.streams+` WHERE run_id = ? ORDER BY created_at, id`, runID)
}

// HeldLeases implements journal.Driver. A held run lease is a running run's (a claim
// sets running; parking and ending release), so the status index finds them.
func (s *Store) HeldLeases(ctx context.Context, now time.Time) ([]journal.LeaseRecord, []journal.OwnerRecord, error) {
	rows, err := s.query(ctx, `SELECT name, owner, expires FROM `+s.leases+` WHERE owner <> '' AND expires > ? ORDER BY name`, ns(now))
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var leases []journal.LeaseRecord
	for rows.Next() {
		var l journal.LeaseRecord
		var exp int64
		if err := rows.Scan(&l.Name, &l.Owner, &exp); err != nil {
			return nil, nil, err
		}
		l.Expires = tm(exp)
		leases = append(leases, l)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	orows, err := s.query(ctx, `SELECT lease_owner, COUNT(*), MAX(lease_expires) FROM `+s.runs+`
		WHERE status = 'running' AND lease_expires > ? AND lease_owner <> '' GROUP BY lease_owner ORDER BY lease_owner`, ns(now))
	if err != nil {
		return nil, nil, err
	}
	defer orows.Close()
	var owners []journal.OwnerRecord
	for orows.Next() {
		var o journal.OwnerRecord
		var exp int64
		if err := orows.Scan(&o.Owner, &o.Runs, &exp); err != nil {
			return nil, nil, err
		}
		o.Expires = tm(exp)
		owners = append(owners, o)
	}
	return leases, owners, orows.Err()
}
