package ai_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx/agent"
)

// subagentNotice is the value of the subagent CUSTOM events.
type subagentNotice struct {
	Agent   string          `json:"agent"`
	RunID   string          `json:"runId"`
	Result  json.RawMessage `json:"result"`
	Message string          `json:"message"`
}

// TestSubagentNotices checks that a tool flow running another agent with ai.Run makes
// the parent stream carry CUSTOM engine.subagent.started and .finished (and .error when
// the nested agent fails), which clientx/agent readers rename to subagent.*.
func TestSubagentNotices(t *testing.T) {
	t.Parallel()
	parent := []turn{
		{Calls: []call{{ID: "r1", Name: "tools_research", Args: `{"topic":"tides"}`}}},
		{Text: "The moon does it."},
	}
	for _, kind := range providerKinds {
		t.Run(kind+"/finished", func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: parent, subTurns: []turn{{Text: "Tides follow the moon."}}})
			tr := w.stream(t, "/chat/plain", `{"message":"why tides?"}`)
			if kind == "openai" {
				golden(t, "subagent", tr)
				checkFollow(t, w, "subagent", tr)
			}
			for _, name := range []string{"engine.subagent.started", "engine.subagent.finished"} {
				if !strings.Contains(tr.raw, `"name":"`+name+`"`) {
					t.Errorf("the wire does not carry CUSTOM %s:\n%s", name, tr.raw)
				}
			}
			customs := of[agui.Custom](tr)
			var names []string
			for _, c := range customs {
				names = append(names, c.Name)
			}
			eq(t, "CUSTOM names as read", joined(names), agent.SubagentStarted+" "+agent.SubagentFinished)
			var started, finished subagentNotice
			if err := json.Unmarshal(customs[0].Value, &started); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(customs[1].Value, &finished); err != nil {
				t.Fatal(err)
			}
			eq(t, "started.agent", started.Agent, "researcher")
			eq(t, "finished.agent", finished.Agent, "researcher")
			eq(t, "finished.runId", finished.RunID, started.RunID)
			if started.RunID == "" || started.RunID == tr.started(t).RunID {
				t.Errorf("subagent run id %q must be its own, not the parent's", started.RunID)
			}
			if !strings.Contains(string(finished.Result), `"stopReason":"completed"`) {
				t.Errorf("finished.result = %s", finished.Result)
			}
			types := tr.types()
			iStart := slices.Index(types, "CUSTOM")
			iResult := slices.Index(types, "TOOL_CALL_RESULT")
			if iStart < slices.Index(types, "TOOL_CALL_END") || iResult < iStart+1 || types[iStart+1] != "CUSTOM" {
				t.Errorf("the notices must sit between the research call and its result: %s", joined(types))
			}
			res := of[agui.ToolCallResult](tr)[0]
			eq(t, "research result", res.Content, `"Tides follow the moon."`)
			// The nested run surfaces only as CUSTOM notices: its own events stay out.
			eq(t, "TEXT_MESSAGE_START events (the parent's answer only)", len(of[agui.TextMessageStart](tr)), 1)
			eq(t, "RUN_STARTED events", len(of[agui.RunStarted](tr)), 1)
			eq(t, "RUN_FINISHED events", len(of[agui.RunFinished](tr)), 1)
			eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
			eq(t, "subagent model requests", w.sub.RequestCount(), 1)
		})
		t.Run(kind+"/error", func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: parent, subTurns: []turn{{Status: 400, ErrMsg: "researcher is out"}}})
			tr := w.stream(t, "/chat/plain", `{"message":"why tides?"}`)
			if kind == "openai" {
				golden(t, "subagent_error", tr)
				checkFollow(t, w, "subagent_error", tr)
			}
			var names []string
			var failed subagentNotice
			for _, c := range of[agui.Custom](tr) {
				names = append(names, c.Name)
				if c.Name == agent.SubagentError {
					if err := json.Unmarshal(c.Value, &failed); err != nil {
						t.Fatal(err)
					}
				}
			}
			eq(t, "CUSTOM names as read", joined(names), agent.SubagentStarted+" "+agent.SubagentError)
			if !strings.Contains(tr.raw, `"name":"engine.subagent.error"`) {
				t.Errorf("the wire does not carry CUSTOM engine.subagent.error")
			}
			eq(t, "error.agent", failed.Agent, "researcher")
			if !strings.Contains(failed.Message, "researcher is out") {
				t.Errorf("error.message %q lost the cause", failed.Message)
			}
			// The research tool returned the failure, so for the parent the tool threw.
			eq(t, "stopReason", tr.result(t).StopReason, agui.StopError)
		})
	}
}

