package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// countingReads counts the ReadStream calls that reach the driver, so a case can tell a
// read the follow tail answered from one the database answered.
type countingReads struct {
	journal.Driver
	n atomic.Int64
	// stepHeld, when set, holds each step's write this long after its commit (which
	// wakes the followers) before the journal hears of it.
	stepHeld time.Duration
}

func (c *countingReads) InsertStep(ctx context.Context, f journal.Fence, s journal.StepRecord, w journal.StepWrites) error {
	err := c.Driver.InsertStep(ctx, f, s, w)
	if err == nil && c.stepHeld > 0 {
		time.Sleep(c.stepHeld)
	}
	return err
}

func (c *countingReads) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	c.n.Add(1)
	return c.Driver.ReadStream(ctx, id, after, limit)
}

// during runs f and returns how many reads reached the driver meanwhile.
func (c *countingReads) during(f func()) int64 {
	c.n.Store(0)
	f()
	return c.n.Load()
}

// tailed opens a journal named owner with the follow tail on (whatever the driver) over a
// driver that counts reads.
func (e *env) tailed(owner string, mods ...func(*journal.Options)) (*journal.Journal, *countingReads) {
	e.t.Helper()
	c := &countingReads{Driver: e.d}
	mods = append([]func(*journal.Options){func(o *journal.Options) { o.TailBytes = 1 << 20 }}, mods...)
	return e.journalOn(c, owner, mods...), c
}

