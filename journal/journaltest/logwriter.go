package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// quiet keeps the writer's timers out of a case: only explicit calls flush and commit.
var quiet = journal.LogOptions{FlushInterval: time.Hour, CommitInterval: time.Hour}

// openLog creates a plain stream id on j and opens a writer on it.
func (e *env) openLog(j *journal.Journal, id string, opts journal.LogOptions) *journal.LogWriter {
	e.t.Helper()
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: id, Flow: "f", PrincipalID: "u1", Tenant: "t1"}, nil, opts)
	must(e.t, "CreateLog", err)
	return w
}

// write feeds one event and returns its seq.
func write(t *testing.T, e *env, w *journal.LogWriter, ev string) int64 {
	t.Helper()
	seq, err := w.Write(e.ctx, json.RawMessage(ev))
	must(t, "Write "+ev, err)
	return seq
}

// events decodes stored rows into generic maps.
func events(t *testing.T, rs []journal.EventRow) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		if err := json.Unmarshal(r.Event, &out[i]); err != nil {
			t.Fatalf("row %d: %v", r.Seq, err)
		}
	}
	return out
}

func logWriterCases() []testCase {
	return []testCase{
		{"LogWriter/CoalescesDeltasAndStoresStructuralEvents", logWriterCoalescesDeltasAndStoresStructuralEvents},
		{"LogWriter/WriteDeltaAndWriteTypedStoreWhatWriteStores", logWriterWriteDeltaAndWriteTypedStoreWhatWriteStores},
		{"LogWriter/CreateLogStartsOrContinues", logWriterCreateLogStartsOrContinues},
		{"LogWriter/CommitsAreBatchedUntilFlush", logWriterCommitsAreBatchedUntilFlush},
		{"LogWriter/SealsRowsBySize", logWriterSealsRowsBySize},
		{"LogWriter/SealsRowsByAge", logWriterSealsRowsByAge},
		{"LogWriter/CommitsNoSoonerThanTheInterval", logWriterCommitsNoSoonerThanTheInterval},
		{"LogWriter/QuietStreamIsFlushedByTimer", logWriterQuietStreamIsFlushedByTimer},
		{"LogWriter/TruncatesAtMaxRows", logWriterTruncatesAtMaxRows},
		{"LogWriter/ResumedRunContinuesTheLogUnderItsLease", logWriterResumedRunContinuesTheLogUnderItsLease},
		{"LogWriter/WriteEndStoresTheEndAndFinishesInOneWrite", logWriterWriteEndStoresTheEndAndFinishesInOneWrite},
		{"LogWriter/FinishStoresWhatIsQueuedAndEndsTheStream", logWriterFinishStoresWhatIsQueuedAndEndsTheStream},
		{"LogWriter/FinishAfterAFailedCommitStillEndsTheStream", logWriterFinishAfterAFailedCommitStillEndsTheStream},
		{"LogWriter/StaleWriterCannotEndAResumedRunsStream", logWriterStaleWriterCannotEndAResumedRunsStream},
		{"LogWriter/RejectsBadEvents", logWriterRejectsBadEvents},
	}
}

