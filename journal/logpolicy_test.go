package journal_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// aguiVocabulary matches AG-UI's event type names (the families of the protocol's
// events, so a new member is caught too), the engine's CUSTOM event names, the RUN_ERROR
// codes the agent package writes, and the protocol's name.
var aguiVocabulary = regexp.MustCompile(`\b(RUN|STEP|TEXT_MESSAGE|TOOL_CALL|STATE|MESSAGES|THINKING|REASONING|ACTIVITY)_[A-Z_]+\b` +
	`|"(CUSTOM|RAW)"|\bCUSTOM\b|engine\.(events|subagent)\.|\bWorkerLost\b|\bJournalRunExpired\b|AG-UI|\bagui\b`)

// The journal is a generic durable event log: what is AG-UI about an agent run's log
// belongs to the ai package's policy. No file of the journal or its drivers may name
// that vocabulary; the conformance suite (journaltest) and tests may, as data.
func TestJournalKnowsNoAGUIVocabulary(t *testing.T) {
	t.Parallel()
	scanned := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "journaltest" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for i, line := range strings.Split(string(src), "\n") {
			if m := aguiVocabulary.FindString(line); m != "" {
				t.Errorf("%s:%d names %q of AG-UI: %s", path, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 10 {
		t.Fatalf("scanned %d files: not the journal's sources", scanned)
	}
	for _, s := range []string{`"TEXT_MESSAGE_CONTENT"`, "RUN_ERROR", `"CUSTOM"`, "engine.events.truncated", "AG-UI"} {
		if !aguiVocabulary.MatchString(s) {
			t.Errorf("the check misses %s", s)
		}
	}
}

// A writer with the zero policy stores every event as a row of its own and marks
// truncation and expiry with the journal's own events.
func TestZeroLogPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j, err := journal.New(memory.New(), journal.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	w, err := j.CreateLog(ctx, journal.Stream{ID: "s"}, nil, journal.LogOptions{MaxRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range []string{`{"type":"d","id":"a","text":"x"}`, `{"type":"d","id":"a","text":"y"}`, `{"type":"d","id":"a","text":"z"}`} {
		if seq, err := w.Write(ctx, json.RawMessage(ev)); err != nil || seq != int64(i+1) {
			t.Fatalf("Write %s = %d, %v; want seq %d", ev, seq, err, i+1)
		}
	}
	if _, err := w.WriteDelta(ctx, "d", "a", "x"); err == nil {
		t.Fatal("WriteDelta took a delta the policy does not know")
	}
	if _, err := w.WriteEnd(ctx, "d", json.RawMessage(`{"type":"d"}`)); err == nil {
		t.Fatal("WriteEnd took an event the policy does not say ends a run")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := readAll(t, j, "s"); len(rows) != 3 {
		t.Fatalf("rows = %v, want 3", rows)
	}

	// Past the cap a delta is dropped and marked once, with the journal's marker.
	deltas := &journal.LogPolicy{Deltas: []journal.DeltaType{{Type: "d", Key: "id", Text: "text"}}}
	w, err = j.CreateLog(ctx, journal.Stream{ID: "capped"}, nil, journal.LogOptions{MaxRows: 1, Policy: deltas})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := w.WriteDelta(ctx, "d", id, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	rows := readAll(t, j, "capped")
	if len(rows) != 2 || rows[0] != `{"type":"d","id":"a","text":"x"}` || rows[1] != `{"type":"journal.truncated","maxRows":1}` {
		t.Fatalf("rows = %v", rows)
	}

	// Retention closes a log left unfinished with the journal's expiry event.
	now = now.Add(7*24*time.Hour + time.Second)
	if res, err := j.CleanupOnce(ctx); err != nil || res.Closed != 1 {
		t.Fatalf("CleanupOnce = %+v, %v; want the unfinished log closed", res, err)
	}
	if rows := readAll(t, j, "s"); len(rows) != 1 || rows[0] != `{"type":"journal.expired","maxAge":"168h0m0s"}` {
		t.Fatalf("rows after expiry = %v", rows)
	}
}

// A writer's own policy wins over the journal's; the journal's applies to writers that
// name none and to retention, and SetLogPolicy replaces it for what comes after.
func TestLogPolicyChoice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	policy := func(delta, expired string) *journal.LogPolicy {
		return &journal.LogPolicy{
			Deltas:  []journal.DeltaType{{Type: delta, Key: "id", Text: "text"}},
			Expired: func(time.Duration) json.RawMessage { return json.RawMessage(expired) },
		}
	}
	j, err := journal.New(memory.New(), journal.Options{Now: func() time.Time { return now }, LogPolicy: policy("a", `{"type":"gone-a"}`)})
	if err != nil {
		t.Fatal(err)
	}
	write := func(id string, opts journal.LogOptions) []string {
		t.Helper()
		w, err := j.CreateLog(ctx, journal.Stream{ID: id}, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range []string{`{"type":"a","id":"1","text":"x"}`, `{"type":"a","id":"1","text":"y"}`, `{"type":"b","id":"1","text":"x"}`, `{"type":"b","id":"1","text":"y"}`} {
			if _, err := w.Write(ctx, json.RawMessage(ev)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return readAll(t, j, id)
	}
	if got := write("journals", journal.LogOptions{}); len(got) != 3 || got[0] != `{"id":"1","text":"xy","type":"a"}` {
		t.Fatalf("with the journal's policy: %v", got)
	}
	if got := write("own", journal.LogOptions{Policy: policy("b", "")}); len(got) != 3 || got[2] != `{"id":"1","text":"xy","type":"b"}` {
		t.Fatalf("with the writer's policy: %v", got)
	}
	if err := j.SetLogPolicy(policy("b", `{"type":"gone-b"}`)); err != nil {
		t.Fatal(err)
	}
	if got := write("set", journal.LogOptions{}); len(got) != 3 || got[2] != `{"id":"1","text":"xy","type":"b"}` {
		t.Fatalf("after SetLogPolicy: %v", got)
	}
	now = now.Add(8 * 24 * time.Hour)
	if _, err := j.CleanupOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, j, "journals"); len(got) != 1 || got[0] != `{"type":"gone-b"}` {
		t.Fatalf("retention after SetLogPolicy closed with %v", got)
	}
}

// A policy that cannot work is refused where it is given, before anything is stored.
func TestLogPolicyIsChecked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	text := journal.DeltaType{Type: "text", Key: "id", Text: "text"}
	for name, p := range map[string]*journal.LogPolicy{
		"delta without a type":   {Deltas: []journal.DeltaType{{Key: "id", Text: "text"}}},
		"delta without a key":    {Deltas: []journal.DeltaType{{Type: "text", Text: "text"}}},
		"delta without its text": {Deltas: []journal.DeltaType{{Type: "text", Key: "id"}}},
		"key and text the same":  {Deltas: []journal.DeltaType{{Type: "text", Key: "id", Text: "id"}}},
		"key is the type member": {Deltas: []journal.DeltaType{{Type: "text", Key: "type", Text: "text"}}},
		"a delta listed twice":   {Deltas: []journal.DeltaType{text, text}},
		"a delta that ends":      {Deltas: []journal.DeltaType{text}, Ends: []string{"text"}},
		"an empty end":           {Ends: []string{""}},
	} {
		if _, err := journal.New(memory.New(), journal.Options{LogPolicy: p}); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
		j, err := journal.New(memory.New(), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.SetLogPolicy(p); err == nil {
			t.Errorf("%s: SetLogPolicy accepted it", name)
		}
		if _, err := j.CreateLog(ctx, journal.Stream{ID: "s"}, nil, journal.LogOptions{Policy: p}); err == nil {
			t.Errorf("%s: CreateLog accepted it", name)
		}
		if _, err := j.GetStream(ctx, "s"); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("%s: CreateLog stored the stream before refusing the policy: %v", name, err)
		}
		run, err := j.Begin(ctx, journal.NewRun{Flow: "f"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.CreateLogStep(ctx, "log", func() journal.Stream { return journal.Stream{ID: "r"} }, journal.LogOptions{Policy: p}); err == nil {
			t.Errorf("%s: CreateLogStep accepted it", name)
		}
		if err := j.CreateStream(ctx, journal.Stream{ID: "old"}); err != nil {
			t.Fatal(err)
		}
		if _, err := j.NewLogWriter(ctx, "old", nil, journal.LogOptions{Policy: p}); err == nil {
			t.Errorf("%s: NewLogWriter accepted it", name)
		}
	}
}

// readAll returns a stream's stored events as strings.
func readAll(t *testing.T, j *journal.Journal, id string) []string {
	t.Helper()
	rows, err := j.ReadEvents(t.Context(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.Event)
	}
	return out
}
