package journaltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// rows builds event rows with the given seqs.
func rows(seqs ...int64) []journal.EventRow {
	out := make([]journal.EventRow, len(seqs))
	for i, s := range seqs {
		out[i] = journal.EventRow{Seq: s, Event: json.RawMessage(fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"step-%d"}`, s))}
	}
	return out
}

// stream creates a stream (optionally owned by runID) through j.
func (e *env) stream(j *journal.Journal, id, runID string) {
	e.t.Helper()
	must(e.t, "CreateStream", j.CreateStream(e.ctx, journal.Stream{ID: id, RunID: runID, Flow: "f", PrincipalID: "u1", Tenant: "t1"}))
}

// seqs reads every stored row of a stream and returns the seqs.
func (e *env) seqs(j *journal.Journal, id string) ([]int64, []journal.EventRow) {
	e.t.Helper()
	rs, err := j.ReadEvents(e.ctx, id, 0, 100000)
	must(e.t, "ReadEvents", err)
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out, rs
}

// checkGapFree fails unless seqs are 1..n.
func checkGapFree(t *testing.T, seqs []int64) {
	t.Helper()
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seq %d at index %d: not gap-free (%v)", s, i, seqs)
		}
	}
}

func eventCases() []testCase {
	return []testCase{
		{"Events/StreamRecords", eventsStreamRecords},
		{"Events/FinishStreamStoresItsRowsInTheSameWrite", eventsFinishStreamStoresItsRowsInTheSameWrite},
		{"Events/FinishStreamIsFencedWithRowsOrAFence", eventsFinishStreamIsFencedWithRowsOrAFence},
		{"Events/AppendReadLastSeq", eventsAppendReadLastSeq},
		{"Events/StoredRowsDoNotShareTheCallersBytes", eventsStoredRowsDoNotShareTheCallersBytes},
		{"Events/ReadStream", eventsReadStream},
		{"Events/ReadStreamSeesEveryRowOnceFinished", eventsReadStreamSeesEveryRowOnceFinished},
		{"Events/ConcurrentAppendersStayGapFree", eventsConcurrentAppendersStayGapFree},
		{"Events/AppendBatchFailsOnlyTheAppendsThatFail", eventsAppendBatchFailsOnlyTheAppendsThatFail},
		{"Events/AppendBatchOfManyStreams", eventsAppendBatchOfManyStreams},
		{"Events/AppendBatchCreatesAndEndsStreams", eventsAppendBatchCreatesAndEndsStreams},
		{"Events/DurableStreamAppendsAreFenced", eventsDurableStreamAppendsAreFenced},
	}
}

// eventsStreamRecords is the case "Events/StreamRecords": stream records.
func eventsStreamRecords(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	if err := j.CreateStream(e.ctx, journal.Stream{ID: "s1"}); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("duplicate stream err = %v", err)
	}
	s, err := j.GetStream(e.ctx, "s1")
	must(t, "GetStream", err)
	if s.Flow != "f" || s.PrincipalID != "u1" || s.Tenant != "t1" || s.RunID != "" || s.FinishedAt != nil || !s.CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("stream = %+v", s)
	}
	e.clock.Advance(time.Minute)
	must(t, "FinishStream", j.FinishStream(e.ctx, "s1"))
	s, _ = j.GetStream(e.ctx, "s1")
	if s.FinishedAt == nil || !s.FinishedAt.Equal(e.clock.Now()) {
		t.Fatalf("finished at %v", s.FinishedAt)
	}
	if _, err := j.GetStream(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("GetStream unknown err = %v", err)
	}
	if err := j.FinishStream(e.ctx, "nope"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("FinishStream unknown err = %v", err)
	}
}

// eventsFinishStreamStoresItsRowsInTheSameWrite is the case "Events/FinishStreamStoresItsRowsInTheSameWrite": finish stream stores its rows in the same write.
func eventsFinishStreamStoresItsRowsInTheSameWrite(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	must(t, "Append", e.d.AppendEvents(e.ctx, nil, journal.Append{StreamID: "s1", Rows: rows(1, 2)}))
	at := e.clock.Now()
	// A batch that does not continue the stream stores nothing and finishes nothing.
	for _, c := range []struct {
		seqs []int64
		want error
	}{{[]int64{2, 3}, journal.ErrSeqExists}, {[]int64{4}, journal.ErrSeqGap}} {
		if _, err := e.d.FinishStream(e.ctx, "s1", nil, rows(c.seqs...), at); !errors.Is(err, c.want) {
			t.Fatalf("finish with %v err = %v, want %v", c.seqs, err, c.want)
		}
		if st, _ := e.d.GetStream(e.ctx, "s1"); st.FinishedAt != nil {
			t.Fatalf("a failed finish with %v finished the stream", c.seqs)
		}
	}
	last, err := e.d.FinishStream(e.ctx, "s1", nil, rows(3, 4), at)
	must(t, "FinishStream with rows", err)
	st, got, err := e.d.ReadStream(e.ctx, "s1", 0, 10)
	must(t, "ReadStream", err)
	if last != 4 || len(got) != 4 || got[3].Seq != 4 || !jsonEq(got[3].Event, rows(4)[0].Event) || st.FinishedAt == nil || !st.FinishedAt.Equal(at) {
		t.Fatalf("finish with rows: last %d, stream %+v, rows %+v", last, st, got)
	}
	// Later finishes keep the first time and still report the last seq.
	last, err = e.d.FinishStream(e.ctx, "s1", nil, nil, at.Add(time.Hour))
	must(t, "second FinishStream", err)
	if st, _ = e.d.GetStream(e.ctx, "s1"); last != 4 || !st.FinishedAt.Equal(at) {
		t.Fatalf("second finish: last %d, finished at %v, want 4 and %v", last, st.FinishedAt, at)
	}
	e.stream(j, "empty", "")
	if last, err = e.d.FinishStream(e.ctx, "empty", nil, nil, at); err != nil || last != 0 {
		t.Fatalf("finishing an empty stream: last %d, err %v", last, err)
	}
	if _, err := e.d.FinishStream(e.ctx, "nope", nil, rows(1), at); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("finish of an unknown stream with rows err = %v", err)
	}
}

// eventsFinishStreamIsFencedWithRowsOrAFence is the case "Events/FinishStreamIsFencedWithRowsOrAFence": finish stream is fenced with rows or a fence.
func eventsFinishStreamIsFencedWithRowsOrAFence(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.stream(a, "s1", r.ID)
	old := r.Fence()
	must(t, "Append", e.d.AppendEvents(e.ctx, &old, journal.Append{StreamID: "s1", Rows: rows(1)}))
	if _, err := e.d.FinishStream(e.ctx, "s1", nil, rows(2), e.clock.Now()); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("rows without a fence on a durable stream err = %v", err)
	}
	e.clock.Advance(leaseTTL)
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	for _, c := range []struct {
		name string
		rows []journal.EventRow
	}{{"with rows", rows(2)}, {"without rows", nil}} {
		if _, err := e.d.FinishStream(e.ctx, "s1", &old, c.rows, e.clock.Now()); !errors.Is(err, journal.ErrLeaseLost) {
			t.Fatalf("stale fence %s err = %v", c.name, err)
		}
		if st, got, _ := e.d.ReadStream(e.ctx, "s1", 0, 10); st.FinishedAt != nil || len(got) != 1 {
			t.Fatalf("a stale finish %s changed the stream: %+v, %d rows", c.name, st, len(got))
		}
	}
	cur := r2.Fence()
	last, err := e.d.FinishStream(e.ctx, "s1", &cur, rows(2), e.clock.Now())
	if err != nil || last != 2 {
		t.Fatalf("finish under the current lease: last %d, err %v", last, err)
	}
	// Without rows or fence the finish is not fenced: retention ends streams so.
	e.stream(a, "s2", r.ID)
	if _, err := e.d.FinishStream(e.ctx, "s2", nil, nil, e.clock.Now()); err != nil {
		t.Fatalf("unfenced finish of a durable stream: %v", err)
	}
}

// eventsAppendReadLastSeq is the case "Events/AppendReadLastSeq": append read last seq.
func eventsAppendReadLastSeq(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	last, err := j.LastSeq(e.ctx, "s1")
	must(t, "LastSeq", err)
	if last != 0 {
		t.Fatalf("empty LastSeq = %d", last)
	}
	must(t, "Append", j.AppendEvents(e.ctx, "s1", nil, rows(1, 2, 3)...))
	got, err := j.ReadEvents(e.ctx, "s1", 1, 1)
	must(t, "ReadEvents", err)
	if len(got) != 1 || got[0].Seq != 2 || !jsonEq(got[0].Event, rows(2)[0].Event) {
		t.Fatalf("ReadEvents(after 1, limit 1) = %+v", got)
	}
	if last, _ = j.LastSeq(e.ctx, "s1"); last != 3 {
		t.Fatalf("LastSeq = %d", last)
	}
	for _, c := range []struct {
		seqs []int64
		want error
	}{{[]int64{3}, journal.ErrSeqExists}, {[]int64{1}, journal.ErrSeqExists}, {[]int64{5}, journal.ErrSeqGap}, {[]int64{4, 4}, journal.ErrSeqExists}, {[]int64{4, 6}, journal.ErrSeqGap}} {
		if err := j.AppendEvents(e.ctx, "s1", nil, rows(c.seqs...)...); !errors.Is(err, c.want) {
			t.Fatalf("append %v err = %v, want %v", c.seqs, err, c.want)
		}
	}
	seqs, _ := e.seqs(j, "s1")
	if len(seqs) != 3 {
		t.Fatalf("a failed batch stored rows: %v", seqs)
	}
	if err := j.AppendEvents(e.ctx, "nope", nil, rows(1)...); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("append to unknown stream err = %v", err)
	}
}

// eventsStoredRowsDoNotShareTheCallersBytes is the case "Events/StoredRowsDoNotShareTheCallersBytes": stored rows do not share the callers bytes.
func eventsStoredRowsDoNotShareTheCallersBytes(t *testing.T, e *env) {
	e.stream(e.journal("a"), "s1", "")
	// The rows of each write are cut from one buffer, as a log writer's may be;
	// overwriting it after the write, or the bytes a read returned, changes nothing
	// stored.
	buf := []byte(`{"type":"STEP_STARTED","stepName":"a"}{"type":"STEP_STARTED","stepName":"b"}`)
	half := len(buf) / 2
	batch := func(first int64) []journal.EventRow {
		return []journal.EventRow{{Seq: first, Event: buf[:half]}, {Seq: first + 1, Event: buf[half:]}}
	}
	want := string(buf)
	must(t, "AppendEvents", e.d.AppendEvents(e.ctx, nil, journal.Append{StreamID: "s1", Rows: batch(1)}))
	clear(buf)
	copy(buf, want)
	_, err := e.d.FinishStream(e.ctx, "s1", nil, batch(3), e.clock.Now())
	must(t, "FinishStream", err)
	clear(buf)
	got, err := e.d.ReadEvents(e.ctx, "s1", 0, 10)
	must(t, "ReadEvents", err)
	clear(got[0].Event)
	got, err = e.d.ReadEvents(e.ctx, "s1", 0, 10)
	must(t, "ReadEvents", err)
	if len(got) != 4 {
		t.Fatalf("%d rows stored, want 4", len(got))
	}
	for _, r := range got {
		if string(r.Event) != want[:half] && string(r.Event) != want[half:] {
			t.Fatalf("row %d reads %q after the caller reused its bytes", r.Seq, r.Event)
		}
	}
}

// eventsReadStream is the case "Events/ReadStream": read stream.
func eventsReadStream(t *testing.T, e *env) {
	j := e.journal("a")
	if _, _, err := j.ReadStream(e.ctx, "nope", 0, 10); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ReadStream unknown err = %v", err)
	}
	e.stream(j, "s1", "")
	st, got, err := j.ReadStream(e.ctx, "s1", 0, 10)
	must(t, "ReadStream", err)
	want, _ := j.GetStream(e.ctx, "s1")
	if len(got) != 0 || st.ID != "s1" || st.Flow != want.Flow || st.PrincipalID != "u1" || st.Tenant != "t1" || !st.CreatedAt.Equal(want.CreatedAt) || st.FinishedAt != nil {
		t.Fatalf("empty stream: %+v, rows %+v", st, got)
	}
	must(t, "Append", j.AppendEvents(e.ctx, "s1", nil, rows(1, 2, 3, 4, 5)...))
	_, got, err = j.ReadStream(e.ctx, "s1", 1, 2)
	must(t, "ReadStream", err)
	if len(got) != 2 || got[0].Seq != 2 || got[1].Seq != 3 || !jsonEq(got[1].Event, rows(3)[0].Event) {
		t.Fatalf("ReadStream(after 1, limit 2) = %+v", got)
	}
	if _, got, _ = j.ReadStream(e.ctx, "s1", 5, 2); len(got) != 0 {
		t.Fatalf("ReadStream after the last row = %+v", got)
	}
	e.clock.Advance(time.Minute)
	must(t, "FinishStream", j.FinishStream(e.ctx, "s1"))
	st, got, _ = j.ReadStream(e.ctx, "s1", 3, 10)
	if st.FinishedAt == nil || !st.FinishedAt.Equal(e.clock.Now()) || len(got) != 2 || got[0].Seq != 4 {
		t.Fatalf("finished stream: %+v, rows %+v", st, got)
	}
}

// eventsReadStreamSeesEveryRowOnceFinished is the case "Events/ReadStreamSeesEveryRowOnceFinished": read stream sees every row once finished.
func eventsReadStreamSeesEveryRowOnceFinished(t *testing.T, e *env) {
	// A follower stops at the first read that shows the stream finished with a
	// short batch: that read must already hold every row committed before the
	// finish, however the writer's commits interleave with it.
	j := e.journal("a")
	e.stream(j, "s1", "")
	const batches, each = 40, 3
	written := make(chan struct{})
	defer func() { <-written }() // no t.Errorf after the test returns
	go func() {
		defer close(written)
		for b := range batches {
			seqs := make([]int64, each)
			for i := range seqs {
				seqs[i] = int64(b*each + i + 1)
			}
			if err := j.AppendEvents(e.ctx, "s1", nil, rows(seqs...)...); err != nil {
				t.Errorf("Append: %v", err)
				return
			}
		}
		if err := j.FinishStream(e.ctx, "s1"); err != nil {
			t.Errorf("FinishStream: %v", err)
		}
	}()
	var after int64
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, got, err := j.ReadStream(e.ctx, "s1", after, 7)
		must(t, "ReadStream", err)
		for _, r := range got {
			if r.Seq != after+1 {
				t.Fatalf("row %d after %d: gap or duplicate", r.Seq, after)
			}
			after = r.Seq
		}
		if st.FinishedAt != nil && len(got) < 7 {
			if after != batches*each {
				t.Fatalf("stream seen finished after row %d of %d", after, batches*each)
			}
			return
		}
	}
	t.Fatalf("the stream did not finish within 30s (read up to %d)", after)
}

// eventsConcurrentAppendersStayGapFree is the case "Events/ConcurrentAppendersStayGapFree": concurrent appenders stay gap free.
func eventsConcurrentAppendersStayGapFree(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	const writers, each = 6, 25
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				last, err := j.LastSeq(e.ctx, "s1")
				if err != nil {
					t.Errorf("LastSeq: %v", err)
					return
				}
				err = j.AppendEvents(e.ctx, "s1", nil, rows(last+1)...)
				switch {
				case err == nil:
					done++
				case errors.Is(err, journal.ErrSeqExists), errors.Is(err, journal.ErrSeqGap):
				default:
					t.Errorf("Append: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	seqs, _ := e.seqs(j, "s1")
	if len(seqs) != writers*each {
		t.Fatalf("%d rows, want %d", len(seqs), writers*each)
	}
	checkGapFree(t, seqs)
}

// eventsAppendBatchFailsOnlyTheAppendsThatFail is the case "Events/AppendBatchFailsOnlyTheAppendsThatFail": append batch fails only the appends that fail.
func eventsAppendBatchFailsOnlyTheAppendsThatFail(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	kept, lost := e.begin(a), e.begin(a)
	e.stream(a, "plain", "")
	e.stream(a, "kept", kept.ID)
	e.stream(a, "lost", lost.ID)
	e.stream(a, "behind", "")
	e.stream(a, "twice", "")
	must(t, "Append", e.d.AppendEvents(e.ctx, nil, journal.Append{StreamID: "behind", Rows: rows(1, 2)}))
	keptF, lostF := kept.Fence(), lost.Fence()
	e.clock.Advance(leaseTTL)
	must(t, "RenewLease", e.d.RenewLease(e.ctx, keptF, e.clock.Now().Add(leaseTTL)))
	_, err := b.Claim(e.ctx, lost.ID) // another instance takes one run over
	must(t, "Claim", err)
	sub, stop := e.d.Subscribe("plain")
	defer stop()
	batch := []journal.FencedAppend{
		{Append: journal.Append{StreamID: "plain", Rows: rows(1, 2), Reserve: 10}},
		{Fence: &keptF, Append: journal.Append{StreamID: "kept", Rows: rows(1), Reserve: 5}},
		{Fence: &lostF, Append: journal.Append{StreamID: "lost", Rows: rows(1), Reserve: 5}},
		{Append: journal.Append{StreamID: "behind", Rows: rows(2), Reserve: 7}},
		{Append: journal.Append{StreamID: "gap", Rows: rows(1)}},
		{Append: journal.Append{StreamID: "twice", Rows: rows(1)}},
		{Append: journal.Append{StreamID: "twice", Rows: rows(2, 3), Reserve: 4}},
		{Append: journal.Append{StreamID: "kept", Rows: rows(3)}},
		{Append: journal.Append{StreamID: "plain", Rows: nil, Reserve: 0}},
	}
	errs := e.d.AppendBatch(e.ctx, batch)
	want := []error{nil, nil, journal.ErrLeaseLost, journal.ErrSeqExists, journal.ErrNotFound, nil, nil, journal.ErrLeaseLost, nil}
	if len(errs) != len(want) {
		t.Fatalf("%d errors for %d appends", len(errs), len(batch))
	}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil) != (errs[i] == nil) {
			t.Errorf("append %d (%s): err = %v, want %v", i, batch[i].StreamID, errs[i], want[i])
		}
	}
	for _, c := range []struct {
		id       string
		last     int64
		reserved int64
	}{{"plain", 2, 0}, {"kept", 1, 5}, {"lost", 0, 0}, {"behind", 2, 0}, {"twice", 3, 4}} {
		st, got, err := e.d.ReadStream(e.ctx, c.id, 0, 10)
		must(t, "ReadStream", err)
		seqs := seqsOf(got)
		checkGapFree(t, seqs)
		if int64(len(seqs)) != c.last || st.Reserved != c.reserved {
			t.Errorf("stream %s after the batch: seqs %v, reservation %d; want %d rows, reservation %d", c.id, seqs, st.Reserved, c.last, c.reserved)
		}
	}
	select {
	case <-sub:
	case <-time.After(5 * time.Second):
		t.Fatal("a subscriber of a stream the batch stored rows of was not woken")
	}
	if errs := e.d.AppendBatch(e.ctx, nil); len(errs) != 0 {
		t.Fatalf("an empty batch: %v", errs)
	}
}

// eventsAppendBatchOfManyStreams is the case "Events/AppendBatchOfManyStreams": append batch of many streams.
func eventsAppendBatchOfManyStreams(t *testing.T, e *env) {
	j := e.journal("a")
	const n = 520 // past one statement's bound of ids (500) and of rows (200)
	batch := make([]journal.FencedAppend, n)
	for i := range batch {
		id := fmt.Sprintf("s-%04d", i)
		e.stream(j, id, "")
		batch[i] = journal.FencedAppend{Append: journal.Append{StreamID: id, Rows: rows(1), Reserve: int64(1 + i%3)}}
	}
	for i, err := range e.d.AppendBatch(e.ctx, batch) {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	for i := 0; i < n; i += 37 {
		st, got, err := e.d.ReadStream(e.ctx, batch[i].StreamID, 0, 10)
		must(t, "ReadStream", err)
		if len(got) != 1 || got[0].Seq != 1 || st.Reserved != int64(1+i%3) {
			t.Fatalf("stream %s: rows %v, reservation %d", st.ID, seqsOf(got), st.Reserved)
		}
	}
}

// eventsAppendBatchCreatesAndEndsStreams is the case "Events/AppendBatchCreatesAndEndsStreams":
// a batch creates streams (recording a thread's run) and ends streams with their last
// rows, each append on its own: a stream that exists, or an end without the run's lease,
// fails alone.
func eventsAppendBatchCreatesAndEndsStreams(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	kept, lost := e.begin(a), e.begin(a)
	e.stream(a, "exists", "")
	e.stream(a, "ending", "")
	e.stream(a, "kept", kept.ID)
	e.stream(a, "lost", lost.ID)
	must(t, "Append", e.d.AppendEvents(e.ctx, nil, journal.Append{StreamID: "ending", Rows: rows(1), Reserve: 9}))
	keptF, lostF := kept.Fence(), lost.Fence()
	e.clock.Advance(leaseTTL)
	must(t, "RenewLease", e.d.RenewLease(e.ctx, keptF, e.clock.Now().Add(leaseTTL)))
	_, err := b.Claim(e.ctx, lost.ID)
	must(t, "Claim", err)
	ended, stopEnded := e.d.Subscribe("ending")
	defer stopEnded()
	thread, stopThread := e.d.Subscribe(journal.ThreadTopic("conv"))
	defer stopThread()

	now := e.clock.Now()
	open := func(id, threadID string) *journal.Stream {
		return &journal.Stream{ID: id, Flow: "f", PrincipalID: "u2", Tenant: "t2", CreatedAt: now, Reserved: 20, ThreadID: threadID}
	}
	batch := []journal.FencedAppend{
		{Append: journal.Append{StreamID: "new", Reserve: 20}, Open: open("new", "conv")},
		{Append: journal.Append{StreamID: "exists", Reserve: 20}, Open: open("exists", "")},
		{Append: journal.Append{StreamID: "ending", Rows: rows(10, 11), Reserve: 30}, Finish: now},
		{Fence: &keptF, Append: journal.Append{StreamID: "kept", Rows: rows(1)}, Finish: now},
		{Fence: &lostF, Append: journal.Append{StreamID: "lost", Rows: rows(1)}, Finish: now},
		{Append: journal.Append{StreamID: "missing", Rows: rows(1)}, Finish: now},
	}
	errs := e.d.AppendBatch(e.ctx, batch)
	want := []error{nil, journal.ErrConflict, nil, nil, journal.ErrLeaseLost, journal.ErrNotFound}
	if len(errs) != len(want) {
		t.Fatalf("%d errors for %d appends", len(errs), len(batch))
	}
	for i := range want {
		if !errors.Is(errs[i], want[i]) || (want[i] == nil) != (errs[i] == nil) {
			t.Errorf("append %d (%s): err = %v, want %v", i, batch[i].StreamID, errs[i], want[i])
		}
	}
	st, got, err := e.d.ReadStream(e.ctx, "new", 0, 10)
	must(t, "ReadStream new", err)
	if st.Flow != "f" || st.PrincipalID != "u2" || st.Tenant != "t2" || st.Reserved != 20 || st.FinishedAt != nil || len(got) != 0 {
		t.Errorf("created stream = %+v with %d rows", st, len(got))
	}
	runs, err := e.d.ThreadRuns(e.ctx, "conv", 0, 10)
	must(t, "ThreadRuns", err)
	if len(runs) != 1 || runs[0].StreamID != "new" || runs[0].Pos != 1 {
		t.Errorf("thread conv: %+v, want the created stream as its first run", runs)
	}
	if st, err := e.d.GetStream(e.ctx, "exists"); err != nil || st.PrincipalID != "u1" {
		t.Errorf("the stream that existed: %+v, %v; want it as it was", st, err)
	}
	for _, c := range []struct {
		id       string
		seqs     []int64
		finished bool
		reserved int64
	}{{"ending", []int64{1, 10, 11}, true, 9}, {"kept", []int64{1}, true, 0}, {"lost", nil, false, 0}} {
		st, got, err := e.d.ReadStream(e.ctx, c.id, 0, 10)
		must(t, "ReadStream "+c.id, err)
		if !slices.Equal(seqsOf(got), c.seqs) || (st.FinishedAt != nil) != c.finished || st.Reserved != c.reserved {
			t.Errorf("stream %s after the batch: seqs %v, finished %v, reservation %d; want %v, %v, %d",
				c.id, seqsOf(got), st.FinishedAt != nil, st.Reserved, c.seqs, c.finished, c.reserved)
		}
	}
	for name, ch := range map[string]<-chan struct{}{"the ended stream": ended, "the thread": thread} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("a subscriber of %s was not woken", name)
		}
	}
}

// eventsDurableStreamAppendsAreFenced is the case "Events/DurableStreamAppendsAreFenced": durable stream appends are fenced.
func eventsDurableStreamAppendsAreFenced(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.stream(a, "s1", r.ID)
	if err := a.AppendEvents(e.ctx, "s1", nil, rows(1)...); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("unfenced append to a durable stream err = %v", err)
	}
	must(t, "fenced append", a.AppendEvents(e.ctx, "s1", r, rows(1)...))
	e.clock.Advance(leaseTTL)
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	if err := a.AppendEvents(e.ctx, "s1", r, rows(2)...); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale append err = %v", err)
	}
	must(t, "new owner append", b.AppendEvents(e.ctx, "s1", r2, rows(2)...))
	seqs, _ := e.seqs(a, "s1")
	checkGapFree(t, seqs)
	if len(seqs) != 2 {
		t.Fatalf("seqs = %v", seqs)
	}
}
