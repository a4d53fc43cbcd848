package journaltest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

func retentionCases() []testCase {
	return []testCase{
		{"Retention/FinishedStreamsDeletedAfter24h", retentionFinishedStreamsDeletedAfter24h},
		{"Retention/UnfinishedStreamsClosedAfter7Days", retentionUnfinishedStreamsClosedAfter7Days},
		{"Retention/OnlyTheSchedulerLeaseHolderCleans", retentionOnlyTheSchedulerLeaseHolderCleans},
	}
}

// retentionFinishedStreamsDeletedAfter24h is the case "Retention/FinishedStreamsDeletedAfter24h": finished streams deleted after24h.
func retentionFinishedStreamsDeletedAfter24h(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "old", "")
	e.stream(j, "open", "")
	must(t, "Append", j.AppendEvents(e.ctx, "old", nil, rows(1, 2)...))
	must(t, "Append", j.AppendEvents(e.ctx, "open", nil, rows(1)...))
	must(t, "Finish", j.FinishStream(e.ctx, "old"))
	e.clock.Advance(24*time.Hour - time.Second)
	res, err := j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	if !res.Leader || res.Deleted != 0 {
		t.Fatalf("cleanup before 24h = %+v", res)
	}
	e.clock.Advance(2 * time.Second)
	e.stream(j, "late", "")
	must(t, "Finish late", j.FinishStream(e.ctx, "late"))
	res, err = j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	if res.Deleted != 1 || res.Closed != 0 {
		t.Fatalf("cleanup after 24h = %+v", res)
	}
	if _, err := j.GetStream(e.ctx, "old"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("old stream err = %v", err)
	}
	if seqs, _ := e.seqs(j, "old"); len(seqs) != 0 {
		t.Fatalf("old rows left: %v", seqs)
	}
	for _, id := range []string{"open", "late"} {
		if _, err := j.GetStream(e.ctx, id); err != nil {
			t.Fatalf("%s stream removed: %v", id, err)
		}
	}
	if seqs, _ := e.seqs(j, "open"); len(seqs) != 1 {
		t.Fatalf("open stream rows = %v", seqs)
	}
}

// retentionUnfinishedStreamsClosedAfter7Days is the case "Retention/UnfinishedStreamsClosedAfter7Days": unfinished streams closed after7 days.
func retentionUnfinishedStreamsClosedAfter7Days(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "stuck", "")
	must(t, "Append", j.AppendEvents(e.ctx, "stuck", nil, rows(1, 2, 3)...))
	e.clock.Advance(7 * 24 * time.Hour)
	res, err := j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	if res.Closed != 0 {
		t.Fatalf("closed a stream exactly 7 days old: %+v", res)
	}
	e.clock.Advance(time.Second)
	res, err = j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	if res.Closed != 1 || res.Deleted != 0 {
		t.Fatalf("cleanup = %+v, want 1 closed", res)
	}
	s, err := j.GetStream(e.ctx, "stuck")
	must(t, "GetStream", err)
	if s.FinishedAt == nil || !s.FinishedAt.Equal(e.clock.Now()) {
		t.Fatalf("finished at %v", s.FinishedAt)
	}
	seqs, rs := e.seqs(j, "stuck")
	got := events(t, rs)
	if len(seqs) != 1 || seqs[0] != 4 || got[0]["type"] != "RUN_ERROR" || got[0]["code"] == "" ||
		!strings.Contains(got[0]["message"].(string), "did not finish") {
		t.Fatalf("rows after close = %v %v, want only RUN_ERROR at seq 4", seqs, got)
	}
	res, err = j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	if res.Closed != 0 {
		t.Fatal("a closed stream was closed twice")
	}
	e.clock.Advance(24*time.Hour + time.Second)
	res, err = j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	if res.Deleted != 1 {
		t.Fatalf("closed stream not deleted 24h later: %+v", res)
	}
}

// retentionOnlyTheSchedulerLeaseHolderCleans is the case "Retention/OnlyTheSchedulerLeaseHolderCleans": only the scheduler lease holder cleans.
func retentionOnlyTheSchedulerLeaseHolderCleans(t *testing.T, e *env) {
	// A long cleanup interval makes the scheduler lease (twice the interval) outlive 24h.
	long := func(o *journal.Options) { o.CleanupInterval = 24 * time.Hour }
	a, b := e.journal("a", long), e.journal("b", long)
	res, err := a.CleanupOnce(e.ctx)
	must(t, "a CleanupOnce", err)
	if !res.Leader {
		t.Fatal("a did not take the free scheduler lease")
	}
	e.stream(a, "s", "")
	must(t, "Finish", a.FinishStream(e.ctx, "s"))
	e.clock.Advance(25 * time.Hour)
	res, err = b.CleanupOnce(e.ctx)
	must(t, "b CleanupOnce", err)
	if res.Leader || res.Deleted != 0 {
		t.Fatalf("non-leader cleaned: %+v", res)
	}
	if _, err := a.GetStream(e.ctx, "s"); err != nil {
		t.Fatalf("stream removed by a non-leader: %v", err)
	}
	res, err = a.CleanupOnce(e.ctx)
	must(t, "a CleanupOnce", err)
	if !res.Leader || res.Deleted != 1 {
		t.Fatalf("leader cleanup = %+v", res)
	}
	e.clock.Advance(49 * time.Hour)
	res, err = b.CleanupOnce(e.ctx)
	must(t, "b CleanupOnce", err)
	if !res.Leader {
		t.Fatal("b did not take over the expired scheduler lease")
	}
}