// logWriterCoalescesDeltasAndStoresStructuralEvents is the case "LogWriter/CoalescesDeltasAndStoresStructuralEvents": coalesces deltas and stores structural events.
func logWriterCoalescesDeltasAndStoresStructuralEvents(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", quiet)
	want := []int64{1, 2, 0, 0, 0, 4, 0, 0, 7, 8, 9, 0, 0, 11}
	evs := []string{
		`{"type":"RUN_STARTED","threadId":"t","runId":"s1"}`,
		`{"type":"TEXT_MESSAGE_START","messageId":"m-1","role":"assistant"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"Hel"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"lo \"w"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"orld\""}`,
		`{"type":"TEXT_MESSAGE_END","messageId":"m-1"}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{\"a\""}`,
		`{"type":"TOOL_CALL_ARGS","toolCallId":"c2","delta":"{}"}`,
		`{"type":"TOOL_CALL_END","toolCallId":"c1"}`,
		`{"type":"TOOL_CALL_END","toolCallId":"c2"}`,
		`{"type":"STEP_FINISHED","stepName":"step-1"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-2","delta":"a"}`,
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-2","delta":"b"}`,
		`{"type":"RUN_FINISHED","threadId":"t","runId":"s1"}`,
	}
	for i, ev := range evs {
		if got := write(t, e, w, ev); got != want[i] {
			t.Fatalf("event %d seq = %d, want %d", i, got, want[i])
		}
	}
	// RUN_FINISHED commits synchronously: no Flush needed.
	seqs, rs := e.seqs(j, "s1")
	checkGapFree(t, seqs)
	got := events(t, rs)
	if len(got) != 11 {
		t.Fatalf("%d rows, want 11: %v", len(got), got)
	}
	checks := map[int][2]string{2: {"TEXT_MESSAGE_CONTENT", `Hello "world"`}, 4: {"TOOL_CALL_ARGS", `{"a"`}, 5: {"TOOL_CALL_ARGS", `{}`}, 9: {"TEXT_MESSAGE_CONTENT", "ab"}}
	for i, c := range checks {
		if got[i]["type"] != c[0] || got[i]["delta"] != c[1] {
			t.Fatalf("row %d = %v, want %s with delta %q", i+1, got[i], c[0], c[1])
		}
	}
	if got[2]["messageId"] != "m-1" || got[4]["toolCallId"] != "c1" || got[10]["type"] != "RUN_FINISHED" {
		t.Fatalf("rows = %v", got)
	}
	if st := w.Stats(); st.Rows != 11 || st.Commits != 1 {
		t.Fatalf("stats = %+v, want 11 rows in 1 commit", st)
	}
	must(t, "Close", w.Close(e.ctx))
}

// logWriterWriteDeltaAndWriteTypedStoreWhatWriteStores is the case "LogWriter/WriteDeltaAndWriteTypedStoreWhatWriteStores": write delta and write typed store what write stores.
func logWriterWriteDeltaAndWriteTypedStoreWhatWriteStores(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	e.stream(j, "s2", "")
	a, err := j.NewLogWriter(e.ctx, "s1", nil, quiet)
	must(t, "NewLogWriter", err)
	b, err := j.NewLogWriter(e.ctx, "s2", nil, quiet)
	must(t, "NewLogWriter", err)
	// A row ends where the message or call changes, even within one type, and once
	// its text reaches FlushBytes (1 KiB by default).
	long := strings.Repeat("x", 600)
	deltas := []struct{ typ, id, delta string }{
		{"TEXT_MESSAGE_CONTENT", "m-1", "Hel"}, {"TEXT_MESSAGE_CONTENT", "m-1", "lo"},
		{"TEXT_MESSAGE_CONTENT", "m-2", "Bye"},
		{"TOOL_CALL_ARGS", "c1", `{"a"`}, {"TOOL_CALL_ARGS", "c1", ":1}"}, {"TOOL_CALL_ARGS", "c2", "{}"},
		{"TEXT_MESSAGE_CONTENT", "m-3", long}, {"TEXT_MESSAGE_CONTENT", "m-3", long}, {"TEXT_MESSAGE_CONTENT", "m-3", long},
	}
	write(t, e, a, `{"type":"RUN_STARTED","threadId":"t","runId":"s"}`)
	write(t, e, b, `{"type":"RUN_STARTED","threadId":"t","runId":"s"}`)
	for _, d := range deltas {
		field := "messageId"
		if d.typ == "TOOL_CALL_ARGS" {
			field = "toolCallId"
		}
		raw, _ := json.Marshal(map[string]string{"type": d.typ, field: d.id, "delta": d.delta})
		write(t, e, a, string(raw))
		seq, err := b.WriteDelta(e.ctx, d.typ, d.id, d.delta)
		must(t, "WriteDelta", err)
		if seq != 0 {
			t.Fatalf("a delta gets no seq, got %d", seq)
		}
	}
	if _, err := b.WriteDelta(e.ctx, "RUN_STARTED", "x", "y"); err == nil {
		t.Fatal("WriteDelta must refuse an event that is not a delta")
	}
	if _, err := b.WriteTyped(e.ctx, "TEXT_MESSAGE_CONTENT", json.RawMessage(`{}`)); err == nil {
		t.Fatal("WriteTyped must refuse a delta")
	}
	write(t, e, a, `{"type":"RUN_FINISHED","threadId":"t","runId":"s"}`)
	seq, err := b.WriteTyped(e.ctx, "RUN_FINISHED", json.RawMessage(`{"type":"RUN_FINISHED","threadId":"t","runId":"s"}`))
	must(t, "WriteTyped", err)
	if seq != 8 {
		t.Fatalf("a structural event gets its seq at once: got %d, want 8", seq)
	}
	_, ra := e.seqs(j, "s1")
	_, rb := e.seqs(j, "s2")
	ga, gb := events(t, ra), events(t, rb)
	if fmt.Sprint(ga) != fmt.Sprint(gb) || len(ga) != 8 {
		t.Fatalf("Write stored %v\nWriteDelta stored %v", ga, gb)
	}
	var got []string
	for _, ev := range gb[1:7] {
		id, _ := ev["messageId"].(string)
		if id == "" {
			id, _ = ev["toolCallId"].(string)
		}
		d, _ := ev["delta"].(string)
		got = append(got, fmt.Sprintf("%s:%d", id, len(d)))
	}
	if want := "[m-1:5 m-2:3 c1:7 c2:2 m-3:1200 m-3:600]"; fmt.Sprint(got) != want {
		t.Fatalf("delta rows (id:text length) = %v, want %s", got, want)
	}
}

