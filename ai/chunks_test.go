package ai_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
)

// chunkProvider plays raw chunk sequences, one per turn, chosen by the number of
// assistant messages: for chunk orders the wire fakes never send (text after a tool
// call in one turn), which real models can.
type chunkProvider struct{ turns [][]ai.Chunk }

func (chunkProvider) Name() string { return "chunks" }

func (p chunkProvider) Stream(_ context.Context, req ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(yield func(ai.Chunk, error) bool) {
		n := 0
		for _, m := range req.Messages {
			if m.Role == ai.RoleAssistant {
				n++
			}
		}
		if n >= len(p.turns) {
			yield(ai.Chunk{}, fmt.Errorf("chunks: no turn %d", n+1))
			return
		}
		for _, c := range p.turns[n] {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// TestTextAfterToolCallInOneTurn checks a turn whose text resumes after a tool call:
// the events must stay a valid AG-UI sequence (no second TEXT_MESSAGE_START for a
// message id that already ended), and the text the model gets back is the whole text.
func TestTextAfterToolCallInOneTurn(t *testing.T) {
	t.Parallel()
	prov := chunkProvider{turns: [][]ai.Chunk{
		{
			{Text: "Let me "},
			{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "c1", Name: "tools_weather", ArgsDelta: `{"city":"Oslo"}`}},
			{Text: "check."},
			{FinishReason: "tool_calls"},
		},
		{{Text: "Cold."}, {FinishReason: "stop"}},
	}}
	w := newWorld(t, setup{provider: prov})
	tr := w.stream(t, "/chat/plain", `{"message":"Oslo?"}`)
	verifyAGUI(t, tr.raw, false)
	started := map[string]int{}
	for _, s := range of[agui.TextMessageStart](tr) {
		started[s.MessageID]++
		if started[s.MessageID] > 1 {
			t.Errorf("TEXT_MESSAGE_START for %s sent twice:\n%s", s.MessageID, tr.raw)
		}
	}
	eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
	eq(t, "weather runs", w.count("weather"), 1)
}

// TestToolNameAfterID checks a provider that sends a tool call's id first and its name
// in a later chunk (the ai.ToolCallDelta contract allows it): TOOL_CALL_START must still
// name the tool.
func TestToolNameAfterID(t *testing.T) {
	t.Parallel()
	prov := chunkProvider{turns: [][]ai.Chunk{
		{
			{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "c1"}},
			{ToolCall: &ai.ToolCallDelta{Index: 0, Name: "tools_weather", ArgsDelta: `{"city":`}},
			{ToolCall: &ai.ToolCallDelta{Index: 0, ArgsDelta: `"Oslo"}`}},
		},
		{{Text: "Cold."}},
	}}
	w := newWorld(t, setup{provider: prov})
	tr := w.stream(t, "/chat/plain", `{"message":"Oslo?"}`)
	starts := of[agui.ToolCallStart](tr)
	if len(starts) != 1 {
		t.Fatalf("%d TOOL_CALL_START:\n%s", len(starts), tr.raw)
	}
	eq(t, "toolCallName", starts[0].ToolCallName, "tools.weather")
	eq(t, "weather runs", w.count("weather"), 1)
}

// TestChunkEdgeCases pins the loop's handling of provider streams the wire fakes do not
// produce.
func TestChunkEdgeCases(t *testing.T) {
	t.Parallel()
	cost := 0.3
	cases := []struct {
		name  string
		turns [][]ai.Chunk
		check func(t *testing.T, w *world, tr transcript)
	}{
		{"spend reported without token counts", [][]ai.Chunk{{{Text: "Hi."}, {Usage: &ai.Usage{Cost: &cost}}}},
			func(t *testing.T, w *world, tr transcript) {
				eq(t, "cost", tr.result(t).Cost, 0.3)
				if len(tr.finished(t).Usage) != 0 {
					t.Errorf("usage sent without counts: %+v", tr.finished(t).Usage)
				}
			}},
		{"failure after a partial tool call", [][]ai.Chunk{{
			{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "c1", Name: "tools_weather", ArgsDelta: `{"ci`}},
		}}, func(t *testing.T, w *world, tr transcript) {
			eq(t, "RUN_ERROR.code", tr.runError(t).Code, ai.CodeProviderError)
			eq(t, "weather runs", w.count("weather"), 0)
		}},
		{"interleaved tool calls", [][]ai.Chunk{{
			{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "c1", Name: "tools_weather"}},
			{ToolCall: &ai.ToolCallDelta{Index: 1, ID: "c2", Name: "tools_weather"}},
			{ToolCall: &ai.ToolCallDelta{Index: 0, ArgsDelta: `{"city":"Oslo"}`}},
		}}, func(t *testing.T, w *world, tr transcript) {
			eq(t, "RUN_ERROR.code", tr.runError(t).Code, ai.CodeProviderError)
			eq(t, "weather runs", w.count("weather"), 0)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{provider: chunkProvider{turns: tc.turns}})
			tr := w.stream(t, "/chat/plain", `{"message":"go"}`)
			verifyAGUI(t, tr.raw, false)
			tc.check(t, w, tr)
		})
	}
}

