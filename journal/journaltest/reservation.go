package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// reserved reads a stream's stored reservation and last seq from the driver, through
// both GetStream and ReadStream, which must agree.
func (e *env) reserved(id string) (reserved, last int64) {
	e.t.Helper()
	st, err := e.d.GetStream(e.ctx, id)
	must(e.t, "GetStream", err)
	st2, rs, err := e.d.ReadStream(e.ctx, id, 0, 100000)
	must(e.t, "ReadStream", err)
	if st2.Reserved != st.Reserved {
		e.t.Fatalf("stream %s: GetStream says reserved %d, ReadStream %d", id, st.Reserved, st2.Reserved)
	}
	last, err = e.d.LastSeq(e.ctx, id)
	must(e.t, "LastSeq", err)
	if n := len(rs); n > 0 && rs[n-1].Seq != last || n == 0 && last != 0 {
		e.t.Fatalf("stream %s: LastSeq %d, rows %v", id, last, seqsOf(rs))
	}
	return st.Reserved, last
}

// wantReserved fails the case unless stream id stores reservation res after last row last.
func (e *env) wantReserved(id string, res, last int64) {
	e.t.Helper()
	if gr, gl := e.reserved(id); gr != res || gl != last {
		e.t.Fatalf("stream %s: reserved %d after row %d, want %d after %d", id, gr, gl, res, last)
	}
}

// appendRows is a driver append of rows with seqs and a reservation, unfenced.
func (e *env) appendRows(id string, reserve int64, seqs ...int64) error {
	return e.d.AppendEvents(e.ctx, nil, journal.Append{StreamID: id, Rows: rows(seqs...), Reserve: reserve})
}

// stepAt is a step record of run at pos.
func (e *env) stepAt(runID string, pos int, result string) journal.StepRecord {
	return journal.StepRecord{RunID: runID, Position: pos, Name: fmt.Sprintf("s%d", pos), Result: json.RawMessage(result), CreatedAt: e.clock.Now()}
}

// seqLog remembers, per stream, the event every Write returned a seq for, and checks the
// stored rows against it: a seq once handed out is stored with its event or not at all.
type seqLog map[int64]string

// note records that seq was returned for ev; a seq returned twice fails the case.
func (l seqLog) note(t *testing.T, seq int64, ev string) {
	t.Helper()
	if old, ok := l[seq]; ok {
		t.Fatalf("seq %d handed out for %s, and again for %s", seq, old, ev)
	}
	l[seq] = ev
}

// check fails the case when a stored row at a handed-out seq is another event.
func (l seqLog) check(t *testing.T, stored []journal.EventRow) {
	t.Helper()
	for i, r := range stored {
		if i > 0 && r.Seq <= stored[i-1].Seq {
			t.Fatalf("stored seqs do not increase: %v", seqsOf(stored))
		}
		if ev, ok := l[r.Seq]; ok && !jsonEq(r.Event, []byte(ev)) {
			t.Fatalf("seq %d was handed out for %s but names %s", r.Seq, ev, r.Event)
		}
	}
}

func reservationCases() []testCase {
	return []testCase{
		{"StepWrites/AppendsAreStoredWithTheStep", stepWritesAppendsAreStoredWithTheStep},
		{"StepWrites/AFailingAppendStoresNothing", stepWritesAFailingAppendStoresNothing},
		{"StepWrites/StaleFenceStoresNoRows", stepWritesStaleFenceStoresNoRows},
		{"StepWrites/AWriterOfAPlainStreamDoesNotFailTheRunsSteps", stepWritesAWriterOfAPlainStreamDoesNotFailTheRunsSteps},
		{"Reservation/AppendMayContinuePastTheReservationOnly", reservationAppendMayContinuePastTheReservationOnly},
		{"Reservation/CreateStreamStoresIt", reservationCreateStreamStoresIt},
		{"Reservation/FinishStreamKeepsIt", reservationFinishStreamKeepsIt},
		{"Reservation/CloseStreamLandsPastIt", reservationCloseStreamLandsPastIt},
		{"Reservation/AbandonedWritersSeqsAreNeverReused", reservationAbandonedWritersSeqsAreNeverReused},
		{"Reservation/AWriterPastADeadOnesReservationMayFlushBeforeItsFirstRow", reservationAWriterPastADeadOnesReservationMayFlushBeforeItsFirstRow},
		{"Reservation/ALogOpenedByAStepStoresItsFirstEventBeforeItsSeq", reservationALogOpenedByAStepStoresItsFirstEventBeforeItsSeq},
		{"Reservation/ClosedWriterIsContinuedContiguously", reservationClosedWriterIsContinuedContiguously},
		{"Reservation/NoSeqIsReturnedPastTheStoredReservation", reservationNoSeqIsReturnedPastTheStoredReservation},
		{"Reservation/StepsCommitTheRowsQueuedBeforeThem", reservationStepsCommitTheRowsQueuedBeforeThem},
		{"Reservation/IsRaisedInSteps", reservationIsRaisedInSteps},
		{"Reservation/AStepThatLosesTheLeaseStoresNoRows", reservationAStepThatLosesTheLeaseStoresNoRows},
	}
}