// logWriterCreateLogStartsOrContinues is the case "LogWriter/CreateLogStartsOrContinues": create log starts or continues.
func logWriterCreateLogStartsOrContinues(t *testing.T, e *env) {
	j := e.journal("a")
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", Flow: "f", PrincipalID: "u1", Tenant: "t1"}, nil, quiet)
	must(t, "CreateLog new", err)
	if seq := write(t, e, w, `{"type":"RUN_STARTED"}`); seq != 1 {
		t.Fatalf("first seq of a new log = %d, want 1", seq)
	}
	write(t, e, w, `{"type":"STEP_STARTED","stepName":"step-1"}`)
	must(t, "Close", w.Close(e.ctx))
	st, err := j.GetStream(e.ctx, "s1")
	must(t, "GetStream", err)
	if st.CreatedAt.IsZero() || st.Tenant != "t1" || st.PrincipalID != "u1" {
		t.Fatalf("stored stream = %+v", st)
	}
	// The same id again continues the stored log (a resumed run's).
	w, err = j.CreateLog(e.ctx, journal.Stream{ID: "s1", Flow: "f"}, nil, quiet)
	must(t, "CreateLog existing", err)
	if seq := write(t, e, w, `{"type":"RUN_STARTED"}`); seq != 3 {
		t.Fatalf("first seq after two stored rows = %d, want 3", seq)
	}
	must(t, "Close", w.Close(e.ctx))
	// A durable run's stream needs that run: refused before anything is stored.
	if _, err := j.CreateLog(e.ctx, journal.Stream{ID: "s2", RunID: "r-other"}, nil, quiet); err == nil {
		t.Fatal("CreateLog of a run's stream without the run succeeded")
	}
	if _, err := j.GetStream(e.ctx, "s2"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("refused CreateLog left a stream: err = %v", err)
	}
}

