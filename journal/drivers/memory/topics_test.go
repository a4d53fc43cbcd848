package memory

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// TestTopicWaitersIndex checks that a set or a publish resumes exactly the runs parked on
// its topic, leaves a wait for a later message pending, and leaves nothing in the index
// of waiters once no park waits (a park decided otherwise, by a timeout, included).
func TestTopicWaitersIndex(t *testing.T) {
	ctx := context.Background()
	d := New()
	now := time.Now()
	const sig, ch = "signal/paid/o1", "channel/room"
	park := func(id string, p journal.ParkRecord) {
		t.Helper()
		f := journal.Fence{RunID: id, Owner: "o", Epoch: 1}
		if err := d.InsertRun(ctx, journal.RunRecord{ID: id, Status: journal.StatusRunning, LeaseOwner: "o", Epoch: 1}); err != nil {
			t.Fatal(err)
		}
		p.RunID, p.Deadline, p.CreatedAt = id, now.Add(time.Hour), now
		if _, err := d.InsertPark(ctx, f, p); err != nil {
			t.Fatal(err)
		}
		if err := d.UpdateRun(ctx, f, journal.RunUpdate{Status: journal.StatusParked}, now); err != nil {
			t.Fatal(err)
		}
	}
	park("waits-signal", journal.ParkRecord{Key: sig, Topic: sig})
	park("timed-out", journal.ParkRecord{Key: sig, Topic: sig})
	park("waits-first", journal.ParkRecord{Key: "r1", Topic: ch})
	park("waits-third", journal.ParkRecord{Key: "r3", Topic: ch, After: 2})
	park("approval", journal.ParkRecord{Key: "approve"})
	if _, err := d.Decide(ctx, "timed-out", sig, "", journal.Decision{Kind: journal.DecisionTimeout}, now); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.waiting[sig]["timed-out"]; ok || len(d.waiting[sig]) != 1 {
		t.Fatalf("a timed-out wait is still indexed (a signal keyed by unique ids would grow the index): %v", d.waiting[sig])
	}

	if _, runnable, err := d.SetSignal(ctx, sig, []byte(`"paid"`), true, now); err != nil || !slices.Equal(runnable, []string{"waits-signal"}) {
		t.Fatalf("SetSignal: runnable %v (%v), want [waits-signal]", runnable, err)
	}
	if _, ok := d.waiting[sig]; ok {
		t.Fatalf("the signal's waiters are still indexed: %v", d.waiting[sig])
	}
	if _, runnable, err := d.Publish(ctx, ch, []byte(`1`), now); err != nil || !slices.Equal(runnable, []string{"waits-first"}) {
		t.Fatalf("first Publish: runnable %v (%v), want [waits-first]", runnable, err)
	}
	if _, runnable, err := d.Publish(ctx, ch, []byte(`2`), now); err != nil || len(runnable) != 0 {
		t.Fatalf("second Publish: runnable %v (%v), want none", runnable, err)
	}
	if _, runnable, err := d.Publish(ctx, ch, []byte(`3`), now); err != nil || !slices.Equal(runnable, []string{"waits-third"}) {
		t.Fatalf("third Publish: runnable %v (%v), want [waits-third]", runnable, err)
	}
	if len(d.waiting) != 0 {
		t.Fatalf("waiters still indexed with no park waiting: %v", d.waiting)
	}
	for _, id := range []string{"waits-signal", "waits-first", "waits-third"} {
		parks, _ := d.ListParks(ctx, id)
		if len(parks) != 1 || parks[0].Decision == nil || parks[0].Decision.Kind != journal.DecisionApprove {
			t.Fatalf("run %s: parks %+v, want one approved", id, parks)
		}
	}
	if parks, _ := d.ListParks(ctx, "approval"); parks[0].Decision != nil {
		t.Fatalf("a park on no topic was decided: %+v", parks[0])
	}
}
