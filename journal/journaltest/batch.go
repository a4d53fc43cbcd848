package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// batchSpy records the batches of appends that reach the driver and what each append
// got. The first batch with rows waits in the driver until gate is closed, so that the
// log writers' next commits gather behind it into one batch.
type batchSpy struct {
	journal.Driver
	entered, gate chan struct{}
	once          sync.Once

	mu      sync.Mutex
	batches []map[string]error // stream id → its append's error
	opens   []int              // per batch: the appends that create their stream
	ends    []int              // per batch: the appends that end their stream
}

func (s *batchSpy) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	if slices.ContainsFunc(batch, func(a journal.FencedAppend) bool { return len(a.Rows) > 0 }) {
		s.once.Do(func() {
			close(s.entered)
			<-s.gate
		})
	}
	errs := s.Driver.AppendBatch(ctx, batch)
	got := make(map[string]error, len(batch))
	opens, ends := 0, 0
	for i, a := range batch {
		got[a.StreamID] = errs[i]
		if a.Open != nil {
			opens++
		}
		if !a.Finish.IsZero() {
			ends++
		}
	}
	s.mu.Lock()
	s.batches = append(s.batches, got)
	s.opens = append(s.opens, opens)
	s.ends = append(s.ends, ends)
	s.mu.Unlock()
	return errs
}

// batchWith returns the first recorded batch holding every one of ids.
func (s *batchSpy) batchWith(ids ...string) (map[string]error, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for _, b := range s.batches {
		for _, id := range ids {
			if _, ok := b[id]; !ok {
				continue next
			}
		}
		return b, true
	}
	return nil, false
}

func batchCases() []testCase {
	return []testCase{
		{"LogWriter/StreamsShareTheirCommits", logWriterStreamsShareTheirCommits},
		{"LogWriter/ALostLeaseFailsOnlyItsOwnRowsInTheBatch", logWriterALostLeaseFailsOnlyItsOwnRowsInTheBatch},
		{"LogWriter/StreamsStartAndEndInTheBatch", logWriterStreamsStartAndEndInTheBatch},
	}
}

// logWriterStreamsStartAndEndInTheBatch is the case "LogWriter/StreamsStartAndEndInTheBatch":
// on a journal whose writes are commits, streams created and ended while a batch is
// being stored are created, and ended with their last rows, together in the next one;
// followers then read each ended stream whole from the tail. A journal on storage that
// commits nothing creates and ends each stream on its own.
func logWriterStreamsStartAndEndInTheBatch(t *testing.T, e *env) {
	spy := &batchSpy{Driver: e.d, entered: make(chan struct{}), gate: make(chan struct{})}
	j := e.journalOn(spy, "a")
	grouped := e.d.Capabilities().Has(journal.CapDurable)
	// The row of "first" is held in the driver.
	w := e.openLog(j, "first", journal.LogOptions{FlushInterval: time.Millisecond, CommitInterval: time.Millisecond})
	write(t, e, w, `{"type":"STEP_STARTED","stepName":"first"}`)
	<-spy.entered
	const n = 12
	ws := make([]*journal.LogWriter, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() {
			ws[i], errs[i] = j.CreateLog(e.ctx, journal.Stream{ID: fmt.Sprintf("s%d", i), Flow: "f"}, nil, quiet)
		})
	}
	time.Sleep(100 * time.Millisecond) // every creation waits for the held batch
	close(spy.gate)
	wg.Wait()
	for i, w := range ws {
		must(t, "CreateLog", errs[i])
		write(t, e, w, `{"type":"STEP_STARTED","stepName":"s"}`)
	}
	for i, w := range ws {
		wg.Go(func() { _, errs[i] = w.WriteEnd(e.ctx, "RUN_FINISHED", json.RawMessage(`{"type":"RUN_FINISHED"}`)) })
	}
	wg.Wait()
	for _, err := range errs {
		must(t, "WriteEnd", err)
	}
	spy.mu.Lock()
	opens, ends := slices.Max(append(spy.opens, 0)), slices.Max(append(spy.ends, 0))
	spy.mu.Unlock()
	t.Logf("at most %d creations and %d ends in one batch", opens, ends)
	switch {
	case grouped && opens < 2:
		t.Errorf("no batch created more than %d stream: the creations did not share a commit", opens)
	case grouped && ends < 1:
		t.Error("no stream was ended in a batch")
	case !grouped && opens+ends > 0:
		t.Errorf("storage without commits: %d creations and %d ends went through the batch", opens, ends)
	}
	for i := range ws {
		id := fmt.Sprintf("s%d", i)
		st, got, err := j.ReadStream(e.ctx, id, 0, 10)
		must(t, "ReadStream", err)
		if st.FinishedAt == nil || !slices.Equal(seqsOf(got), []int64{1, 2}) {
			t.Fatalf("stream %s: finished %v, seqs %v; want finished with 1, 2", id, st.FinishedAt != nil, seqsOf(got))
		}
	}
}