// structural writes n STEP_STARTED events through w and commits them.
func structural(t *testing.T, e *env, w *journal.LogWriter, n int) {
	t.Helper()
	for range n {
		write(t, e, w, fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"step-%d","pad":"%0100d"}`, w.LastSeq()+1, 0))
	}
	must(t, "Flush", w.Flush(e.ctx))
}

// logRows opens a writer on stream id through j (for run, or unfenced when nil), writes
// n structural rows, and closes it.
func (e *env) logRows(j *journal.Journal, id string, run *journal.Run, n int) {
	e.t.Helper()
	w, err := j.NewLogWriter(e.ctx, id, run, quiet)
	must(e.t, "NewLogWriter "+j.Owner(), err)
	structural(e.t, e, w, n)
	must(e.t, "Close "+j.Owner(), w.Close(e.ctx))
}

// followAll reads a stream through j as the follow route does, in batches of limit, from
// after until it is finished and drained or nothing more is stored. It fails the case
// when a stored row is skipped or repeated (seqs may jump where nothing is stored: past a
// dead writer's reservation), and checks every row against the driver's own copy.
func (e *env) followAll(j *journal.Journal, id string, after int64, limit int) (seqs []int64, finished bool) {
	e.t.Helper()
	stored, err := e.d.ReadEvents(e.ctx, id, 0, 100000)
	must(e.t, "ReadEvents", err)
	next := slices.IndexFunc(stored, func(r journal.EventRow) bool { return r.Seq > after })
	for range 1000 {
		st, rows, err := j.ReadStream(e.ctx, id, after, limit)
		must(e.t, "ReadStream", err)
		for _, r := range rows {
			if next < 0 || next >= len(stored) || r.Seq != stored[next].Seq {
				e.t.Fatalf("stream %s: seq %d after %d: a stored row skipped, or a duplicate (seen %v)", id, r.Seq, after, seqs)
			}
			if string(stored[next].Event) != string(r.Event) {
				e.t.Fatalf("stream %s: row %d is not the stored row", id, r.Seq)
			}
			seqs, after = append(seqs, r.Seq), r.Seq
			next++
		}
		if len(rows) < limit {
			if st.FinishedAt != nil {
				return seqs, true
			}
			if len(rows) == 0 {
				return seqs, false
			}
		}
	}
	e.t.Fatalf("stream %s: no end after 1000 reads", id)
	return nil, false
}

// wantFollow follows id through j from after, in batches of limit, and fails the case
// unless it delivers exactly the rows after+1..last and is finished as finished says.
func (e *env) wantFollow(j *journal.Journal, id string, after int64, limit int, last int64, finished bool) {
	e.t.Helper()
	seqs, done := e.followAll(j, id, after, limit)
	if !slices.Equal(seqs, span(after+1, last)) || done != finished {
		e.t.Fatalf("%s follows %s from %d (batches of %d): %v, finished %v; want %d..%d, finished %v",
			j.Owner(), id, after, limit, seqs, done, after+1, last, finished)
	}
}

func span(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func tailCases() []testCase {
	return []testCase{
		{"Tail/SameInstanceReadsNeedNoDatabase", tailSameInstanceReadsNeedNoDatabase},
		{"Tail/AFollowerWokenByTheEndReadsItFromTheTail", tailAFollowerWokenByTheEndReadsItFromTheTail},
		{"Tail/AFollowerWokenByAStepReadsItsRowsFromTheTail", tailAFollowerWokenByAStepReadsItsRowsFromTheTail},
		{"Tail/EarlierRowsComeFromTheDatabase", tailEarlierRowsComeFromTheDatabase},
		{"Tail/AnotherInstanceContinuesTheStream", tailAnotherInstanceContinuesTheStream},
		{"Tail/FinishedElsewhereAfterRowsThisTailLacks", tailFinishedElsewhereAfterRowsThisTailLacks},
		{"Tail/LostLeaseRowsAreNotServed", tailLostLeaseRowsAreNotServed},
		{"Tail/ALeaseLostAtRenewalEndsTheWritersHold", tailALeaseLostAtRenewalEndsTheWritersHold},
		{"Tail/ExpiresAfterTTLBelowRetention", tailExpiresAfterTTLBelowRetention},
		{"Tail/OldUnfinishedStreamsReadTheDatabase", tailOldUnfinishedStreamsReadTheDatabase},
		{"Tail/BudgetDropsOldestRows", tailBudgetDropsOldestRows},
	}
}

// tailSameInstanceReadsNeedNoDatabase is the case "Tail/SameInstanceReadsNeedNoDatabase": same instance reads need no database.
func tailSameInstanceReadsNeedNoDatabase(t *testing.T, e *env) {
	j, c := e.tailed("a")
	w := e.openLog(j, "s1", quiet)
	structural(t, e, w, 5)
	// The last read finds nothing after row 5 of an unfinished stream: this
	// instance's writer holds it, so the tail knows every committed row.
	if n := c.during(func() { e.wantFollow(j, "s1", 2, 2, 5, false) }); n != 0 {
		t.Fatalf("%d driver reads, want 0 (the writer holds the stream)", n)
	}
	must(t, "Close", w.Close(e.ctx))
	// Closed, the writer holds it no more (a run that parks, which another instance
	// may continue): the read past the tail asks the database.
	if n := c.during(func() { e.wantFollow(j, "s1", 2, 2, 5, false) }); n != 1 {
		t.Fatalf("after Close: %d driver reads, want 1 (only the read past the tail)", n)
	}
	must(t, "FinishStream", j.FinishStream(e.ctx, "s1"))
	n := c.during(func() {
		e.wantFollow(j, "s1", 0, 500, 5, true)
		st, rows, err := j.ReadStream(e.ctx, "s1", 5, 10)
		must(t, "ReadStream", err)
		if len(rows) != 0 || st.FinishedAt == nil || st.PrincipalID != "u1" || st.Tenant != "t1" || st.Flow != "f" {
			t.Fatalf("read past the end = %+v, %d rows", st, len(rows))
		}
	})
	if n != 0 {
		t.Fatalf("%d driver reads of a stream finished here, want 0", n)
	}
	// Rows handed out are shared with the tail: appending to them must not reach it.
	_, first, _ := j.ReadStream(e.ctx, "s1", 0, 2)
	_ = append(first, journal.EventRow{Seq: 99, Event: json.RawMessage(`{}`)})
	if _, again, _ := j.ReadStream(e.ctx, "s1", 2, 1); len(again) != 1 || again[0].Seq != 3 {
		t.Fatalf("after a caller's append, row 3 reads %v", again)
	}
}

// tailAFollowerWokenByTheEndReadsItFromTheTail is the case
// "Tail/AFollowerWokenByTheEndReadsItFromTheTail": a follower on the instance that ends a
// stream, woken by the end's commit, reads the last rows and the end at once. On a
// journal whose writes are commits the end goes through the log batch, which puts them
// in the follow tail before the follower's read is answered, so that read costs no
// database round trip.
func tailAFollowerWokenByTheEndReadsItFromTheTail(t *testing.T, e *env) {
	j, c := e.tailed("a")
	w := e.openLog(j, "s1", quiet)
	structural(t, e, w, 2)
	st, rows, n := e.readWoken(j, c, "s1", 2, "WriteEnd", func() error {
		_, err := w.WriteEnd(e.ctx, "RUN_FINISHED", json.RawMessage(`{"type":"RUN_FINISHED"}`))
		return err
	})
	if !slices.Equal(seqsOf(rows), []int64{3}) || st.FinishedAt == nil {
		t.Fatalf("the woken follower read rows %v, finished %v; want [3], finished", seqsOf(rows), st.FinishedAt != nil)
	}
	if e.d.Capabilities().Has(journal.CapDurable) && n != 0 {
		t.Fatalf("%d driver reads by a follower woken by the end, want 0", n)
	}
}

// readWoken subscribes to stream id on j, runs write (named what) in the background,
// and each time the follower is woken reads the stream after seq after as a follower
// does, until a read finds rows or the end, counting the driver reads those reads made
// (c counts j's). A wake-up may come before the write's commit (Postgres wakes every
// subscriber when its listener connects): a read that finds nothing new then waits for
// the next one, as a follower does. It returns what the last read gave, after write
// returned without error.
func (e *env) readWoken(j *journal.Journal, c *countingReads, id string, after int64, what string, write func() error) (journal.Stream, []journal.EventRow, int64) {
	t := e.t
	t.Helper()
	woken, stop := j.Subscribe(id)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- write() }()
	var st journal.Stream
	var rows []journal.EventRow
	var n int64
	for len(rows) == 0 && st.FinishedAt == nil {
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatalf("the follower was not woken by %s", what)
		}
		n += c.during(func() {
			var err error
			st, rows, err = j.ReadStream(e.ctx, id, after, 10)
			must(t, "ReadStream", err)
		})
	}
	must(t, what, <-done)
	return st, rows, n
}

// tailAFollowerWokenByAStepReadsItsRowsFromTheTail is the case
// "Tail/AFollowerWokenByAStepReadsItsRowsFromTheTail": a step's write stores the rows its
// run's log queued; a follower on the instance, woken by that write's commit, reads them
// from the follow tail, which the journal fills before it answers the read, not from the
// database. The driver holds the step's write for a while after its commit, so the
// follower always reads before the journal has the rows in hand.
func tailAFollowerWokenByAStepReadsItsRowsFromTheTail(t *testing.T, e *env) {
	j, c := e.tailed("a")
	c.stepHeld = 300 * time.Millisecond
	r := e.begin(j)
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	structural(t, e, w, 2)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"queued"}`)
	_, rows, n := e.readWoken(j, c, "s1", 2, "Step", func() error {
		_, err := r.Step(e.ctx, "after", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
		return err
	})
	if !slices.Equal(seqsOf(rows), []int64{3}) {
		t.Fatalf("the woken follower read rows %v, want [3]", seqsOf(rows))
	}
	if e.d.Capabilities().Has(journal.CapDurable) && n != 0 {
		t.Fatalf("%d driver reads by a follower woken by a step, want 0", n)
	}
	must(t, "Close", w.Close(e.ctx))
}

// tailEarlierRowsComeFromTheDatabase is the case "Tail/EarlierRowsComeFromTheDatabase": earlier rows come from the database.
func tailEarlierRowsComeFromTheDatabase(t *testing.T, e *env) {
	b := e.journal("b")
	e.stream(b, "s1", "")
	e.logRows(b, "s1", nil, 3)
	a, c := e.tailed("a")
	e.logRows(a, "s1", nil, 3)
	must(t, "FinishStream", a.FinishStream(e.ctx, "s1"))
	if n := c.during(func() { e.wantFollow(a, "s1", 3, 500, 6, true) }); n != 0 {
		t.Fatalf("rows a wrote took %d driver reads, want 0", n)
	}
	if n := c.during(func() { e.wantFollow(a, "s1", 1, 500, 6, true) }); n != 1 {
		t.Fatalf("rows b wrote took %d driver reads, want 1", n)
	}
}

// tailAnotherInstanceContinuesTheStream is the case "Tail/AnotherInstanceContinuesTheStream": another instance continues the stream.
func tailAnotherInstanceContinuesTheStream(t *testing.T, e *env) {
	a, _ := e.tailed("a")
	b, _ := e.tailed("b")
	e.stream(a, "s1", "")
	e.logRows(a, "s1", nil, 3)
	// b takes over (as after a lease expiry) and appends; a's tail knows nothing of it.
	e.logRows(b, "s1", nil, 3)
	e.wantFollow(a, "s1", 0, 2, 6, false)
	// a appends row 7 directly, then b row 8: each time a's tail no longer
	// continues and restarts at a's next row.
	must(t, "AppendEvents a", a.AppendEvents(e.ctx, "s1", nil, rows(7)...))
	for after := range int64(7) {
		e.wantFollow(a, "s1", after, 2, 7, false)
	}
	e.logRows(b, "s1", nil, 1)
	e.logRows(a, "s1", nil, 2)
	must(t, "FinishStream", a.FinishStream(e.ctx, "s1"))
	for _, j := range []*journal.Journal{a, b} {
		for after := range int64(11) {
			e.wantFollow(j, "s1", after, 2, 10, true)
		}
	}
}

// tailFinishedElsewhereAfterRowsThisTailLacks is the case "Tail/FinishedElsewhereAfterRowsThisTailLacks": finished elsewhere after rows this tail lacks.
func tailFinishedElsewhereAfterRowsThisTailLacks(t *testing.T, e *env) {
	a, c := e.tailed("a")
	b := e.journal("b")
	e.stream(a, "s1", "")
	e.logRows(a, "s1", nil, 3)
	e.logRows(b, "s1", nil, 2)
	must(t, "FinishStream b", b.FinishStream(e.ctx, "s1"))
	// a finishes too: the driver finds the stream finished and says nothing more.
	must(t, "FinishStream a", a.FinishStream(e.ctx, "s1"))
	e.wantFollow(a, "s1", 0, 2, 5, true)
	// When a's tail does end at the last row, a's finish makes it complete.
	e.stream(a, "s2", "")
	e.logRows(a, "s2", nil, 3)
	must(t, "FinishStream a s2", a.FinishStream(e.ctx, "s2"))
	if n := c.during(func() { e.wantFollow(a, "s2", 0, 2, 3, true) }); n != 0 {
		t.Fatalf("s2 took %d driver reads, want 0", n)
	}
}

// takenOver opens a writer of a on stream id of a run of a, writes two rows, and lets
// the run's lease expire for b to claim it; it returns a's writer and b's execution.
func (e *env) takenOver(a, b *journal.Journal, id string) (*journal.LogWriter, *journal.Run) {
	t := e.t
	r := e.begin(a)
	e.stream(a, id, r.ID)
	wa, err := a.NewLogWriter(e.ctx, id, r, quiet)
	must(t, "NewLogWriter a", err)
	structural(t, e, wa, 2)
	e.clock.Advance(leaseTTL + time.Second)
	rb, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim b", err)
	return wa, rb
}

// tailLostLeaseRowsAreNotServed is the case "Tail/LostLeaseRowsAreNotServed": lost lease rows are not served.
func tailLostLeaseRowsAreNotServed(t *testing.T, e *env) {
	a, _ := e.tailed("a")
	b := e.journal("b")
	wa, rb := e.takenOver(a, b, "s1")
	write(t, e, wa, `{"type":"STEP_STARTED","stepName":"late"}`)
	if err := wa.Flush(e.ctx); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("a's commit after losing the lease: err = %v, want ErrLeaseLost", err)
	}
	e.logRows(b, "s1", rb, 2)
	// b's rows continue past every seq a reserved (a may have sent them as ids);
	// a's refused row 3 must not appear.
	_, stored := e.seqs(a, "s1")
	st, err := a.GetStream(e.ctx, "s1")
	must(t, "GetStream", err)
	want := []int64{1, 2, stored[2].Seq, stored[2].Seq + 1}
	if seqs, _ := e.followAll(a, "s1", 0, 500); !slices.Equal(seqs, want) || want[2] <= 3 || st.Reserved != want[3] {
		t.Fatalf("a follows %v, want %v past a's reservation (stream %+v)", seqs, want, st)
	}
}

