package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// askedDriver fails the test when an id reaches the driver: the journal must answer a
// lookup by an id no database keeps by itself.
type askedDriver struct {
	journal.Driver
	t *testing.T
}

func (d askedDriver) asked(what, id string) { d.t.Errorf("%s(%q) reached the driver", what, id) }

func (d askedDriver) RequestStop(ctx context.Context, id string, now time.Time) (journal.DecideResult, error) {
	d.asked("RequestStop", id)
	return d.Driver.RequestStop(ctx, id, now)
}

func (d askedDriver) StopRequested(ctx context.Context, id string) (time.Time, error) {
	d.asked("StopRequested", id)
	return d.Driver.StopRequested(ctx, id)
}

func (d askedDriver) ThreadRuns(ctx context.Context, id string, after int64, limit int) ([]journal.ThreadRun, error) {
	d.asked("ThreadRuns", id)
	return d.Driver.ThreadRuns(ctx, id, after, limit)
}

func (d askedDriver) AddThreadRun(ctx context.Context, threadID, streamID string, now time.Time) (int64, error) {
	d.asked("AddThreadRun", threadID+"/"+streamID)
	return d.Driver.AddThreadRun(ctx, threadID, streamID, now)
}

func (d askedDriver) GetRun(ctx context.Context, id string) (journal.RunRecord, error) {
	d.asked("GetRun", id)
	return d.Driver.GetRun(ctx, id)
}

func (d askedDriver) ClaimRun(ctx context.Context, id, owner string, now, exp time.Time) (journal.RunRecord, error) {
	d.asked("ClaimRun", id)
	return d.Driver.ClaimRun(ctx, id, owner, now, exp)
}

func (d askedDriver) ListParks(ctx context.Context, id string) ([]journal.ParkRecord, error) {
	d.asked("ListParks", id)
	return d.Driver.ListParks(ctx, id)
}

func (d askedDriver) Decide(ctx context.Context, id, key, owner string, dec journal.Decision, now time.Time) (journal.DecideResult, error) {
	d.asked("Decide", id+"/"+key)
	return d.Driver.Decide(ctx, id, key, owner, dec, now)
}

func (d askedDriver) GetStream(ctx context.Context, id string) (journal.Stream, error) {
	d.asked("GetStream", id)
	return d.Driver.GetStream(ctx, id)
}

func (d askedDriver) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	d.asked("ReadStream", id)
	return d.Driver.ReadStream(ctx, id, after, limit)
}

func (d askedDriver) ReadEvents(ctx context.Context, id string, after int64, limit int) ([]journal.EventRow, error) {
	d.asked("ReadEvents", id)
	return d.Driver.ReadEvents(ctx, id, after, limit)
}

func (d askedDriver) LastSeq(ctx context.Context, id string) (int64, error) {
	d.asked("LastSeq", id)
	return d.Driver.LastSeq(ctx, id)
}

// An id holding a NUL byte or invalid UTF-8 (which Postgres refuses in a query) is an
// unknown id on every driver, answered without one.
func TestIDsNoDatabaseKeepsAreUnknown(t *testing.T) {
	t.Parallel()
	j, err := journal.New(askedDriver{memory.New(), t}, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"a\x00b", "\x00", "a\xffb", "\xed\xa0\x80"} {
		if _, err := j.GetRun(ctx, id); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("GetRun(%q): %v", id, err)
		}
		if _, err := j.Claim(ctx, id); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("Claim(%q): %v", id, err)
		}
		if parks, err := j.ListParks(ctx, id); err != nil || len(parks) != 0 {
			t.Errorf("ListParks(%q): %v %v", id, parks, err)
		}
		if err := j.Decide(ctx, id, "k", journal.Decision{Kind: journal.DecisionApprove}); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("Decide(%q): %v", id, err)
		}
		if err := j.Decide(ctx, "run", id, journal.Decision{Kind: journal.DecisionApprove}); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("Decide of key %q: %v", id, err)
		}
		if _, err := j.GetStream(ctx, id); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("GetStream(%q): %v", id, err)
		}
		if _, _, err := j.ReadStream(ctx, id, 0, 10); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("ReadStream(%q): %v", id, err)
		}
		if rows, err := j.ReadEvents(ctx, id, 0, 10); err != nil || len(rows) != 0 {
			t.Errorf("ReadEvents(%q): %v %v", id, rows, err)
		}
		if seq, err := j.LastSeq(ctx, id); err != nil || seq != 0 {
			t.Errorf("LastSeq(%q): %d %v", id, seq, err)
		}
		if err := j.RequestStop(ctx, id); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("RequestStop(%q): %v", id, err)
		}
		if asked, err := j.StopRequested(ctx, id); err != nil || asked {
			t.Errorf("StopRequested(%q): %v %v", id, asked, err)
		}
		if runs, err := j.ThreadRuns(ctx, id, 0, 10); err != nil || len(runs) != 0 {
			t.Errorf("ThreadRuns(%q): %v %v", id, runs, err)
		}
		if _, err := j.AddThreadRun(ctx, id, "s"); !errors.Is(err, journal.ErrUnstorableID) {
			t.Errorf("AddThreadRun(%q, s): %v", id, err)
		}
		if _, err := j.AddThreadRun(ctx, "t", id); !errors.Is(err, journal.ErrUnstorableID) {
			t.Errorf("AddThreadRun(t, %q): %v", id, err)
		}
		if journal.ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
}
