package ai_test

// Tests of the agent stream route around the event rules: its options, concurrent runs,
// what the loop sends the model, runs without streaming and apps without a journal.

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// TestOmitDoneHeader checks that a caller sending Engine-Omit-Done gets the same stream
// without the final data: [DONE] frame (for stock AG-UI clients), and "0" keeps it.
func TestOmitDoneHeader(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi."}}})
	cases := []struct {
		value    string
		wantDone bool
	}{{"1", false}, {"true", false}, {"0", true}, {"", true}}
	for _, tc := range cases {
		req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/chat/plain", strings.NewReader(`{"message":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tc.value != "" {
			req.Header.Set(ai.HeaderOmitDone, tc.value)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "[DONE] sent with "+ai.HeaderOmitDone+"="+tc.value, strings.Contains(string(b), "[DONE]"), tc.wantDone)
		tr := parse(t, string(b))
		eq(t, "last event with "+ai.HeaderOmitDone+"="+tc.value, tr.types()[len(tr.frames)-1], "RUN_FINISHED")
	}
}

// TestConcurrentRunsAreIndependent checks that runs streaming at the same time in one
// app keep their own run ids, message numbering and step names.
func TestConcurrentRunsAreIndependent(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Text: "Checking.", Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}},
		{Text: "Cold."},
	}})
	const n = 6
	raws := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { // no t.Fatal off the test goroutine: keep the error
			res, err := http.Post(w.srv.URL+"/chat/plain", "application/json", strings.NewReader(`{"message":"Oslo?"}`))
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			raws[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	ids := map[string]bool{}
	for i := range raws {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		tr := parse(t, raws[i])
		id := tr.started(t).RunID
		if ids[id] {
			t.Errorf("run id %s used twice", id)
		}
		ids[id] = true
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
		eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
		for _, f := range tr.frames {
			if ev, ok := f.Event.(agui.RunFinished); ok && ev.RunID != id {
				t.Errorf("RUN_FINISHED of run %s carries runId %s", id, ev.RunID)
			}
		}
	}
	eq(t, "weather runs", w.count("weather"), n)
	eq(t, "model requests", w.model.RequestCount(), 2*n)
}

// TestHistorySentBack checks what the loop sends the model on its second turn: the
// system prompt, the user message, the assistant turn with its tool call (wire name and
// arguments as the model sent them), and the tool result tied to the call id; and that
// tools are offered under their wire names with the flow's input schema.
func TestHistorySentBack(t *testing.T) {
	t.Parallel()
	script := []turn{
		{Text: "Checking.", Calls: []call{{ID: "call_9", Name: "tools_weather", Args: `{"city":"Lima"}`}}},
		{Text: "Warm."},
	}
	const result = `{"city":"Lima","tempC":12}`
	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, setup{kind: "openai", turns: script, tools: []string{"tools.weather"},
			agentOpts: []ai.AgentOption{ai.System("You are terse.")}})
		w.stream(t, "/chat/plain", `{"message":"Lima?"}`)
		reqs := w.model.(*openaitest.Server).Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Function.Name != "tools_weather" ||
			!strings.Contains(string(reqs[0].Tools[0].Function.Parameters), `"city"`) {
			t.Errorf("tools offered: %+v", reqs[0].Tools)
		}
		eq(t, "tool description", reqs[0].Tools[0].Function.Description, "Weather of a city.")
		m := reqs[1].Messages
		if len(m) != 4 {
			t.Fatalf("second request has %d messages, want system, user, assistant, tool: %s", len(m), reqs[1].Raw)
		}
		eq(t, "system", m[0].Role+": "+m[0].Text(), "system: You are terse.")
		eq(t, "user", m[1].Role+": "+m[1].Text(), "user: Lima?")
		eq(t, "assistant role", m[2].Role, "assistant")
		eq(t, "assistant text", m[2].Text(), "Checking.")
		if len(m[2].ToolCalls) != 1 {
			t.Fatalf("assistant tool calls: %+v", m[2].ToolCalls)
		}
		tc := m[2].ToolCalls[0]
		eq(t, "tool call id", tc.ID, "call_9")
		eq(t, "tool call name", tc.Function.Name, "tools_weather")
		eq(t, "tool call arguments", tc.Function.Arguments, `{"city":"Lima"}`)
		eq(t, "tool message", m[3].Role+" "+m[3].ToolCallID+" "+m[3].Text(), "tool call_9 "+result)
	})
	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, setup{kind: "anthropic", turns: script, tools: []string{"tools.weather"},
			agentOpts: []ai.AgentOption{ai.System("You are terse.")}})
		w.stream(t, "/chat/plain", `{"message":"Lima?"}`)
		reqs := w.model.(*anthropictest.Server).Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		eq(t, "system", reqs[1].SystemText(), "You are terse.")
		if len(reqs[0].Tools) != 1 || reqs[0].Tools[0].Name != "tools_weather" ||
			!strings.Contains(string(reqs[0].Tools[0].InputSchema), `"city"`) {
			t.Errorf("tools offered: %+v", reqs[0].Tools)
		}
		m := reqs[1].Messages
		if len(m) != 3 {
			t.Fatalf("second request has %d messages, want user, assistant, user(tool_result): %s", len(m), reqs[1].Raw)
		}
		eq(t, "user", m[0].Role+": "+m[0].Content[0].Text, "user: Lima?")
		eq(t, "assistant role", m[1].Role, "assistant")
		var use *anthropictest.Block
		for i, b := range m[1].Content {
			if b.Type == "tool_use" {
				use = &m[1].Content[i]
			}
		}
		if use == nil {
			t.Fatalf("no tool_use block in %s", reqs[1].Raw)
		}
		eq(t, "tool_use id", use.ID, "call_9")
		eq(t, "tool_use name", use.Name, "tools_weather")
		eq(t, "tool_use input", string(use.Input), `{"city":"Lima"}`)
		eq(t, "tool result role", m[2].Role, "user")
		var res *anthropictest.Block
		for i, b := range m[2].Content {
			if b.Type == "tool_result" {
				res = &m[2].Content[i]
			}
		}
		if res == nil {
			t.Fatalf("no tool_result block in %s", reqs[1].Raw)
		}
		eq(t, "tool_result id", res.ToolUseID, "call_9")
		eq(t, "tool_result content", res.ContentText(), result)
	})
}