// logWriterCommitsAreBatchedUntilFlush is the case "LogWriter/CommitsAreBatchedUntilFlush": commits are batched until flush.
func logWriterCommitsAreBatchedUntilFlush(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", quiet)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"STEP_STARTED","stepName":"step-1"}`)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"x"}`)
	if seqs, _ := e.seqs(j, "s1"); len(seqs) != 0 {
		t.Fatalf("rows committed before the commit interval: %v", seqs)
	}
	must(t, "Flush", w.Flush(e.ctx))
	if seqs, _ := e.seqs(j, "s1"); len(seqs) != 3 {
		t.Fatalf("rows after Flush: %v", seqs)
	}
	if w.LastSeq() != 3 {
		t.Fatalf("LastSeq = %d", w.LastSeq())
	}
}

// logWriterSealsRowsBySize is the case "LogWriter/SealsRowsBySize": seals rows by size.
func logWriterSealsRowsBySize(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", journal.LogOptions{FlushInterval: time.Hour, FlushBytes: 8, CommitInterval: time.Hour})
	delta := func(d string) { write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"`+d+`"}`) }
	delta("aaaa")
	delta("bbbbb") // 9 bytes >= 8: sealed
	delta("c")
	must(t, "Flush", w.Flush(e.ctx))
	_, rs := e.seqs(j, "s1")
	if got := events(t, rs); len(got) != 2 || got[0]["delta"] != "aaaabbbbb" || got[1]["delta"] != "c" {
		t.Fatalf("rows = %v", got)
	}
}

// logWriterSealsRowsByAge is the case "LogWriter/SealsRowsByAge": seals rows by age.
func logWriterSealsRowsByAge(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", journal.LogOptions{FlushInterval: 20 * time.Millisecond, CommitInterval: 20 * time.Millisecond})
	delta := func(d string) { write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"`+d+`"}`) }
	delta("old")
	waitFor(t, "the timer to seal and commit the old row", func() bool {
		seqs, _ := e.seqs(j, "s1")
		return len(seqs) == 1
	})
	delta("new") // the old row is sealed: a row of its own
	must(t, "Close", w.Close(e.ctx))
	_, rs := e.seqs(j, "s1")
	if got := events(t, rs); len(got) != 2 || got[0]["delta"] != "old" || got[1]["delta"] != "new" {
		t.Fatalf("rows = %v", got)
	}
}

// logWriterCommitsNoSoonerThanTheInterval is the case "LogWriter/CommitsNoSoonerThanTheInterval": commits no sooner than the interval.
func logWriterCommitsNoSoonerThanTheInterval(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	const interval = 200 * time.Millisecond
	opened := time.Now()
	w, err := j.NewLogWriter(e.ctx, "s1", nil, journal.LogOptions{FlushInterval: time.Hour, CommitInterval: interval})
	must(t, "NewLogWriter", err)
	write(t, e, w, `{"type":"STEP_STARTED","stepName":"step-1"}`)
	write(t, e, w, `{"type":"STEP_FINISHED","stepName":"step-1"}`)
	waitFor(t, "the timer to commit the queued rows", func() bool {
		seqs, _ := e.seqs(j, "s1")
		return len(seqs) == 2
	})
	// A lower bound only: the timer cannot fire early, however loaded the machine.
	if waited := time.Since(opened); waited < interval {
		t.Fatalf("rows committed %v after the writer opened, before the %v commit interval", waited, interval)
	}
	must(t, "Close", w.Close(e.ctx))
}