// stepWritesAppendsAreStoredWithTheStep is the case "StepWrites/AppendsAreStoredWithTheStep": appends are stored with the step.
func stepWritesAppendsAreStoredWithTheStep(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	e.stream(j, "s1", r.ID)
	e.stream(j, "s2", r.ID)
	f := r.Fence()
	must(t, "Append", e.d.AppendEvents(e.ctx, &f, journal.Append{StreamID: "s2", Rows: rows(1), Reserve: 5}))
	ch1, cancel1 := e.d.Subscribe("s1")
	defer cancel1()
	ch2, cancel2 := e.d.Subscribe("s2")
	defer cancel2()
	// One write: the step, a stream it opens, rows of two streams (s2 continuing
	// past its reservation), and their reservations.
	must(t, "InsertStep", e.d.InsertStep(e.ctx, f, e.stepAt(r.ID, 0, `"x"`), journal.StepWrites{
		Opens: []journal.Stream{{ID: "s3", RunID: r.ID, CreatedAt: e.clock.Now(), Reserved: 4}},
		Appends: []journal.Append{
			{StreamID: "s1", Rows: rows(1, 2), Reserve: 66},
			{StreamID: "s2", Rows: rows(6), Reserve: 6},
		},
	}))
	e.onlyStep(t, r.ID, `"x"`)
	e.wantReserved("s1", 66, 2)
	e.wantReserved("s2", 6, 6)
	e.wantReserved("s3", 4, 0)
	if got := e.storedEvents("s1"); len(got) != 2 || !jsonEq(got[1].Event, rows(2)[0].Event) {
		t.Fatalf("s1 rows = %+v", got)
	}
	if got := seqsOf(e.storedEvents("s2")); len(got) != 2 || got[1] != 6 {
		t.Fatalf("s2 seqs = %v, want 1 and 6", got)
	}
	woken(t, ch1, "a step's append to s1")
	woken(t, ch2, "a step's append to s2")
}

// stepWritesAFailingAppendStoresNothing is the case "StepWrites/AFailingAppendStoresNothing": a failing append stores nothing.
func stepWritesAFailingAppendStoresNothing(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	other := e.begin(j)
	e.stream(j, "s1", r.ID)
	e.stream(j, "ok", r.ID)
	e.stream(j, "foreign", other.ID)
	f := r.Fence()
	must(t, "Append", e.d.AppendEvents(e.ctx, &f, journal.Append{StreamID: "s1", Rows: rows(1, 2), Reserve: 9}))
	for i, c := range []struct {
		name string
		a    journal.Append
		want error
	}{
		{"a gap", journal.Append{StreamID: "s1", Rows: rows(4), Reserve: 20}, journal.ErrSeqGap},
		{"a gap below the reservation", journal.Append{StreamID: "s1", Rows: rows(5), Reserve: 20}, journal.ErrSeqGap},
		{"a stored seq", journal.Append{StreamID: "s1", Rows: rows(2, 3), Reserve: 20}, journal.ErrSeqExists},
		{"another run's stream", journal.Append{StreamID: "foreign", Rows: rows(1), Reserve: 20}, journal.ErrLeaseLost},
		{"an unknown stream", journal.Append{StreamID: "nope", Rows: rows(1), Reserve: 20}, journal.ErrNotFound},
	} {
		fresh := fmt.Sprintf("fresh-%d", i)
		err := e.d.InsertStep(e.ctx, f, e.stepAt(r.ID, 0, `"x"`), journal.StepWrites{
			Opens:   []journal.Stream{{ID: fresh, RunID: r.ID, CreatedAt: e.clock.Now()}},
			Appends: []journal.Append{{StreamID: "ok", Rows: rows(1), Reserve: 7}, c.a},
		})
		if !errors.Is(err, c.want) {
			t.Fatalf("append with %s: err = %v, want %v", c.name, err, c.want)
		}
		if steps, _ := e.d.LoadSteps(e.ctx, r.ID); len(steps) != 0 {
			t.Fatalf("append with %s: the step was stored: %+v", c.name, steps)
		}
		if _, err := e.d.GetStream(e.ctx, fresh); !errors.Is(err, journal.ErrNotFound) {
			t.Fatalf("append with %s: the opened stream was created (err %v)", c.name, err)
		}
		e.wantReserved("s1", 9, 2)
		e.wantReserved("ok", 0, 0)
		e.wantReserved("foreign", 0, 0)
	}
	// The same write without the bad append goes through.
	must(t, "InsertStep", e.d.InsertStep(e.ctx, f, e.stepAt(r.ID, 0, `"x"`), journal.StepWrites{
		Appends: []journal.Append{{StreamID: "ok", Rows: rows(1), Reserve: 7}, {StreamID: "s1", Rows: rows(10), Reserve: 10}},
	}))
	e.wantReserved("ok", 7, 1)
	e.wantReserved("s1", 10, 10)
}