// TestMessageIDsAcrossResumeWithSplitText checks that message numbering survives a
// durable resume when a replayed turn had two text segments (text, a tool call needing
// approval, more text): the resumed run continues m-3, m-4 and no id is used twice.
func TestMessageIDsAcrossResumeWithSplitText(t *testing.T) {
	t.Parallel()
	prov := chunkProvider{turns: [][]ai.Chunk{
		{
			{Text: "Paying "},
			{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "t1", Name: "tools_transfer", ArgsDelta: `{"to":"bob","amount":500}`}},
			{Text: "bob."},
		},
		{{Text: "Paid."}},
	}}
	w := newWorld(t, setup{provider: prov})
	live := w.stream(t, "/chat", `{"message":"pay bob"}`)
	in := interruptOf(t, live)
	status, body := w.post(t, "/agent/approvals/approve", fmt.Sprintf(`{"id":%q}`, in.ID))
	if status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	follow := w.follow(t, live.started(t).RunID, "")
	verifyAGUI(t, follow.raw, true)
	var ids []string
	for _, ev := range follow.events() {
		switch e := ev.(type) {
		case agui.TextMessageStart:
			ids = append(ids, e.MessageID)
		case agui.ToolCallResult:
			ids = append(ids, e.MessageID)
		}
	}
	eq(t, "message ids", joined(ids), "m-1 m-2 m-3 m-4")
	eq(t, "transfers", w.count("transfer"), 1)
	eq(t, "stopReason", follow.result(t).StopReason, agui.StopCompleted)
}

// TestDeltaEscaping checks that text and argument deltas with characters JSON must
// escape (quotes, backslashes, newlines, control characters, U+2028, HTML-ish text,
// emoji, invalid UTF-8) arrive as valid JSON frames, live and in the stored log, and that
// valid text round-trips exactly.
func TestDeltaEscaping(t *testing.T) {
	t.Parallel()
	pieces := []string{"say \"hi\"", " back\\slash", "\nnew\tline\r", " \x01\x1f ctl", " \u2028sep\u2029", " </script>&<b>", " 🌍é", " end"}
	args := `{"city":"Qu\"ébec\n🌍"}`
	var turn1 []ai.Chunk
	for _, p := range pieces {
		turn1 = append(turn1, ai.Chunk{Text: p})
	}
	turn1 = append(turn1,
		ai.Chunk{ToolCall: &ai.ToolCallDelta{Index: 0, ID: "c1", Name: "tools_weather", ArgsDelta: args[:9]}},
		ai.Chunk{ToolCall: &ai.ToolCallDelta{Index: 0, ArgsDelta: args[9:]}})
	prov := chunkProvider{turns: [][]ai.Chunk{turn1, {{Text: "bad \xff byte"}}}}
	w := newWorld(t, setup{provider: prov})
	live := w.stream(t, "/chat/plain", `{"message":"escape"}`)
	follow := w.follow(t, live.started(t).RunID, "")
	verifyAGUI(t, live.raw, false)
	verifyAGUI(t, follow.raw, true)
	for name, tr := range map[string]transcript{"live": live, "follow": follow} {
		texts := map[string]string{}
		for _, c := range of[agui.TextMessageContent](tr) {
			texts[c.MessageID] += c.Delta
		}
		eq(t, name+" text m-1", texts["m-1"], strings.Join(pieces, ""))
		if !strings.Contains(texts["m-3"], "bad ") || !strings.Contains(texts["m-3"], " byte") {
			t.Errorf("%s text m-3 = %q", name, texts["m-3"])
		}
		var got string
		for _, a := range of[agui.ToolCallArgs](tr) {
			got += a.Delta
		}
		eq(t, name+" arguments", got, args)
	}
	eq(t, "tool result", of[agui.ToolCallResult](live)[0].Content, `{"city":"Qu\"ébec\n🌍","tempC":`+fmt.Sprint(len("Qu\"ébec\n🌍")*3)+`}`)
}