// logWriterQuietStreamIsFlushedByTimer is the case "LogWriter/QuietStreamIsFlushedByTimer": quiet stream is flushed by timer.
func logWriterQuietStreamIsFlushedByTimer(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", journal.LogOptions{FlushInterval: 10 * time.Millisecond, CommitInterval: 10 * time.Millisecond})
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"quiet"}`)
	waitFor(t, "the timer to commit the pending delta", func() bool {
		seqs, _ := e.seqs(j, "s1")
		return len(seqs) == 1
	})
	must(t, "Close", w.Close(e.ctx))
}

// logWriterTruncatesAtMaxRows is the case "LogWriter/TruncatesAtMaxRows": truncates at max rows.
func logWriterTruncatesAtMaxRows(t *testing.T, e *env) {
	j := e.journal("a")
	e.stream(j, "s1", "")
	const maxRows = 10
	w, err := j.NewLogWriter(e.ctx, "s1", nil, journal.LogOptions{MaxRows: maxRows, FlushInterval: time.Hour, CommitInterval: time.Hour})
	must(t, "NewLogWriter", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	for i := range 8 {
		m := fmt.Sprintf("m-%d", i+1)
		write(t, e, w, `{"type":"TEXT_MESSAGE_START","messageId":"`+m+`"}`)
		write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"`+m+`","delta":"x"}`)
		write(t, e, w, `{"type":"TEXT_MESSAGE_END","messageId":"`+m+`"}`)
	}
	write(t, e, w, `{"type":"RUN_FINISHED"}`)
	must(t, "Close", w.Close(e.ctx))
	seqs, rs := e.seqs(j, "s1")
	checkGapFree(t, seqs)
	got := events(t, rs)
	markers, deltasAfter, ends := 0, 0, 0
	for i, ev := range got {
		if ev["type"] == "CUSTOM" && ev["name"] == truncatedName {
			markers++
			// Rows 1..10 fill the cap; m-4's START is row 11; its delta is the
			// first dropped one, so the marker is row 12.
			if i != maxRows+1 {
				t.Fatalf("marker at row %d, want %d", i+1, maxRows+2)
			}
		}
		if ev["type"] == "TEXT_MESSAGE_CONTENT" && i >= maxRows {
			deltasAfter++
		}
		if ev["type"] == "TEXT_MESSAGE_END" {
			ends++
		}
	}
	if markers != 1 || deltasAfter != 0 || ends != 8 || len(got) != 22 || got[len(got)-1]["type"] != "RUN_FINISHED" {
		t.Fatalf("markers %d, deltas past the cap %d, ends %d, rows %v", markers, deltasAfter, ends, got)
	}
	// A resumed writer continues the log and does not store a second marker.
	w2, err := j.NewLogWriter(e.ctx, "s1", nil, journal.LogOptions{MaxRows: maxRows})
	must(t, "NewLogWriter", err)
	if seq := write(t, e, w2, `{"type":"RUN_STARTED"}`); seq != int64(len(got)+1) {
		t.Fatalf("resumed seq = %d, want %d", seq, len(got)+1)
	}
	write(t, e, w2, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-9","delta":"y"}`)
	must(t, "Close", w2.Close(e.ctx))
	seqs, _ = e.seqs(j, "s1")
	if len(seqs) != len(got)+1 {
		t.Fatalf("resumed writer stored %d rows, want 1", len(seqs)-len(got))
	}
}