// tailALeaseLostAtRenewalEndsTheWritersHold is the case
// "Tail/ALeaseLostAtRenewalEndsTheWritersHold": while a writer of this instance holds a
// stream, a read past the tail needs no database; once its run's lease renewal finds the
// lease taken, the rows another instance appended are read from the database.
func tailALeaseLostAtRenewalEndsTheWritersHold(t *testing.T, e *env) {
	a, _ := e.tailed("a")
	b := e.journal("b")
	wa, rb := e.takenOver(a, b, "s1")
	e.logRows(b, "s1", rb, 2)
	a.RenewOnce(e.ctx)
	seqs, _ := e.followAll(a, "s1", 0, 500)
	if len(seqs) != 4 || seqs[1] != 2 {
		t.Fatalf("a follows %v after its lease was lost, want rows 1, 2 and b's two", seqs)
	}
	_ = wa.Close(e.ctx)
}

// tailExpiresAfterTTLBelowRetention is the case "Tail/ExpiresAfterTTLBelowRetention": expires after TTL below retention.
func tailExpiresAfterTTLBelowRetention(t *testing.T, e *env) {
	// TailTTL asks for an hour; the retention window caps it at 30s.
	j, c := e.tailed("a", func(o *journal.Options) { o.TailTTL = time.Hour; o.FinishedRetention = time.Minute })
	e.stream(j, "s1", "")
	e.logRows(j, "s1", nil, 3)
	must(t, "FinishStream", j.FinishStream(e.ctx, "s1"))
	if n := c.during(func() { e.wantFollow(j, "s1", 0, 500, 3, true) }); n != 0 {
		t.Fatalf("fresh tail: %d driver reads, want 0", n)
	}
	e.clock.Advance(30 * time.Second)
	if n := c.during(func() { e.wantFollow(j, "s1", 0, 500, 3, true) }); n != 1 {
		t.Fatalf("expired tail: %d driver reads, want 1", n)
	}
}

