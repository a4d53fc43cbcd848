package journal_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// agentPolicy has the deltas and ending events of the ai package's policy for its AG-UI
// logs (ai.LogPolicy()), which the journal does not import.
var agentPolicy = &journal.LogPolicy{
	Deltas: []journal.DeltaType{
		{Type: "TEXT_MESSAGE_CONTENT", Key: "messageId", Text: "delta"},
		{Type: "TOOL_CALL_ARGS", Key: "toolCallId", Text: "delta"},
	},
	Ends: []string{"RUN_FINISHED", "RUN_ERROR"},
}

// BenchmarkLogWriterRun stores the event log of one plain agent run, as the ai package
// writes it: the structural events of one step, 200 text deltas, and the run's end in the
// write that finishes the stream. It isolates what the log costs a run on the memory
// driver (bench/'s AgentHandler measures the same inside a whole run), for A/B checks of
// changes worth a few microseconds.
func BenchmarkLogWriterRun(b *testing.B) {
	const deltas = 200
	ctx := context.Background()
	type event struct {
		typ  string
		data json.RawMessage
	}
	start := []event{
		{"RUN_STARTED", json.RawMessage(`{"type":"RUN_STARTED","threadId":"t-1","runId":"run-1"}`)},
		{"STEP_STARTED", json.RawMessage(`{"type":"STEP_STARTED","stepName":"step-1"}`)},
		{"TEXT_MESSAGE_START", json.RawMessage(`{"type":"TEXT_MESSAGE_START","messageId":"m-1","role":"assistant"}`)},
	}
	end := []event{
		{"TEXT_MESSAGE_END", json.RawMessage(`{"type":"TEXT_MESSAGE_END","messageId":"m-1"}`)},
		{"STEP_FINISHED", json.RawMessage(`{"type":"STEP_FINISHED","stepName":"step-1"}`)},
	}
	finished := json.RawMessage(`{"type":"RUN_FINISHED","threadId":"t-1","runId":"run-1","result":{"cost":0,"stopReason":"completed","output":"tok0 tok1"}}`)
	type delta struct {
		text  string
		event json.RawMessage
	}
	ds := make([]delta, deltas)
	for i := range ds {
		text := " tok" + strconv.Itoa(i%100)
		ds[i] = delta{text, json.RawMessage(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"` + text + `"}`)}
	}

	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		w, err := j.CreateLog(ctx, journal.Stream{ID: "s-" + strconv.Itoa(n)}, nil, journal.LogOptions{Policy: agentPolicy})
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range start {
			if _, err := w.WriteTyped(ctx, ev.typ, ev.data); err != nil {
				b.Fatal(err)
			}
		}
		for _, d := range ds {
			if _, err := w.WriteDelta(ctx, "TEXT_MESSAGE_CONTENT", "m-1", d.text); err != nil {
				b.Fatal(err)
			}
		}
		for _, ev := range end {
			if _, err := w.WriteTyped(ctx, ev.typ, ev.data); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.WriteEnd(ctx, "RUN_FINISHED", finished); err != nil {
			b.Fatal(err)
		}
	}
}
