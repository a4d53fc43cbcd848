package ai_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
)

// The scenarios of this file run against both real providers and their wire fakes.

// TestTextReplyOrder checks rule 1: a plain text reply is RUN_STARTED, STEP_STARTED,
// TEXT_MESSAGE_START, one or more TEXT_MESSAGE_CONTENT, TEXT_MESSAGE_END,
// STEP_FINISHED, RUN_FINISHED, then data: [DONE] as the last frame.
func TestTextReplyOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const text = "Hello there, how can I help?"
			w := newWorld(t, setup{kind: kind, turns: []turn{{Text: text}}})
			tr := w.stream(t, "/chat/plain", `{"message":"hi"}`)
			golden(t, "text_reply_"+kind, tr)
			checkFollow(t, w, "text_reply_"+kind, tr)

			types := tr.types()
			want := []string{"RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START"}
			if !slices.Equal(types[:3], want) {
				t.Fatalf("order starts %s, want %s", joined(types), joined(want))
			}
			i := 3
			for i < len(types) && types[i] == "TEXT_MESSAGE_CONTENT" {
				i++
			}
			if i == 3 {
				t.Fatalf("no TEXT_MESSAGE_CONTENT: %s", joined(types))
			}
			if !slices.Equal(types[i:], []string{"TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"}) {
				t.Fatalf("order ends %s", joined(types[i:]))
			}
			if !strings.HasSuffix(tr.raw, "\n\ndata: [DONE]\n\n") {
				t.Fatalf("the last frame is not data: [DONE]:\n%s", tr.raw)
			}
			if n := strings.Count(tr.raw, "[DONE]"); n != 1 {
				t.Errorf("[DONE] sent %d times", n)
			}
			var got strings.Builder
			for _, c := range of[agui.TextMessageContent](tr) {
				eq(t, "TEXT_MESSAGE_CONTENT.messageId", c.MessageID, "m-1")
				got.WriteString(c.Delta)
			}
			eq(t, "streamed text", got.String(), text)
			start := of[agui.TextMessageStart](tr)[0]
			eq(t, "TEXT_MESSAGE_START.messageId", start.MessageID, "m-1")
			eq(t, "TEXT_MESSAGE_START.role", start.Role, "assistant")
			eq(t, "TEXT_MESSAGE_END.messageId", of[agui.TextMessageEnd](tr)[0].MessageID, "m-1")
			eq(t, "STEP_STARTED.stepName", of[agui.StepStarted](tr)[0].StepName, "step-1")
			eq(t, "STEP_FINISHED.stepName", of[agui.StepFinished](tr)[0].StepName, "step-1")
			res := tr.result(t)
			eq(t, "stopReason", res.StopReason, agui.StopCompleted)
			eq(t, "model requests", w.model.RequestCount(), 1)
		})
	}
}

// TestToolCallStream checks a two-step run with one tool call: step names step-1,
// step-2; message ids m-1 (text), m-2 (tool result), m-3 (final text); the tool call
// events; TOOL_CALL_RESULT with role tool and the tool output as a string; and the run
// result with the last tool result as output.
func TestToolCallStream(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			u := &usage{In: 10, Out: 5}
			w := newWorld(t, setup{kind: kind, turns: []turn{
				{Text: "Let me check.", Calls: []call{{ID: "call_1", Name: "tools_weather", Args: `{"city":"Paris"}`}}, Usage: u},
				{Text: "It is 15C in Paris.", Usage: u},
			}})
			tr := w.stream(t, "/chat/plain", `{"message":"weather in Paris?"}`)
			golden(t, "tool_call_"+kind, tr)
			checkFollow(t, w, "tool_call_"+kind, tr)

			want := []string{"RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END",
				"TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT", "STEP_FINISHED",
				"STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"}
			structural := slices.DeleteFunc(tr.types(), func(s string) bool {
				return s == "TEXT_MESSAGE_CONTENT" || s == "TOOL_CALL_ARGS"
			})
			if !slices.Equal(structural, want) {
				t.Fatalf("structural order:\n got %s\nwant %s", joined(structural), joined(want))
			}
			var steps []string
			for _, s := range of[agui.StepStarted](tr) {
				steps = append(steps, s.StepName)
			}
			eq(t, "step names", joined(steps), "step-1 step-2")
			var msgIDs []string
			for _, ev := range tr.events() {
				switch e := ev.(type) {
				case agui.TextMessageStart:
					msgIDs = append(msgIDs, e.MessageID)
				case agui.ToolCallResult:
					msgIDs = append(msgIDs, e.MessageID)
				}
			}
			eq(t, "message ids", joined(msgIDs), "m-1 m-2 m-3")

			start := of[agui.ToolCallStart](tr)[0]
			eq(t, "toolCallId", start.ToolCallID, "call_1")
			eq(t, "toolCallName", start.ToolCallName, "tools.weather")
			var args strings.Builder
			for _, a := range of[agui.ToolCallArgs](tr) {
				eq(t, "TOOL_CALL_ARGS.toolCallId", a.ToolCallID, "call_1")
				args.WriteString(a.Delta)
			}
			eq(t, "joined arguments", args.String(), `{"city":"Paris"}`)
			eq(t, "TOOL_CALL_END.toolCallId", of[agui.ToolCallEnd](tr)[0].ToolCallID, "call_1")

			res := of[agui.ToolCallResult](tr)[0]
			eq(t, "TOOL_CALL_RESULT.role", res.Role, "tool")
			eq(t, "TOOL_CALL_RESULT.toolCallId", res.ToolCallID, "call_1")
			eq(t, "TOOL_CALL_RESULT.content", res.Content, `{"city":"Paris","tempC":15}`)
			if !strings.Contains(tr.raw, `"content":"{\"city\":\"Paris\",\"tempC\":15}"`) {
				t.Errorf("content is not sent as a JSON string:\n%s", tr.raw)
			}

			fin := tr.finished(t)
			started := tr.started(t)
			eq(t, "RUN_FINISHED.runId", fin.RunID, started.RunID)
			eq(t, "RUN_FINISHED.threadId", fin.ThreadID, started.ThreadID)
			eq(t, "stopReason", fin.Result.StopReason, agui.StopCompleted)
			eq(t, "output", string(fin.Result.Output), `{"city":"Paris","tempC":15}`)
			if len(fin.Usage) != 1 || fin.Usage[0].InputTokens == nil || fin.Usage[0].OutputTokens == nil {
				t.Fatalf("usage = %+v, want one element with both counts", fin.Usage)
			}
			eq(t, "usage.inputTokens", *fin.Usage[0].InputTokens, 20)
			eq(t, "usage.outputTokens", *fin.Usage[0].OutputTokens, 10)
			eq(t, "weather tool runs", w.count("weather"), 1)
			eq(t, "model requests", w.model.RequestCount(), 2)
		})
	}
}

