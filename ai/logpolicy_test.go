package ai_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// The journal stores an agent run's log as AG-UI says only through the ai package's
// policy: a coalesced delta row is the event AG-UI defines for the joined text, the
// same bytes as the live frame of one delta, and the events the journal writes itself
// keep their stored form.
func TestLogPolicyStoresAGUIEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := journal.LogOptions{Policy: ai.LogPolicy(), FlushInterval: time.Hour, CommitInterval: time.Hour, MaxRows: 7}
	w, err := j.CreateLog(ctx, journal.Stream{ID: "run-1"}, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	deltas := []struct {
		typ       agui.Type
		id, delta string
	}{
		{agui.TypeReasoningMessageContent, "m-0", "Think"}, {agui.TypeReasoningMessageContent, "m-0", "ing"},
		{agui.TypeTextMessageContent, "m-1", `He said "hi`}, {agui.TypeTextMessageContent, "m-1", "\"\n"},
		{agui.TypeToolCallArgs, "c-1", `{"a":`}, {agui.TypeToolCallArgs, "c-1", "1}"},
	}
	for _, d := range deltas {
		if _, err := w.WriteDelta(ctx, string(d.typ), d.id, d.delta); err != nil {
			t.Fatal(err)
		}
	}
	// Whole events of the same types coalesce too: the first event's members, its delta
	// holding the joined text.
	for _, ev := range []agui.Event{agui.TextMessageContent{MessageID: "m-2", Delta: "a"}, agui.TextMessageContent{MessageID: "m-2", Delta: "b"}} {
		data, _ := json.Marshal(ev)
		if seq, err := w.Write(ctx, data); err != nil || seq != 0 {
			t.Fatalf("Write(%s) = %d, %v; want a delta", data, seq, err)
		}
	}
	for _, typ := range []agui.Type{agui.TypeTextMessageContent, agui.TypeToolCallArgs, agui.TypeReasoningMessageContent} {
		if _, err := w.WriteTyped(ctx, string(typ), []byte(`{}`)); err == nil {
			t.Fatalf("WriteTyped took %s, a delta", typ)
		}
	}
	// An interrupt's RUN_FINISHED is stored before its seq is returned, without ending the log.
	fin, _ := json.Marshal(agui.RunFinished{ThreadID: "t", RunID: "run-1"})
	seq, err := w.WriteTyped(ctx, string(agui.TypeRunFinished), fin)
	if err != nil || seq != 5 {
		t.Fatalf("RUN_FINISHED: seq %d, %v; want 5", seq, err)
	}
	if rows, _ := j.ReadEvents(ctx, "run-1", 0, 10); len(rows) != 5 {
		t.Fatalf("RUN_FINISHED not committed at once: %d rows stored", len(rows))
	}
	// Past the cap a delta is dropped and the truncation marker stored once.
	for _, id := range []string{"m-3", "m-4", "m-5", "m-6"} {
		if _, err := w.WriteDelta(ctx, string(agui.TypeTextMessageContent), id, "x"); err != nil {
			t.Fatal(err)
		}
	}
	errEv, _ := json.Marshal(agui.RunError{Message: "boom"})
	if _, err := w.WriteEnd(ctx, string(agui.TypeRunError), errEv); err != nil {
		t.Fatal(err)
	}

	rows, err := j.ReadEvents(ctx, "run-1", 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, string(r.Event))
	}
	want := []string{
		string(agui.AppendDelta(nil, agui.TypeReasoningMessageContent, "m-0", "Thinking")),
		string(agui.AppendDelta(nil, agui.TypeTextMessageContent, "m-1", "He said \"hi\"\n")),
		string(agui.AppendDelta(nil, agui.TypeToolCallArgs, "c-1", `{"a":1}`)),
		`{"delta":"ab","messageId":"m-2","type":"TEXT_MESSAGE_CONTENT"}`,
		string(fin),
		string(agui.AppendDelta(nil, agui.TypeTextMessageContent, "m-3", "x")),
		string(agui.AppendDelta(nil, agui.TypeTextMessageContent, "m-4", "x")),
		`{"type":"CUSTOM","name":"engine.events.truncated","value":{"maxRows":7,"reason":"the stored log keeps at most 7 rows; later deltas are not stored"}}`,
		string(errEv),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stored rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st, _ := j.GetStream(ctx, "run-1"); st.FinishedAt == nil {
		t.Fatal("RUN_ERROR through WriteEnd did not end the log")
	}
}

// An app with the agent routes gives its journal the agent log policy, so retention
// closes an agent run's log left unfinished with a RUN_ERROR a stock AG-UI client
// understands.
func TestInstallGivesTheJournalTheLogPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j, err := journal.New(memory.New(), journal.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// The routes before the journal: the order of the options does not matter.
	if _, err := engine.New(ai.Install(ai.Options{}), durable.With(j)); err != nil {
		t.Fatal(err)
	}
	if err := j.CreateStream(ctx, journal.Stream{ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(7*24*time.Hour + time.Second)
	if res, err := j.CleanupOnce(ctx); err != nil || res.Closed != 1 {
		t.Fatalf("CleanupOnce = %+v, %v", res, err)
	}
	rows, err := j.ReadEvents(ctx, "run-1", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"RUN_ERROR","message":"run did not finish within 168h0m0s; closed by the journal","code":"JournalRunExpired"}`
	if len(rows) != 1 || string(rows[0].Event) != want {
		t.Fatalf("rows = %v, want %s", rows, want)
	}
	if _, err := agui.Decode(rows[0].Event); err != nil {
		t.Fatalf("the expiry event is not AG-UI: %v", err)
	}
}
