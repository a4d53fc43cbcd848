package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// A batch renewal waits for no write: a run whose row another transaction holds (its own
// write in flight) is skipped by the batch and renewed once that transaction ends, while
// the others' renewals are stored at once.
func TestRenewLeasesWaitsForNoWrite(t *testing.T) {
	db := openDB(t)
	prefix := uniquePrefix()
	d := newDriver(t, db, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().Truncate(time.Millisecond)
	fences := make([]journal.Fence, 3)
	for i := range fences {
		id := fmt.Sprintf("renew-%d", i)
		if err := d.InsertRun(ctx, journal.RunRecord{ID: id, Flow: "f", Status: journal.StatusRunning,
			LeaseOwner: "a", LeaseExpires: now.Add(time.Minute), Epoch: 1, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		fences[i] = journal.Fence{RunID: id, Owner: "a", Epoch: 1}
	}

	// A transaction holds the row of the second run, as a write of its own would.
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM `+prefix+`runs WHERE id = $1 FOR SHARE`, fences[1].RunID); err != nil {
		t.Fatal(err)
	}

	expires := now.Add(time.Hour)
	type result struct {
		lost []journal.Fence
		err  error
	}
	done := make(chan result, 1)
	go func() {
		lost, err := d.RenewLeases(ctx, fences, expires)
		done <- result{lost, err}
	}()
	// The others are renewed while the row is held.
	for _, f := range []journal.Fence{fences[0], fences[2]} {
		for {
			rec, err := d.GetRun(ctx, f.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.LeaseExpires.Equal(expires) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("run %s not renewed while another run's row was held: the batch waited for it", f.RunID)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("RenewLeases returned (%v, %v) while a run it renews was held", r.lost, r.err)
	default:
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.lost) != 0 {
		t.Fatalf("RenewLeases = %v, %v; want every lease renewed", r.lost, r.err)
	}
	rec, err := d.GetRun(ctx, fences[1].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.LeaseExpires.Equal(expires) || rec.LeaseOwner != "a" {
		t.Fatalf("the held run after its write: %+v, want its lease to expire at %v", rec, expires)
	}
}