// TestRunWithoutStream checks ai.Run without Stream: the agent runs to its end inside the
// handler and the flow answers with the run's result in the envelope, not a stream.
func TestRunWithoutStream(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Text: "Looking.", Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}, Usage: &usage{In: 4, Out: 2}},
		{Text: "Cold in Oslo.", Usage: &usage{In: 6, Out: 3}},
	}})
	status, body := w.post(t, "/chat/sync", `{"message":"Oslo?"}`)
	eq(t, "status", status, http.StatusOK)
	var env struct {
		Data  ai.RunResult    `json:"data"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("reply is not an envelope: %v\n%s", err, body)
	}
	eq(t, "error", string(env.Error), "null")
	eq(t, "text", env.Data.Text, "Cold in Oslo.")
	eq(t, "stopReason", env.Data.StopReason, "completed")
	eq(t, "output", string(env.Data.Output), `{"city":"Oslo","tempC":12}`)
	if env.Data.Usage == nil || env.Data.Usage.InputTokens == nil || *env.Data.Usage.InputTokens != 10 {
		t.Errorf("usage = %+v, want 10 input tokens", env.Data.Usage)
	}
	eq(t, "weather runs", w.count("weather"), 1)
}

// TestStreamWithoutJournal checks that an app without a journal still streams agent
// runs: the same events and [DONE], with no id: lines since there is no stored log.
func TestStreamWithoutJournal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{noJournal: true, turns: []turn{
		{Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}},
		{Text: "Cold."},
	}})
	tr := w.stream(t, "/chat/plain", `{"message":"Oslo?"}`)
	if strings.Contains(tr.raw, "id:") {
		t.Errorf("frames carry ids without a stored log:\n%s", tr.raw)
	}
	eq(t, "stopReason", tr.result(t).StopReason, agui.StopCompleted)
	if !strings.HasSuffix(tr.raw, "data: [DONE]\n\n") {
		t.Errorf("no [DONE]")
	}
	golden(t, "no_journal", tr)
	res, err := http.Get(w.srv.URL + "/agent/runs/" + tr.started(t).RunID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	eq(t, "follow status without a journal", res.StatusCode, http.StatusNotFound)
}
