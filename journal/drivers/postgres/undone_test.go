package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal/drivers/postgres"
)

// Undone knows the errors a real Postgres gives through database/sql and pgx: the
// victim of a deadlock is a write to run again, a unique violation is not.
func TestUndoneKnowsARealDeadlock(t *testing.T) {
	db := openDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table := uniquePrefix() + "undone"
	if _, err := db.DB.ExecContext(ctx, `CREATE TABLE `+table+` (k int PRIMARY KEY, v int); INSERT INTO `+table+` VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.DB.ExecContext(context.Background(), `DROP TABLE `+table) })

	// Two transactions take the two rows in opposite orders, each holding its first
	// while it asks for the second: Postgres ends the deadlock by failing one of them.
	var wg sync.WaitGroup
	holding := make(chan error, 2) // each transaction's first update
	bothHold := make(chan struct{})
	errs := make([]error, 2)
	for i, order := range [][2]int{{1, 2}, {2, 1}} {
		wg.Go(func() {
			tx, err := db.DB.BeginTx(ctx, nil)
			if err != nil {
				holding <- err
				return
			}
			defer tx.Rollback()
			_, err = tx.ExecContext(ctx, `UPDATE `+table+` SET v = v + 1 WHERE k = $1`, order[0])
			holding <- err
			if err != nil {
				return
			}
			<-bothHold
			if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET v = v + 1 WHERE k = $1`, order[1]); err != nil {
				errs[i] = err
				return
			}
			errs[i] = tx.Commit()
		})
	}
	first := errors.Join(<-holding, <-holding)
	close(bothHold)
	wg.Wait()
	if first != nil {
		t.Fatalf("taking the first rows: %v", first)
	}
	victim := errors.Join(errs...)
	if victim == nil || (errs[0] != nil) == (errs[1] != nil) {
		t.Fatalf("want exactly one transaction failed by the deadlock, got %v and %v", errs[0], errs[1])
	}
	if !postgres.Undone(victim) {
		t.Errorf("Undone(%v) = false: the deadlock's victim would fail its caller instead of running again", victim)
	}

	_, dup := db.DB.ExecContext(ctx, `INSERT INTO `+table+` VALUES (1, 0)`)
	if dup == nil {
		t.Fatal("inserting a duplicate key succeeded")
	}
	if postgres.Undone(dup) {
		t.Errorf("Undone(%v) = true: a unique violation would run again", dup)
	}
}