// TestNestedSubagentNotices checks a subagent that runs a subagent of its own
// (researcher → research tool → researcher): the parent stream carries a started and a
// finished notice for each nested run, paired by runId and properly nested, and the
// innermost answer is passed up.
func TestNestedSubagentNotices(t *testing.T) {
	t.Parallel()
	// Asked about "deep", the researcher researches "shallow"; asked about "shallow" it
	// answers; given a tool result it passes it on.
	sub := scripted.Func(func(req ai.Request) scripted.Turn {
		for _, m := range req.Messages {
			if m.Role == ai.RoleTool {
				return scripted.Turn{Text: "Deep: " + m.Content}
			}
		}
		if req.Messages[0].Content == "deep" {
			return scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "n1", Name: "tools_research", Arguments: `{"topic":"shallow"}`}}}
		}
		return scripted.Turn{Text: "shallow fact"}
	})
	w := newWorld(t, setup{subProvider: sub, subTools: []string{"tools.research"}, turns: []turn{
		{Calls: []call{{ID: "r1", Name: "tools_research", Args: `{"topic":"deep"}`}}},
		{Text: "Done."},
	}})
	tr := w.stream(t, "/chat/plain", `{"message":"dig"}`)
	verifyAGUI(t, tr.raw, false)
	eq(t, "research runs", w.count("research"), 2)
	var trail []string
	open := []string{}
	for _, c := range of[agui.Custom](tr) {
		var n subagentNotice
		if err := json.Unmarshal(c.Value, &n); err != nil {
			t.Fatal(err)
		}
		trail = append(trail, c.Name)
		switch c.Name {
		case agent.SubagentStarted:
			open = append(open, n.RunID)
		case agent.SubagentFinished:
			if len(open) == 0 || open[len(open)-1] != n.RunID {
				t.Errorf("finished notice for %s does not close the innermost open run %v", n.RunID, open)
			} else {
				open = open[:len(open)-1]
			}
		}
	}
	eq(t, "notices", joined(trail), strings.Join([]string{agent.SubagentStarted, agent.SubagentStarted, agent.SubagentFinished, agent.SubagentFinished}, " "))
	eq(t, "research result", of[agui.ToolCallResult](tr)[0].Content, `"Deep: \"shallow fact\""`)
	eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
}

// TestNestedSubagentError checks that a failing inner subagent's error notice reaches
// the parent stream too, between the notices of the agent that ran it.
func TestNestedSubagentError(t *testing.T) {
	t.Parallel()
	sub := scripted.Func(func(req ai.Request) scripted.Turn {
		for _, m := range req.Messages {
			if m.Role == ai.RoleTool {
				return scripted.Turn{Text: "never: the tool threw"}
			}
		}
		if req.Messages[0].Content == "deep" {
			return scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "n1", Name: "tools_research", Arguments: `{"topic":"shallow"}`}}}
		}
		return scripted.Turn{Err: errors.New("inner researcher is down")}
	})
	w := newWorld(t, setup{subProvider: sub, subTools: []string{"tools.research"}, turns: []turn{
		{Calls: []call{{ID: "r1", Name: "tools_research", Args: `{"topic":"deep"}`}}},
		{Text: "never"},
	}})
	tr := w.stream(t, "/chat/plain", `{"message":"dig"}`)
	verifyAGUI(t, tr.raw, false)
	var names []string
	var inner subagentNotice
	for _, c := range of[agui.Custom](tr) {
		names = append(names, c.Name)
		if c.Name == agent.SubagentError {
			if err := json.Unmarshal(c.Value, &inner); err != nil {
				t.Fatal(err)
			}
		}
	}
	eq(t, "notices", joined(names), strings.Join([]string{agent.SubagentStarted, agent.SubagentStarted, agent.SubagentError, agent.SubagentFinished}, " "))
	if !strings.Contains(inner.Message, "inner researcher is down") {
		t.Errorf("inner error message %q lost the cause", inner.Message)
	}
	// The outer researcher ends with stop reason error, which ai.Run reports in the
	// result rather than as an error; the research tool passes its (empty) text on, so
	// the parent's model answers and the parent completes.
	eq(t, "parent stopReason", tr.result(t).StopReason, agui.StopCompleted)
}
