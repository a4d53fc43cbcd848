// Package sqlbench holds the hand-written SQL baseline the sqlite and postgres benchmarks
// compare the journal against: the same statements and transactions a park → claim →
// complete cycle issues, written directly against database/sql with native placeholders.
package sqlbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bbc28f59/engine/internal/rebind"
)

// Baseline returns the hand-written cycle on db. runs and parks are the table names;
// dollar selects $n placeholders (Postgres) instead of ?; lock is the row-lock suffix.
func Baseline(db *sql.DB, runs, parks string, dollar bool, lockShare, lockUpdate string) func(ctx context.Context, i int) error {
	q := func(s string) string {
		if dollar {
			return rebind.Dollar(s)
		}
		return s
	}
	insertRun := q(`INSERT INTO ` + runs + ` (id, flow, input, principal, tenant, status, output, error, lease_owner, lease_expires, epoch, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING`)
	fence := q(`SELECT 1 FROM ` + runs + ` WHERE id = ? AND lease_owner = ? AND epoch = ? AND lease_owner <> ''` + lockShare)
	insertPark := q(`INSERT INTO ` + parks + ` (run_id, park_key, deadline, payload, created_at) VALUES (?,?,?,?,?) ON CONFLICT (run_id, park_key) DO NOTHING`)
	selectPark := q(`SELECT run_id, park_key, deadline, payload, decision_kind, decision_payload, decided_at, created_at FROM ` + parks + ` WHERE run_id = ? AND park_key = ?`)
	update := q(`UPDATE ` + runs + ` SET status = ?, output = ?, error = ?, lease_owner = '', updated_at = ? WHERE id = ? AND lease_owner = ? AND epoch = ? AND lease_owner <> ''`)
	listParks := q(`SELECT run_id, park_key, deadline, payload, decision_kind, decision_payload, decided_at, created_at FROM ` + parks + ` WHERE run_id = ? ORDER BY park_key`)
	lockRun := q(`SELECT status, lease_owner, lease_expires FROM ` + runs + ` WHERE id = ?` + lockUpdate)
	parkKind := q(`SELECT decision_kind FROM ` + parks + ` WHERE run_id = ? AND park_key = ?`)
	decide := q(`UPDATE ` + parks + ` SET decision_kind = ?, decision_payload = ?, decided_at = ? WHERE run_id = ? AND park_key = ? AND decision_kind = ''`)
	pending := q(`SELECT COUNT(*) FROM ` + parks + ` WHERE run_id = ? AND decision_kind = ''`)
	claim := q(`UPDATE ` + runs + ` SET lease_owner = ?, lease_expires = ?, epoch = epoch + 1, status = 'running', updated_at = ?
		WHERE id = ? AND status IN ('running', 'parked') AND (lease_owner = '' OR lease_owner = ? OR lease_expires <= ?)
		RETURNING id, flow, input, principal, tenant, status, output, error, lease_owner, lease_expires, epoch, created_at, updated_at`)
	steps := q(`SELECT position, name, result, error, created_at FROM ` + strings.TrimSuffix(runs, "runs") + `steps WHERE run_id = ? ORDER BY position`)

	scanParks := func(ctx context.Context, id string) error {
		rows, err := db.QueryContext(ctx, listParks, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var rid, key, kind string
			var pl, dp sql.NullString
			var dl, da, ca int64
			if err := rows.Scan(&rid, &key, &dl, &pl, &kind, &dp, &da, &ca); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	return func(ctx context.Context, i int) error {
		id := fmt.Sprintf("raw-%d-%d", time.Now().UnixNano(), i)
		in := `{"q":"hello"}`
		now := time.Now().UnixNano()
		exp := now + int64(15*time.Second)
		if _, err := db.ExecContext(ctx, insertRun, id, "bench", in, nil, "", "running", nil, "", "bench", exp, 1, now, now); err != nil {
			return err
		}
		// Park: fenced insert and read back, in one transaction.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var one int
		if err := tx.QueryRowContext(ctx, fence, id, "bench", 1).Scan(&one); err != nil {
			_ = tx.Rollback()
			return err
		}
		if _, err := tx.ExecContext(ctx, insertPark, id, "k", now+int64(24*time.Hour), in, now); err != nil {
			_ = tx.Rollback()
			return err
		}
		var rid, key, kind string
		var pl, dp sql.NullString
		var dl, da, ca int64
		if err := tx.QueryRowContext(ctx, selectPark, id, "k").Scan(&rid, &key, &dl, &pl, &kind, &dp, &da, &ca); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		// Suspend: fenced update, then check whether the run is already runnable.
		if _, err := db.ExecContext(ctx, update, "parked", nil, "", now, id, "bench", 1); err != nil {
			return err
		}
		if err := scanParks(ctx, id); err != nil {
			return err
		}
		// Decide: lock the run, check the park, store, count pending.
		tx, err = db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var status, owner string
		var lexp int64
		if err := tx.QueryRowContext(ctx, lockRun, id).Scan(&status, &owner, &lexp); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.QueryRowContext(ctx, parkKind, id, "k").Scan(&kind); err != nil || kind != "" {
			_ = tx.Rollback()
			return errors.Join(err, errors.New("park decided"))
		}
		if _, err := tx.ExecContext(ctx, decide, "approve", nil, now, id, "k"); err != nil {
			_ = tx.Rollback()
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, pending, id).Scan(&n); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		// Claim, load steps and parks.
		var r struct {
			id, flow, tenant, status, errs, owner string
			in, pr, out                           sql.NullString
			exp, epoch, ca, ua                    int64
		}
		if err := db.QueryRowContext(ctx, claim, "bench", exp, now, id, "bench", now).Scan(&r.id, &r.flow, &r.in, &r.pr, &r.tenant,
			&r.status, &r.out, &r.errs, &r.owner, &r.exp, &r.epoch, &r.ca, &r.ua); err != nil {
			return err
		}
		rows, err := db.QueryContext(ctx, steps, id)
		if err != nil {
			return err
		}
		for rows.Next() {
		}
		rows.Close()
		if err := scanParks(ctx, id); err != nil {
			return err
		}
		// Complete.
		res, err := db.ExecContext(ctx, update, "completed", in, "", now, id, "bench", r.epoch)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errors.New("complete lost the lease")
		}
		return nil
	}
}