// logWriterStreamsShareTheirCommits is the case "LogWriter/StreamsShareTheirCommits": streams share their commits.
func logWriterStreamsShareTheirCommits(t *testing.T, e *env) {
	spy := &batchSpy{Driver: e.d, entered: make(chan struct{}), gate: make(chan struct{})}
	close(spy.gate)
	j := e.journalOn(spy, "a")
	opts := journal.LogOptions{FlushInterval: 5 * time.Millisecond, CommitInterval: 20 * time.Millisecond}
	const streams = 20
	ws := make([]*journal.LogWriter, streams)
	for i := range ws {
		ws[i] = e.openLog(j, fmt.Sprintf("s%d", i), opts)
	}
	// Every stream writes a token each 2 ms for half a second: each has rows to
	// commit in every window.
	for range 250 {
		for _, w := range ws {
			if _, err := w.WriteDelta(e.ctx, "TEXT_MESSAGE_CONTENT", "m1", "tok "); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, w := range ws {
		must(t, "Close", w.Close(e.ctx))
	}
	spy.mu.Lock()
	batches, appends := len(spy.batches), 0
	for _, b := range spy.batches {
		appends += len(b)
	}
	spy.mu.Unlock()
	t.Logf("%d appends in %d batches", appends, batches)
	if batches == 0 || appends < 2*batches {
		t.Fatalf("%d appends in %d batches: the streams did not share their commits", appends, batches)
	}
	var text strings.Builder
	for _, r := range e.storedEvents("s7") {
		var ev struct{ Delta string }
		must(t, "decode", json.Unmarshal(r.Event, &ev))
		text.WriteString(ev.Delta)
	}
	if want := strings.Repeat("tok ", 250); text.String() != want {
		t.Fatalf("stream s7 stored %d bytes of text, want %d", text.Len(), len(want))
	}
}

// logWriterALostLeaseFailsOnlyItsOwnRowsInTheBatch is the case "LogWriter/ALostLeaseFailsOnlyItsOwnRowsInTheBatch": a lost lease fails only its own rows in the batch.
func logWriterALostLeaseFailsOnlyItsOwnRowsInTheBatch(t *testing.T, e *env) {
	spy := &batchSpy{Driver: e.d, entered: make(chan struct{}), gate: make(chan struct{})}
	a, b := e.journalOn(spy, "a"), e.journal("b")
	opts := journal.LogOptions{FlushInterval: time.Millisecond, CommitInterval: 5 * time.Millisecond}
	lost, kept := e.begin(a), e.begin(a)
	first := e.openLog(a, "first", opts)
	wl, err := a.CreateLog(e.ctx, journal.Stream{ID: "lost", RunID: lost.ID}, lost, opts)
	must(t, "CreateLog", err)
	wk, err := a.CreateLog(e.ctx, journal.Stream{ID: "kept", RunID: kept.ID}, kept, opts)
	must(t, "CreateLog", err)
	wp := e.openLog(a, "plain", opts)

	// The first stream's commit holds the batch in the driver...
	write(t, e, first, `{"type":"STEP_STARTED","stepName":"first"}`)
	<-spy.entered
	// ...while another instance takes one run over, and three streams write.
	keptF := kept.Fence()
	e.clock.Advance(leaseTTL)
	must(t, "RenewLease", e.d.RenewLease(e.ctx, keptF, e.clock.Now().Add(leaseTTL)))
	_, err = b.Claim(e.ctx, lost.ID)
	must(t, "Claim", err)
	for _, w := range []*journal.LogWriter{wl, wk, wp} {
		if seq := write(t, e, w, `{"type":"STEP_STARTED","stepName":"s"}`); seq != 1 {
			t.Fatalf("stream %s: first seq %d", w.StreamID(), seq)
		}
		write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi"}`)
	}
	time.Sleep(300 * time.Millisecond) // their timers hand the rows to the held batch
	close(spy.gate)

	var got map[string]error
	within(t, "the batch of the three streams", func() {
		for {
			var ok bool
			if got, ok = spy.batchWith("lost", "kept", "plain"); ok {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	if !errors.Is(got["lost"], journal.ErrLeaseLost) || got["kept"] != nil || got["plain"] != nil {
		t.Fatalf("outcomes in the batch: %v; want a lost lease for the stream taken over only", got)
	}
	must(t, "Flush kept", wk.Flush(e.ctx))
	must(t, "Flush plain", wp.Flush(e.ctx))
	for id, n := range map[string]int{"lost": 0, "kept": 2, "plain": 2} {
		if rows := e.storedEvents(id); len(rows) != n {
			t.Errorf("stream %s: %d rows stored, want %d", id, len(rows), n)
		}
	}
	if err := wl.Flush(e.ctx); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("the writer whose run was taken over: Flush err = %v, want a lost lease", err)
	}
	for _, w := range []*journal.LogWriter{first, wk, wp} {
		if seq := write(t, e, w, `{"type":"STEP_FINISHED","stepName":"s"}`); seq == 0 {
			t.Fatalf("stream %s: no seq", w.StreamID())
		}
		must(t, "Close "+w.StreamID(), w.Close(e.ctx))
	}
	if rows := e.storedEvents("kept"); len(rows) != 3 {
		t.Fatalf("kept: %d rows after its close, want 3", len(rows))
	}
}