// logWriterResumedRunContinuesTheLogUnderItsLease is the case "LogWriter/ResumedRunContinuesTheLogUnderItsLease": resumed run continues the log under its lease.
func logWriterResumedRunContinuesTheLogUnderItsLease(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.stream(a, "s1", r.ID)
	if _, err := a.NewLogWriter(e.ctx, "s1", nil, quiet); err == nil {
		t.Fatal("a durable stream's writer opened without its run")
	}
	w, err := a.NewLogWriter(e.ctx, "s1", r, quiet)
	must(t, "NewLogWriter", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"RUN_FINISHED"}`)
	must(t, "Close", w.Close(e.ctx))
	must(t, "second Close", w.Close(e.ctx))
	if s, _ := a.GetStream(e.ctx, "s1"); s.FinishedAt != nil {
		t.Fatal("closing a writer finished the stream")
	}
	if _, err := w.Write(e.ctx, json.RawMessage(`{"type":"RUN_STARTED"}`)); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Write after Close err = %v", err)
	}
	// A stale writer of the old execution is fenced out after a takeover.
	stale, err := a.NewLogWriter(e.ctx, "s1", r, quiet)
	must(t, "NewLogWriter", err)
	e.clock.Advance(leaseTTL)
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	// Nothing is reserved for a writer that continues a stream, so its first id
	// needs a commit: the loss shows there, or at the latest at Flush.
	if _, err := stale.Write(e.ctx, json.RawMessage(`{"type":"RUN_STARTED"}`)); err == nil {
		err = stale.Flush(e.ctx)
		if !errors.Is(err, journal.ErrLeaseLost) {
			t.Fatalf("stale writer Flush err = %v", err)
		}
	} else if !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale writer Write err = %v", err)
	}
	if _, err := stale.Write(e.ctx, json.RawMessage(`{"type":"STEP_STARTED"}`)); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("the commit error must stick: %v", err)
	}
	w2, err := b.NewLogWriter(e.ctx, "s1", r2, quiet)
	must(t, "NewLogWriter", err)
	if seq := write(t, e, w2, `{"type":"RUN_STARTED"}`); seq != 3 {
		t.Fatalf("resumed seq = %d, want 3", seq)
	}
	must(t, "Close", w2.Close(e.ctx))
}

// logWriterWriteEndStoresTheEndAndFinishesInOneWrite is the case "LogWriter/WriteEndStoresTheEndAndFinishesInOneWrite": write end stores the end and finishes in one write.
func logWriterWriteEndStoresTheEndAndFinishesInOneWrite(t *testing.T, e *env) {
	cd := &countingDriver{Driver: e.d}
	j := e.journalOn(cd, "a")
	r := e.begin(j)
	w, err := j.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"hi"}`)
	if _, err := w.WriteEnd(e.ctx, "STEP_FINISHED", json.RawMessage(`{"type":"STEP_FINISHED"}`)); err == nil {
		t.Fatal("WriteEnd took an event that does not end a run")
	}
	before := cd.writes.Load()
	seq, err := w.WriteEnd(e.ctx, "RUN_FINISHED", json.RawMessage(`{"type":"RUN_FINISHED"}`))
	must(t, "WriteEnd", err)
	if n := cd.writes.Load() - before; n != 1 {
		t.Fatalf("WriteEnd made %d driver writes, want 1", n)
	}
	st, got, err := j.ReadStream(e.ctx, "s1", 0, 10)
	must(t, "ReadStream", err)
	if seq != 3 || len(got) != 3 || st.FinishedAt == nil {
		t.Fatalf("after WriteEnd: seq %d, stream %+v, %d rows", seq, st, len(got))
	}
	must(t, "Finish after WriteEnd", w.Finish(e.ctx))
	if _, err := w.Write(e.ctx, json.RawMessage(`{"type":"RUN_STARTED"}`)); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Write after WriteEnd err = %v", err)
	}
}

// logWriterFinishStoresWhatIsQueuedAndEndsTheStream is the case "LogWriter/FinishStoresWhatIsQueuedAndEndsTheStream": finish stores what is queued and ends the stream.
func logWriterFinishStoresWhatIsQueuedAndEndsTheStream(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", quiet)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	write(t, e, w, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"hi"}`)
	must(t, "Finish", w.Finish(e.ctx))
	must(t, "second Finish", w.Finish(e.ctx))
	st, got, _ := j.ReadStream(e.ctx, "s1", 0, 10)
	if len(got) != 2 || st.FinishedAt == nil {
		t.Fatalf("after Finish: stream %+v, %d rows", st, len(got))
	}
	// A writer closed without finishing cannot finish afterwards.
	e.stream(j, "s2", "")
	w2, err := j.NewLogWriter(e.ctx, "s2", nil, quiet)
	must(t, "NewLogWriter", err)
	must(t, "Close", w2.Close(e.ctx))
	if err := w2.Finish(e.ctx); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Finish after Close err = %v", err)
	}
}