// TestResultOutputIsLastToolResult checks that output is the last tool result, not the
// first, when one run calls tools in several steps.
func TestResultOutputIsLastToolResult(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: []turn{
				{Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Paris"}`}}},
				{Calls: []call{{ID: "c2", Name: "tools_weather", Args: `{"city":"Rome"}`}}},
				{Text: "Both done."},
			}})
			tr := w.stream(t, "/chat/plain", `{"message":"two cities"}`)
			res := tr.result(t)
			eq(t, "output", string(res.Output), `{"city":"Rome","tempC":12}`)
			eq(t, "stopReason", res.StopReason, agui.StopCompleted)
			results := of[agui.ToolCallResult](tr)
			if len(results) != 2 {
				t.Fatalf("%d tool results, want 2", len(results))
			}
			eq(t, "first result message id", results[0].MessageID, "m-1")
			eq(t, "second result message id", results[1].MessageID, "m-2")
			eq(t, "final text message id", of[agui.TextMessageStart](tr)[0].MessageID, "m-3")
		})
	}
}

// TestTextReplyOutput checks that a run without tool calls still has an output (the
// assistant text, or the provider payload the spec allows).
func TestTextReplyOutput(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Just text."}}})
	res := w.stream(t, "/chat/plain", `{"message":"hi"}`).result(t)
	var s string
	if err := json.Unmarshal(res.Output, &s); err != nil || s != "Just text." {
		t.Errorf("output = %s, want the assistant text", res.Output)
	}
}

// TestMaxStepsCountsToolCalls checks that maxSteps limits tool calls, not model calls.
func TestMaxStepsCountsToolCalls(t *testing.T) {
	t.Parallel()
	weather := func(id string) call { return call{ID: id, Name: "tools_weather", Args: `{"city":"Oslo"}`} }
	oneCall := func(n int) []turn {
		var ts []turn
		for i := range n {
			ts = append(ts, turn{Calls: []call{weather("c" + string(rune('a'+i)))}})
		}
		return ts
	}
	cases := []struct {
		name         string
		maxSteps     int
		turns        []turn
		wantRuns     int
		wantRequests int
		wantResults  int
	}{
		{"one call per turn, maxSteps 2", 2, oneCall(5), 2, 2, 2},
		{"two calls in one turn, maxSteps 1", 1, []turn{{Calls: []call{weather("c1"), weather("c2")}}, {Text: "never"}}, 1, 1, 1},
		{"default maxSteps is 6", 0, oneCall(9), 6, 6, 6},
		{"two calls per turn, maxSteps 3", 3, []turn{
			{Calls: []call{weather("c1"), weather("c2")}},
			{Calls: []call{weather("c3"), weather("c4")}},
			{Text: "never"}}, 3, 2, 3},
	}
	for _, kind := range providerKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t, setup{kind: kind, maxSteps: tc.maxSteps, turns: tc.turns})
				tr := w.stream(t, "/chat/plain", `{"message":"weather forever"}`)
				if kind == "openai" && tc.maxSteps == 2 {
					golden(t, "max_steps", tr)
					checkFollow(t, w, "max_steps", tr)
				}
				eq(t, "stopReason", tr.result(t).StopReason, agui.StopMaxSteps)
				eq(t, "tool runs", w.count("weather"), tc.wantRuns)
				eq(t, "model requests", w.model.RequestCount(), tc.wantRequests)
				eq(t, "TOOL_CALL_RESULT events", len(of[agui.ToolCallResult](tr)), tc.wantResults)
				if !strings.HasSuffix(tr.raw, "data: [DONE]\n\n") {
					t.Errorf("no [DONE] at the end")
				}
			})
		}
	}
}