// stepWritesStaleFenceStoresNoRows is the case "StepWrites/StaleFenceStoresNoRows": stale fence stores no rows.
func stepWritesStaleFenceStoresNoRows(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.stream(a, "s1", r.ID)
	old := r.Fence()
	e.clock.Advance(leaseTTL)
	_, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	err = e.d.InsertStep(e.ctx, old, e.stepAt(r.ID, 0, `1`), journal.StepWrites{Appends: []journal.Append{{StreamID: "s1", Rows: rows(1), Reserve: 5}}})
	if !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale fence err = %v", err)
	}
	e.wantReserved("s1", 0, 0)
}

// stepWritesAWriterOfAPlainStreamDoesNotFailTheRunsSteps is the case "StepWrites/AWriterOfAPlainStreamDoesNotFailTheRunsSteps": a writer of a plain stream does not fail the runs steps.
func stepWritesAWriterOfAPlainStreamDoesNotFailTheRunsSteps(t *testing.T, e *env) {
	// A plain stream (no run) may be written under a run: the writer is then tied
	// to the run and its queued rows go with the run's next step.
	j := e.journal("a")
	r := e.begin(j)
	e.stream(j, "plain", "")
	w, err := j.NewLogWriter(e.ctx, "plain", r, quiet)
	must(t, "NewLogWriter", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`)
	_, err = r.Step(e.ctx, "s", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	must(t, "Step with a plain stream's writer", err)
	must(t, "Close", w.Close(e.ctx))
	if got := e.storedEvents("plain"); len(got) != 2 {
		t.Fatalf("plain stream rows = %+v, want 2", got)
	}
	must(t, "Complete", r.Complete(e.ctx, nil))
}

// reservationAppendMayContinuePastTheReservationOnly is the case "Reservation/AppendMayContinuePastTheReservationOnly": append may continue past the reservation only.
func reservationAppendMayContinuePastTheReservationOnly(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s", "")
	must(t, "Append", e.appendRows("s", 0, 1, 2))
	if err := e.appendRows("s", 0, 4); !errors.Is(err, journal.ErrSeqGap) {
		t.Fatalf("skip without a reservation: err = %v, want ErrSeqGap", err)
	}
	must(t, "reserve", e.appendRows("s", 10))
	e.wantReserved("s", 10, 2)
	// Below the reservation, the next seq still continues the stream.
	must(t, "Append 3", e.appendRows("s", 10, 3))
	for _, seq := range []int64{5, 10, 12} {
		if err := e.appendRows("s", 10, seq); !errors.Is(err, journal.ErrSeqGap) {
			t.Fatalf("append %d with last 3 and reservation 10: err = %v, want ErrSeqGap", seq, err)
		}
	}
	if err := e.appendRows("s", 10, 11, 13); !errors.Is(err, journal.ErrSeqGap) {
		t.Fatalf("a jump, then a gap: err = %v, want ErrSeqGap", err)
	}
	e.wantReserved("s", 10, 3)
	must(t, "Append past the reservation", e.appendRows("s", 14, 11, 12))
	e.wantReserved("s", 14, 12)
	if got := seqsOf(e.storedEvents("s")); fmt.Sprint(got) != "[1 2 3 11 12]" {
		t.Fatalf("seqs = %v", got)
	}
	// Reserve replaces the reservation, lower too; at or below the last seq it
	// allows no jump.
	must(t, "lower", e.appendRows("s", 12))
	e.wantReserved("s", 12, 12)
	if err := e.appendRows("s", 12, 14); !errors.Is(err, journal.ErrSeqGap) {
		t.Fatalf("jump with the reservation at the last seq: err = %v", err)
	}
	must(t, "lower below the last", e.appendRows("s", 3))
	e.wantReserved("s", 3, 12)
	if err := e.appendRows("s", 3, 4); !errors.Is(err, journal.ErrSeqExists) {
		t.Fatalf("append after a reservation below the last seq: err = %v, want ErrSeqExists", err)
	}
	must(t, "Append 13", e.appendRows("s", 0, 13))
	e.wantReserved("s", 0, 13)
}

// reservationCreateStreamStoresIt is the case "Reservation/CreateStreamStoresIt": create stream stores it.
func reservationCreateStreamStoresIt(t *testing.T, e *env) {
	j := e.journal("a")
	for _, id := range []string{"from1", "past"} {
		must(t, "CreateStream", j.CreateStream(e.ctx, journal.Stream{ID: id, Reserved: 5}))
		e.wantReserved(id, 5, 0)
	}
	if err := e.appendRows("past", 9, 7); !errors.Is(err, journal.ErrSeqGap) {
		t.Fatalf("skip past a fresh stream's reservation: err = %v", err)
	}
	must(t, "Append from 1", e.appendRows("from1", 5, 1))
	must(t, "Append past the reservation", e.appendRows("past", 9, 6))
	e.wantReserved("from1", 5, 1)
	e.wantReserved("past", 9, 6)
}

// reservationFinishStreamKeepsIt is the case "Reservation/FinishStreamKeepsIt": finish stream keeps it.
func reservationFinishStreamKeepsIt(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.begin(a)
	f := r.Fence()
	for i, c := range []struct {
		name  string
		fence *journal.Fence
		rows  []journal.EventRow
	}{
		{"with rows", &f, rows(9)},
		{"with a fence only", &f, nil},
		{"without rows or fence", nil, nil},
	} {
		id := fmt.Sprintf("s%d", i)
		e.stream(a, id, r.ID)
		must(t, "Append", e.d.AppendEvents(e.ctx, &f, journal.Append{StreamID: id, Rows: rows(1, 2), Reserve: 8}))
		last, err := e.d.FinishStream(e.ctx, id, c.fence, c.rows, e.clock.Now())
		must(t, "FinishStream "+c.name, err)
		want := int64(2)
		if len(c.rows) > 0 {
			want = 9
		}
		if last != want {
			t.Fatalf("finish %s: last %d, want %d", c.name, last, want)
		}
		if res, _ := e.reserved(id); res != 8 {
			t.Fatalf("finish %s left reservation %d, want it kept (8)", c.name, res)
		}
	}
}

// reservationCloseStreamLandsPastIt is the case "Reservation/CloseStreamLandsPastIt": close stream lands past it.
func reservationCloseStreamLandsPastIt(t *testing.T, e *env) {
	j := e.journal("a")
	for _, c := range []struct {
		id      string
		seqs    []int64
		reserve int64
		at      int64
	}{{"above", []int64{1, 2, 3}, 40, 41}, {"below", []int64{1, 2, 3, 4, 5}, 2, 6}, {"empty", nil, 7, 8}} {
		e.stream(j, c.id, "")
		must(t, "Append", e.appendRows(c.id, c.reserve, c.seqs...))
		must(t, "CloseStream", e.d.CloseStream(e.ctx, c.id, json.RawMessage(`{"type":"RUN_ERROR","message":"closed"}`), e.clock.Now()))
		st, got, err := e.d.ReadStream(e.ctx, c.id, 0, 100)
		must(t, "ReadStream", err)
		if len(got) != 1 || got[0].Seq != c.at || st.FinishedAt == nil || !jsonEq(got[0].Event, []byte(`{"type":"RUN_ERROR","message":"closed"}`)) {
			t.Fatalf("%s: closed stream %+v with rows %+v, want only the close at %d", c.id, st, got, c.at)
		}
		if st.Reserved > c.at {
			t.Fatalf("%s: reservation %d left past the close at %d", c.id, st.Reserved, c.at)
		}
	}
}

// reservationAbandonedWritersSeqsAreNeverReused is the case "Reservation/AbandonedWritersSeqsAreNeverReused": abandoned writers seqs are never reused.
func reservationAbandonedWritersSeqsAreNeverReused(t *testing.T, e *env) {
	for _, reopen := range []string{"NewLogWriter", "CreateLog"} {
		a := e.journal("a-" + reopen)
		r := e.begin(a)
		id := "s-" + reopen
		opts := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: 4}
		w, err := a.CreateLog(e.ctx, journal.Stream{ID: id, RunID: r.ID}, r, opts)
		must(t, "CreateLog", err)
		e.wantReserved(id, 4, 0) // created with its first reservation
		handed := seqLog{}
		for i := range 3 {
			ev := fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"a%d"}`, i)
			handed.note(t, write(t, e, w, ev), ev)
		}
		must(t, "Flush", w.Flush(e.ctx))
		e.wantReserved(id, 7, 3)
		for i := 3; i < 6; i++ { // 4..6: within the reservation, handed out unstored
			ev := fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"a%d"}`, i)
			handed.note(t, write(t, e, w, ev), ev)
		}
		write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"lost"}`) // pending when a dies
		e.wantReserved(id, 7, 3)
		res, last := int64(7), int64(3)
		// a dies: w is abandoned without Close. b takes the run over.
		e.clock.Advance(leaseTTL)
		b := e.journal("b-" + reopen)
		r2, err := b.Claim(e.ctx, r.ID)
		must(t, "Claim", err)
		var w2 *journal.LogWriter
		if reopen == "NewLogWriter" {
			w2, err = b.NewLogWriter(e.ctx, id, r2, opts)
		} else {
			w2, err = b.CreateLog(e.ctx, journal.Stream{ID: id, RunID: r.ID}, r2, opts)
		}
		must(t, reopen, err)
		if st, l := w2.Opened(); st.Reserved != res || l != last || st.RunID != r.ID {
			t.Fatalf("%s: Opened() = %+v after %d, want reserved %d after %d", reopen, st, l, res, last)
		}
		first := write(t, e, w2, `{"type":"RUN_ERROR","code":"WorkerLost"}`)
		if first != res+1 {
			t.Fatalf("%s: the new writer starts at %d, want %d (past the reservation)", reopen, first, res+1)
		}
		handed.note(t, first, `{"type":"RUN_ERROR","code":"WorkerLost"}`)
		for i := range 3 {
			ev := fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"b%d"}`, i)
			handed.note(t, write(t, e, w2, ev), ev)
		}
		must(t, "Close", w2.Close(e.ctx))
		handed.check(t, e.storedEvents(id))
		if n := len(e.storedEvents(id)); n != 3+4 {
			t.Fatalf("%s: %d rows stored, want a's 3 committed and b's 4", reopen, n)
		}
	}
}

// reservationAWriterPastADeadOnesReservationMayFlushBeforeItsFirstRow is the case "Reservation/AWriterPastADeadOnesReservationMayFlushBeforeItsFirstRow": a writer past a dead ones reservation may flush before its first row.
func reservationAWriterPastADeadOnesReservationMayFlushBeforeItsFirstRow(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	opts := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: 4}
	w, err := a.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, opts)
	must(t, "CreateLog", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	must(t, "Flush", w.Flush(e.ctx))
	// The stream's first reservation (4) still reaches half of ReserveAhead past seq 1,
	// so the commit kept it.
	e.wantReserved("s1", 4, 1)
	write(t, e, w, `{"type":"STEP_STARTED"}`) // handed out, never stored: a dies
	e.clock.Advance(leaseTTL)
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	w2, err := b.NewLogWriter(e.ctx, "s1", r2, opts)
	must(t, "NewLogWriter", err)
	must(t, "Flush with nothing queued", w2.Flush(e.ctx))
	seq := write(t, e, w2, `{"type":"RUN_ERROR","code":"WorkerLost"}`)
	must(t, "Close", w2.Close(e.ctx))
	if got := seqsOf(e.storedEvents("s1")); len(got) != 2 || got[1] != seq || seq != 5 {
		t.Fatalf("stored %v, new writer's seq %d; want [1 5]", got, seq)
	}
}

// reservationALogOpenedByAStepStoresItsFirstEventBeforeItsSeq is the case "Reservation/ALogOpenedByAStepStoresItsFirstEventBeforeItsSeq": a log opened by a step stores its first event before its seq.
func reservationALogOpenedByAStepStoresItsFirstEventBeforeItsSeq(t *testing.T, e *env) {
	cd := &countingDriver{Driver: e.d}
	j := e.journalOn(cd, "a")
	r := e.begin(j)
	opts := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: 4}
	w, err := r.CreateLogStep(e.ctx, "agent-run", func() journal.Stream { return journal.Stream{ID: "s1", Flow: "chat"} }, opts)
	must(t, "CreateLogStep", err)
	e.wantReserved("s1", 0, 0)
	before := cd.writes.Load()
	if seq := write(t, e, w, `{"type":"RUN_STARTED"}`); seq != 1 {
		t.Fatalf("first seq %d", seq)
	}
	if n := cd.writes.Load() - before; n != 1 {
		t.Fatalf("the first event took %d writes, want 1 before its seq is returned", n)
	}
	e.wantReserved("s1", 1+4, 1)
	// Then the reservation covers the next ones.
	write(t, e, w, `{"type":"STEP_STARTED"}`)
	if n := cd.writes.Load() - before; n != 1 {
		t.Fatalf("the second event took a write of its own (%d writes)", n)
	}
	must(t, "Close", w.Close(e.ctx))
	e.wantReserved("s1", 2, 2)
}

// reservationClosedWriterIsContinuedContiguously is the case "Reservation/ClosedWriterIsContinuedContiguously": closed writer is continued contiguously.
func reservationClosedWriterIsContinuedContiguously(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}`)
	write(t, e, w, `{"type":"STEP_STARTED"}`)
	must(t, "Close", w.Close(e.ctx))
	e.wantReserved("s1", 3, 3) // the exact last seq
	must(t, "Suspend", r.Suspend(e.ctx))
	r2, err := j.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	w2, err := j.NewLogWriter(e.ctx, "s1", r2, quiet)
	must(t, "NewLogWriter", err)
	if seq := write(t, e, w2, `{"type":"RUN_STARTED"}`); seq != 4 {
		t.Fatalf("the resumed writer starts at %d, want 4", seq)
	}
	must(t, "Close", w2.Close(e.ctx))
	checkGapFree(t, seqsOf(e.storedEvents("s1")))
}