// tailOldUnfinishedStreamsReadTheDatabase is the case "Tail/OldUnfinishedStreamsReadTheDatabase": old unfinished streams read the database.
func tailOldUnfinishedStreamsReadTheDatabase(t *testing.T, e *env) {
	// Retention closes unfinished streams an hour old; past half of that the
	// tail stops answering, however recently the stream was written.
	j, c := e.tailed("a", func(o *journal.Options) { o.UnfinishedMaxAge = time.Hour })
	w := e.openLog(j, "s1", quiet)
	structural(t, e, w, 2)
	e.clock.Advance(20 * time.Minute)
	structural(t, e, w, 1)
	if n := c.during(func() { e.wantFollow(j, "s1", 0, 2, 3, false) }); n != 0 {
		t.Fatalf("a 20-minute-old stream its writer holds: %d driver reads, want 0", n)
	}
	e.clock.Advance(11 * time.Minute)
	structural(t, e, w, 1)
	if n := c.during(func() { e.wantFollow(j, "s1", 0, 2, 4, false) }); n != 3 {
		t.Fatalf("a 31-minute-old stream: %d driver reads, want every read (3)", n)
	}
}

// tailBudgetDropsOldestRows is the case "Tail/BudgetDropsOldestRows": budget drops oldest rows.
func tailBudgetDropsOldestRows(t *testing.T, e *env) {
	// About 180 bytes a row and a stream may hold an eighth of 4 KiB: a few rows.
	j, c := e.tailed("a", func(o *journal.Options) { o.TailBytes = 4096 })
	w := e.openLog(j, "s1", quiet)
	for range 10 {
		structural(t, e, w, 3)
	}
	must(t, "Close", w.Close(e.ctx))
	must(t, "FinishStream", j.FinishStream(e.ctx, "s1"))
	if n := c.during(func() { e.wantFollow(j, "s1", 29, 500, 30, true) }); n != 0 {
		t.Fatalf("the newest row took %d driver reads, want 0", n)
	}
	if c.during(func() { e.wantFollow(j, "s1", 0, 7, 30, true) }) == 0 {
		t.Fatal("rows beyond the budget were served without the database")
	}
}