// TestParentMessageID checks that TOOL_CALL_START carries parentMessageId only when its
// step emitted assistant text, and then the id of that text.
func TestParentMessageID(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: []turn{
				{Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}},
				{Text: "And now Rome.", Calls: []call{{ID: "c2", Name: "tools_weather", Args: `{"city":"Rome"}`}}},
				{Text: "Done."},
			}})
			tr := w.stream(t, "/chat/plain", `{"message":"go"}`)
			golden(t, "parent_message_"+kind, tr)
			checkFollow(t, w, "parent_message_"+kind, tr)
			starts := of[agui.ToolCallStart](tr)
			if len(starts) != 2 {
				t.Fatalf("%d TOOL_CALL_START, want 2", len(starts))
			}
			eq(t, "parentMessageId of a call in a step without text", starts[0].ParentMessageID, "")
			if strings.Count(tr.raw, "parentMessageId") != 1 {
				t.Errorf("parentMessageId sent %d times, want once", strings.Count(tr.raw, "parentMessageId"))
			}
			text := of[agui.TextMessageStart](tr)[0].MessageID
			eq(t, "text message id of step 2", text, "m-2")
			eq(t, "parentMessageId of a call after text", starts[1].ParentMessageID, text)
		})
	}
}

// TestMissingToolCallIDs checks rule 5: a tool call the provider sent without an id is
// named agent:step:index, and its events and result use that name.
func TestMissingToolCallIDs(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: []turn{
				{Calls: []call{{Name: "tools_weather", Args: `{"city":"Oslo"}`}}, OmitIDs: true},
				{Calls: []call{{Name: "tools_weather", Args: `{"city":"Rome"}`}, {Name: "tools_weather", Args: `{"city":"Nice"}`}}, OmitIDs: true},
				{Text: "Done."},
			}})
			tr := w.stream(t, "/chat/plain", `{"message":"go"}`)
			golden(t, "omitted_ids_"+kind, tr)
			checkFollow(t, w, "omitted_ids_"+kind, tr)
			want := []string{"assistant:1:0", "assistant:2:0", "assistant:2:1"}
			var starts, ends, results []string
			for _, s := range of[agui.ToolCallStart](tr) {
				starts = append(starts, s.ToolCallID)
			}
			for _, s := range of[agui.ToolCallEnd](tr) {
				ends = append(ends, s.ToolCallID)
			}
			for _, s := range of[agui.ToolCallResult](tr) {
				results = append(results, s.ToolCallID)
			}
			eq(t, "TOOL_CALL_START ids", joined(starts), joined(want))
			eq(t, "TOOL_CALL_END ids", joined(ends), joined(want))
			eq(t, "TOOL_CALL_RESULT ids", joined(results), joined(want))
			for _, a := range of[agui.ToolCallArgs](tr) {
				if !slices.Contains(want, a.ToolCallID) {
					t.Errorf("TOOL_CALL_ARGS with id %q", a.ToolCallID)
				}
			}
			eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
		})
	}
}

// TestReusedToolCallIDsStayDistinct checks that tool calls stay distinguishable on the
// wire when a provider reuses a call id, within one turn or across turns: every
// TOOL_CALL_START of a run has its own toolCallId, and each result names its own call.
func TestReusedToolCallIDsStayDistinct(t *testing.T) {
	t.Parallel()
	weather := func(city string) call {
		return call{ID: "call_0", Name: "tools_weather", Args: `{"city":"` + city + `"}`}
	}
	w := newWorld(t, setup{turns: []turn{
		{Calls: []call{weather("Oslo"), weather("Rome")}},
		{Calls: []call{weather("Nice")}},
		{Text: "Done."},
	}})
	tr := w.stream(t, "/chat/plain", `{"message":"three cities"}`)
	seen := map[string]bool{}
	for _, s := range of[agui.ToolCallStart](tr) {
		if seen[s.ToolCallID] {
			t.Errorf("toolCallId %q started twice in one run", s.ToolCallID)
		}
		seen[s.ToolCallID] = true
	}
	eq(t, "distinct tool calls", len(seen), 3)
	answered := map[string]bool{}
	for _, r := range of[agui.ToolCallResult](tr) {
		if !seen[r.ToolCallID] || answered[r.ToolCallID] {
			t.Errorf("TOOL_CALL_RESULT for %q does not name one started call of its own", r.ToolCallID)
		}
		answered[r.ToolCallID] = true
	}
	eq(t, "weather runs", w.count("weather"), 3)
}