// reservationNoSeqIsReturnedPastTheStoredReservation is the case "Reservation/NoSeqIsReturnedPastTheStoredReservation": no seq is returned past the stored reservation.
func reservationNoSeqIsReturnedPastTheStoredReservation(t *testing.T, e *env) {
	cd := &countingDriver{Driver: e.d}
	j := e.journalOn(cd, "a")
	r := e.begin(j)
	const ahead = 3
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: ahead})
	must(t, "CreateLog", err)
	handed := seqLog{}
	// A burst of structural events with deltas between them, more than ReserveAhead
	// between explicit commits.
	for i := range 20 {
		if i%3 == 2 {
			write(t, e, w, fmt.Sprintf(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m%d","delta":"d%d"}`, i, i))
		}
		ev := fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"b%d"}`, i)
		seq := write(t, e, w, ev)
		handed.note(t, seq, ev)
		if res, last := e.reserved("s1"); seq > max(res, last) {
			t.Fatalf("Write returned seq %d with only %d reserved and %d stored", seq, res, last)
		}
	}
	if n := cd.writes.Load(); n == 0 || n >= 20 {
		t.Fatalf("%d commits for 20 structural events: want some, batched", n)
	}
	must(t, "Close", w.Close(e.ctx))
	stored := e.storedEvents("s1")
	handed.check(t, stored)
	checkGapFree(t, seqsOf(stored))
	for seq := range handed {
		if seq > int64(len(stored)) {
			t.Fatalf("seq %d handed out, not stored after Close", seq)
		}
	}
}

// reservationIsRaisedInSteps is the case "Reservation/IsRaisedInSteps": a commit keeps the
// stored reservation while it reaches half of ReserveAhead past the last seq handed out,
// and raises it to ReserveAhead past that seq once it does not, so most commits leave
// the stream's record alone.
func reservationIsRaisedInSteps(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	const ahead = 8
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: ahead})
	must(t, "CreateLog", err)
	// CreateLog reserved 8; the reservation moves only at seqs 5, 10, 15 and 20, where
	// the stored one no longer reaches 4 past the seq.
	raised := map[int64]int64{5: 13, 10: 18, 15: 23, 20: 28}
	want := int64(ahead)
	for seq := int64(1); seq <= 20; seq++ {
		if got := write(t, e, w, fmt.Sprintf(`{"type":"STEP_STARTED","stepName":"s%d"}`, seq)); got != seq {
			t.Fatalf("seq %d, want %d", got, seq)
		}
		must(t, "Flush", w.Flush(e.ctx))
		if r, ok := raised[seq]; ok {
			want = r
		}
		e.wantReserved("s1", want, seq)
	}
	must(t, "Close", w.Close(e.ctx))
	e.wantReserved("s1", 20, 20)
}

// reservationStepsCommitTheRowsQueuedBeforeThem is the case "Reservation/StepsCommitTheRowsQueuedBeforeThem": steps commit the rows queued before them.
func reservationStepsCommitTheRowsQueuedBeforeThem(t *testing.T, e *env) {
	cd := &countingDriver{Driver: e.d}
	j := e.journalOn(cd, "a")
	r := e.begin(j)
	const ahead = 8
	opts := journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour, ReserveAhead: ahead}
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, opts)
	must(t, "CreateLog", err)
	e.stream(j, "s2", r.ID)
	w2, err := j.NewLogWriter(e.ctx, "s2", r, opts)
	must(t, "NewLogWriter", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"STEP_STARTED"}`)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"half a row"}`)
	write(t, e, w2, `{"type":"RUN_STARTED"}`)
	before := cd.writes.Load()
	_, err = r.Step(e.ctx, "tool", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"r"`), nil })
	must(t, "Step", err)
	if n := cd.writes.Load() - before; n != 0 {
		t.Fatalf("the step took %d separate log commits, want its own write only", n)
	}
	got := events(t, e.storedEvents("s1"))
	if len(got) != 3 || got[2]["delta"] != "half a row" {
		t.Fatalf("rows stored with the step: %v, want the 3 queued (the pending delta sealed)", got)
	}
	// s1's first reservation (ahead, from CreateLog) still reaches half of ahead past
	// its last seq, so the step's write kept it; s2's first event needed one of its own.
	e.wantReserved("s1", ahead, 3)
	e.wantReserved("s2", 1+ahead, 1)
	if st := w.Stats(); st.Rows != 3 {
		t.Fatalf("writer stats %+v, want the 3 rows counted", st)
	}
	// The writers go on after the step's rows; a step with nothing queued stores none.
	if seq := write(t, e, w, `{"type":"STEP_FINISHED"}`); seq != 4 {
		t.Fatalf("next seq %d, want 4", seq)
	}
	_, err = r.Step(e.ctx, "tool2", func(context.Context) (json.RawMessage, error) { return nil, errors.New("tool failed") })
	if err == nil || err.Error() != "tool failed" {
		t.Fatalf("failing step err = %v", err)
	}
	if got := e.storedEvents("s1"); len(got) != 4 {
		t.Fatalf("a step that records an error stores the queued rows too: %d rows", len(got))
	}
	must(t, "Close", w.Close(e.ctx))
	must(t, "Close", w2.Close(e.ctx))
	e.wantReserved("s1", 4, 4)
	e.wantReserved("s2", 1, 1)
}

// reservationAStepThatLosesTheLeaseStoresNoRows is the case "Reservation/AStepThatLosesTheLeaseStoresNoRows": a step that loses the lease stores no rows.
func reservationAStepThatLosesTheLeaseStoresNoRows(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	w, err := a.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	e.clock.Advance(leaseTTL)
	_, err = b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	if _, err := r.Step(e.ctx, "x", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil }); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("Step after a takeover: err = %v", err)
	}
	if got := e.storedEvents("s1"); len(got) != 0 {
		t.Fatalf("rows stored by a fenced-out step: %+v", got)
	}
	if _, err := w.Write(e.ctx, json.RawMessage(`{"type":"STEP_STARTED"}`)); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("the writer must report the lost lease: %v", err)
	}
}