// logWriterFinishAfterAFailedCommitStillEndsTheStream is the case "LogWriter/FinishAfterAFailedCommitStillEndsTheStream": finish after a failed commit still ends the stream.
func logWriterFinishAfterAFailedCommitStillEndsTheStream(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", quiet)
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	// Someone else stores seq 1 first: the writer's commit can never succeed.
	must(t, "Append", j.AppendEvents(e.ctx, "s1", nil, rows(1)...))
	if err := w.Flush(e.ctx); !errors.Is(err, journal.ErrSeqExists) {
		t.Fatalf("Flush err = %v, want ErrSeqExists", err)
	}
	write := func() error {
		_, err := w.Write(e.ctx, json.RawMessage(`{"type":"STEP_STARTED"}`))
		return err
	}
	if err := write(); !errors.Is(err, journal.ErrSeqExists) {
		t.Fatalf("the commit error must stick: %v", err)
	}
	if err := w.Finish(e.ctx); !errors.Is(err, journal.ErrSeqExists) {
		t.Fatalf("Finish err = %v, want the commit's error", err)
	}
	st, got, _ := j.ReadStream(e.ctx, "s1", 0, 10)
	if st.FinishedAt == nil || len(got) != 1 || !jsonEq(got[0].Event, rows(1)[0].Event) {
		t.Fatalf("after Finish: stream %+v, rows %+v; want it finished with only the other row", st, got)
	}
}

// logWriterStaleWriterCannotEndAResumedRunsStream is the case "LogWriter/StaleWriterCannotEndAResumedRunsStream": stale writer cannot end a resumed runs stream.
func logWriterStaleWriterCannotEndAResumedRunsStream(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	stale, err := a.CreateLog(e.ctx, journal.Stream{ID: "s1", RunID: r.ID}, r, quiet)
	must(t, "CreateLog", err)
	write(t, e, stale, `{"type":"RUN_STARTED"}`)
	must(t, "Flush", stale.Flush(e.ctx))
	e.clock.Advance(leaseTTL)
	_, err = b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	if _, err := stale.WriteEnd(e.ctx, "RUN_FINISHED", json.RawMessage(`{"type":"RUN_FINISHED"}`)); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale WriteEnd err = %v", err)
	}
	if err := stale.Finish(e.ctx); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale Finish err = %v", err)
	}
	st, got, _ := b.ReadStream(e.ctx, "s1", 0, 10)
	if st.FinishedAt != nil || len(got) != 1 {
		t.Fatalf("a stale writer ended the resumed run's stream: %+v, %d rows", st, len(got))
	}
}

// logWriterRejectsBadEvents is the case "LogWriter/RejectsBadEvents": rejects bad events.
func logWriterRejectsBadEvents(t *testing.T, e *env) {
	j := e.journal("a")
	w := e.openLog(j, "s1", quiet)
	for _, bad := range []string{`nope`, `[]`, `{"delta":"x"}`, `{"type":""}`} {
		if _, err := w.Write(e.ctx, json.RawMessage(bad)); err == nil {
			t.Fatalf("Write(%s) succeeded", bad)
		}
	}
	if _, err := j.NewLogWriter(e.ctx, "nope", nil, quiet); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("writer on unknown stream err = %v", err)
	}
}

// countingDriver counts the driver calls that write events or end streams, and stream
// creations.
type countingDriver struct {
	journal.Driver
	writes  atomic.Int64
	creates atomic.Int64
}

func (d *countingDriver) CreateStream(ctx context.Context, s journal.Stream) error {
	d.creates.Add(1)
	return d.Driver.CreateStream(ctx, s)
}

func (d *countingDriver) AppendEvents(ctx context.Context, f *journal.Fence, a journal.Append) error {
	d.writes.Add(1)
	return d.Driver.AppendEvents(ctx, f, a)
}

// AppendBatch counts every append of a batch as a write of its own.
func (d *countingDriver) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	return journal.AppendEach(ctx, d, batch)
}

func (d *countingDriver) FinishStream(ctx context.Context, id string, f *journal.Fence, rows []journal.EventRow, now time.Time) (int64, error) {
	d.writes.Add(1)
	return d.Driver.FinishStream(ctx, id, f, rows, now)
}
