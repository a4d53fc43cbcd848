package ai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// requests returns what the openai fake of w received.
func requests(t *testing.T, w *world) []openaitest.Request {
	t.Helper()
	f, ok := w.model.(*openaitest.Server)
	if !ok {
		t.Fatalf("the scenario's model is %T, want the openai fake", w.model)
	}
	return f.Requests()
}

// envelopeError decodes the error of an envelope body.
func envelopeError(t *testing.T, body string) (code string, data map[string]any) {
	t.Helper()
	var env struct {
		Error *struct {
			Code string         `json:"code"`
			Data map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error == nil {
		t.Fatalf("not an error envelope: %s", body)
	}
	return env.Error.Code, env.Error.Data
}

// checkIssue checks that a reply is a 400 ValidationError with one issue, at path, whose
// message contains want.
func checkIssue(t *testing.T, status int, body, path, want string) {
	t.Helper()
	eq(t, "status", status, http.StatusBadRequest)
	code, data := envelopeError(t, body)
	eq(t, "code", code, "ValidationError")
	issues, _ := data["issues"].([]any)
	if len(issues) != 1 {
		t.Fatalf("issues %v, want one", data)
	}
	issue := issues[0].(map[string]any)
	eq(t, "issue path", issue["path"], any(path))
	if msg, _ := issue["message"].(string); !strings.Contains(msg, want) {
		t.Errorf("issue message %q, want it to contain %q", msg, want)
	}
}

// TestAGUIHistory checks that a whole AG-UI conversation, as a stock client sends it
// back on its second turn, reaches the model: user content parts, an assistant message
// with tool calls and no content, the tool result, system and developer messages; and
// that activity and reasoning messages are dropped. The client's runId is not used.
func TestAGUIHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Still 18."}}})
	body := `{"threadId":"thread-1","runId":"client-run-2","state":{},"tools":[],"context":[],"forwardedProps":{},
	"messages":[
	 {"id":"s","role":"system","content":"Be brief."},
	 {"id":"d","role":"developer","content":"Answer in English."},
	 {"id":"u1","role":"user","content":[{"type":"text","text":"weather in "},{"type":"text","text":"Paris?"}]},
	 {"id":"a1","role":"assistant","toolCalls":[{"id":"call_w","type":"function","function":{"name":"tools.weather","arguments":"{\"city\":\"Paris\"}"}}]},
	 {"id":"t1","role":"tool","toolCallId":"call_w","content":"{\"city\":\"Paris\",\"tempC\":15}"},
	 {"id":"r1","role":"reasoning","content":"the user wants weather"},
	 {"id":"x1","role":"activity","activityType":"progress","content":{"done":1}},
	 {"id":"a2","role":"assistant","content":"It is 15 in Paris."},
	 {"id":"u2","role":"user","content":"and now?"}]}`
	tr := w.stream(t, "/chat/agui", body)
	st := tr.started(t)
	eq(t, "threadId", st.ThreadID, "thread-1")
	if !runIDShape.MatchString(st.RunID) {
		t.Errorf("runId %q: want the engine's own run id, not the client's", st.RunID)
	}
	reqs := requests(t, w)
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	var got []string
	for _, m := range reqs[0].Messages {
		s := m.Role + ": " + m.Text()
		for _, c := range m.ToolCalls {
			s += " [" + c.ID + " " + c.Function.Name + " " + c.Function.Arguments + "]"
		}
		if m.ToolCallID != "" {
			s += " (" + m.ToolCallID + ")"
		}
		got = append(got, s)
	}
	want := []string{
		"system: Be brief.",
		"system: Answer in English.",
		"user: weather in Paris?",
		`assistant:  [call_w tools_weather {"city":"Paris"}]`,
		`tool: {"city":"Paris","tempC":15} (call_w)`,
		"assistant: It is 15 in Paris.",
		"user: and now?",
	}
	// The provider puts the agent's system prompt first when there is one; this agent has none.
	eq(t, "conversation sent to the model", strings.Join(got, "\n"), strings.Join(want, "\n"))
}

// TestAGUIHistoryErrors checks that a history no provider would accept is a
// ValidationError naming the message, before any event and before the model is called.
func TestAGUIHistoryErrors(t *testing.T) {
	t.Parallel()
	call := `{"id":"a","role":"assistant","toolCalls":[{"id":"c1","type":"function","function":{"name":"tools.weather","arguments":"{}"}}]}`
	cases := []struct {
		name, messages, path, want string
	}{
		{"result answering no call", `[{"id":"u","role":"user","content":"hi"},{"id":"t","role":"tool","toolCallId":"nope","content":"x"}]`,
			"messages[1].toolCallId", "answers no tool call"},
		{"call with no result", `[{"id":"u","role":"user","content":"hi"},` + call + `]`,
			"messages[1].toolCalls[0]", `tool call "c1" has no result`},
		{"call answered too late", `[{"id":"u","role":"user","content":"hi"},` + call + `,{"id":"u2","role":"user","content":"?"},{"id":"t","role":"tool","toolCallId":"c1","content":"x"}]`,
			"messages[1].toolCalls[0]", `tool call "c1" has no result`},
		{"result answered twice", `[{"id":"u","role":"user","content":"hi"},` + call + `,{"id":"t","role":"tool","toolCallId":"c1","content":"x"},{"id":"t2","role":"tool","toolCallId":"c1","content":"x"}]`,
			"messages[3].toolCallId", "answers no tool call"},
		{"image part", `[{"id":"u","role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"url","value":"https://x"}}]}]`,
			"messages[0].content[1]", "only text parts"},
		{"unknown role", `[{"id":"u","role":"robot","content":"hi"}]`, "messages[0].role", "role must be"},
		{"two calls with one id", `[{"id":"u","role":"user","content":"hi"},{"id":"a","role":"assistant","toolCalls":[` +
			`{"id":"c1","type":"function","function":{"name":"tools.weather","arguments":"{}"}},` +
			`{"id":"c1","type":"function","function":{"name":"tools.weather","arguments":"{\"city\":\"Oslo\"}"}}]},` +
			`{"id":"t","role":"tool","toolCallId":"c1","content":"x"}]`,
			"messages[1].toolCalls[1].id", `tool call id "c1" is used twice in the message`},
	}
	w := newWorld(t, setup{turns: []turn{{Text: "never"}}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, body := w.post(t, "/chat/agui", `{"threadId":"t","runId":"r","messages":`+tc.messages+`}`)
			checkIssue(t, status, body, tc.path, tc.want)
		})
	}
	t.Cleanup(func() { eq(t, "model requests", w.model.RequestCount(), 0) })
}

// TestClientToolNameErrors checks that a client tool whose name no provider accepts (once
// its dots become underscores) is a ValidationError at its name, before any event and
// before the model is called.
func TestClientToolNameErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "never"}}})
	for _, name := range []string{"ask user", "ask/user", "ask:user", "frågan", strings.Repeat("x", 65), "ui." + strings.Repeat("x", 62)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tools := fmt.Sprintf(`[{"name":"ok.tool","parameters":{"type":"object"}},{"name":%q,"parameters":{"type":"object"}}]`, name)
			status, body := w.post(t, "/chat/agui", `{"threadId":"t","runId":"r","tools":`+tools+`,"messages":[{"id":"u","role":"user","content":"hi"}]}`)
			checkIssue(t, status, body, "tools[1].name", fmt.Sprintf("must be 1 to 64 letters, digits, '_', '-' or '.' (sent to the model as '_'), got %q", name))
		})
	}
	t.Cleanup(func() { eq(t, "model requests", w.model.RequestCount(), 0) })
}

// TestClientTool checks the frontend-tool pattern: the client's tool is offered beside
// the agent's, a call to it streams TOOL_CALL_START/ARGS/END and ends the run with the
// call pending, nothing runs on the server, and the next run continues with the
// client's result. A client tool named like an agent tool is not offered: the agent's
// wins.
func TestClientTool(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{tools: []string{"tools.weather"}, turns: []turn{
		{Calls: []call{{ID: "call_ask", Name: "askUser", Args: `{"question":"Which city?"}`}}},
		{Calls: []call{{ID: "call_w", Name: "tools_weather", Args: `{"city":"Oslo"}`}}},
		{Text: "It is 12 in Oslo."},
	}})
	tools := `[{"name":"askUser","description":"Ask the user a question.","parameters":{"type":"object","properties":{"question":{"type":"string"}}}},
	 {"name":"tools.weather","description":"a client impostor","parameters":{"type":"object"}}]`
	user := `{"id":"u1","role":"user","content":"weather?"}`
	tr := w.stream(t, "/chat/agui", `{"threadId":"th","runId":"r1","tools":`+tools+`,"messages":[`+user+`]}`)
	eq(t, "first run", joined(squeeze(tr.types())), "RUN_STARTED STEP_STARTED TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END STEP_FINISHED RUN_FINISHED")
	golden(t, "agui_client_tool", tr)
	start := of[agui.ToolCallStart](tr)[0]
	eq(t, "tool name", start.ToolCallName, "askUser")
	fin := tr.finished(t)
	if fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeSuccess || strings.Join(fin.Outcome.PendingToolCallIDs, ",") != "call_ask" {
		t.Errorf("outcome %+v, want success with pendingToolCallIds [call_ask]", fin.Outcome)
	}
	eq(t, "stop reason", string(fin.Result.StopReason), "completed")
	reqs := requests(t, w)
	var offered []string
	for _, tool := range reqs[0].Tools {
		offered = append(offered, tool.Function.Name)
	}
	eq(t, "tools offered", strings.Join(offered, " "), "tools_weather askUser")

	// The client ran askUser and continues.
	second := `{"threadId":"th","runId":"r2","tools":` + tools + `,"messages":[` + user + `,
	 {"id":"a1","role":"assistant","toolCalls":[{"id":"call_ask","type":"function","function":{"name":"askUser","arguments":"{\"question\":\"Which city?\"}"}}]},
	 {"id":"t1","role":"tool","toolCallId":"call_ask","content":"Oslo"}]}`
	tr2 := w.stream(t, "/chat/agui", second)
	eq(t, "second run result", tr2.result(t).StopReason, agui.StopCompleted)
	if tr2.finished(t).Outcome != nil {
		t.Errorf("second run outcome %+v, want none: nothing is pending", tr2.finished(t).Outcome)
	}
	eq(t, "server weather runs", w.count("weather"), 1)
	reqs = requests(t, w)
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	eq(t, "client result reaches the model", last.Role+": "+last.Text(), "tool: Oslo")
}

// TestContextReachesModel checks that RunAgentInput.context is system context.
func TestContextReachesModel(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{agentOpts: []ai.AgentOption{ai.System("You help.")}, turns: []turn{{Text: "ok"}}})
	w.stream(t, "/chat/agui", `{"threadId":"t","runId":"r","context":[{"description":"user timezone","value":"Europe/Oslo"}],"messages":[{"id":"u","role":"user","content":"hi"}]}`)
	sys := requests(t, w)[0].Messages[0]
	eq(t, "system prompt", sys.Role+": "+sys.Text(), "system: You help.\n\nContext from the client:\n- user timezone: Europe/Oslo")
}

// parkTransfer starts a run whose model calls tools.transfer with amount 500 (it parks)
// and returns the parked stream's last event.
func parkTransfer(t *testing.T, w *world) agui.RunFinished {
	t.Helper()
	tr := w.stream(t, "/chat/agui", `{"threadId":"th","runId":"r1","messages":[{"id":"u","role":"user","content":"send bob 500"}]}`)
	fin := tr.finished(t)
	if fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 {
		t.Fatalf("want one interrupt, got %+v", fin.Outcome)
	}
	in := fin.Outcome.Interrupts[0]
	eq(t, "interrupt toolCallId", in.ToolCallID, "call_t")
	if in.Message == "" || len(in.ResponseSchema) == 0 || in.ExpiresAt.IsZero() || in.Payload.Tool != "tools.transfer" {
		t.Errorf("interrupt lacks what AG-UI clients read: %+v", in)
	}
	return fin
}

// TestResume checks approvals answered in-protocol: resolved approves (with edited
// args), cancelled denies with the reason, and the same response streams the resumed
// run under the parked run's id.
func TestResume(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, status, payload string
		ran                   int
		result                string
	}{
		{"approve", "resolved", `null`, 1, `{"ok":true,"to":"bob","amount":500}`},
		{"approve with edits", "resolved", `{"args":{"to":"bob","amount":50}}`, 1, `{"ok":true,"to":"bob","amount":50}`},
		{"deny", "cancelled", `{"reason":"too much"}`, 0, `{"error":{"code":"Denied","data":{"reason":"too much"}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{turns: []turn{
				{Calls: []call{{ID: "call_t", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}},
				{Text: "Done."},
			}})
			fin := parkTransfer(t, w)
			id := fin.Outcome.Interrupts[0].ID
			tr := w.stream(t, "/chat/agui", fmt.Sprintf(`{"threadId":"th","runId":"r2","messages":[],"resume":[{"interruptId":%q,"status":%q,"payload":%s}]}`, id, tc.status, tc.payload))
			eq(t, "resumed run id", tr.started(t).RunID, fin.RunID)
			if tc.name == "approve with edits" {
				golden(t, "agui_resume", tr)
			}
			res := of[agui.ToolCallResult](tr)
			if len(res) != 1 {
				t.Fatalf("%d tool results, want 1: %v", len(res), tr.types())
			}
			eq(t, "tool result", res[0].Content, tc.result)
			eq(t, "transfers run", w.count("transfer"), tc.ran)
			eq(t, "stop reason", tr.result(t).StopReason, agui.StopCompleted)
			if tr.frames[0].Seq <= 0 {
				t.Errorf("first relayed frame has seq %d, want the log's seq", tr.frames[0].Seq)
			}
			// The log holds the same run: a follower sees the park and the resumed run.
			follow := w.follow(t, fin.RunID, "")
			eq(t, "follow ends like the resume response", follow.frames[len(follow.frames)-1].Seq, tr.frames[len(tr.frames)-1].Seq)
		})
	}
}

// TestResumeErrors checks that a resume that cannot be decided is refused before any
// event: partial answers, unknown or malformed interrupts, edited args that do not fit
// the tool, a second answer, and an expired interrupt.
func TestResumeErrors(t *testing.T) {
	t.Parallel()
	twoCalls := []turn{{Calls: []call{
		{ID: "call_a", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`},
		{ID: "call_b", Name: "tools_transfer", Args: `{"to":"eve","amount":700}`},
	}}, {Text: "Done."}}
	resumeBody := func(entries ...string) string {
		return `{"threadId":"th","runId":"r","messages":[],"resume":[` + strings.Join(entries, ",") + `]}`
	}
	entry := func(id, status, payload string) string {
		return fmt.Sprintf(`{"interruptId":%q,"status":%q,"payload":%s}`, id, status, payload)
	}
	check := func(t *testing.T, w *world, body string, status int, code, want string) {
		t.Helper()
		got, raw := w.post(t, "/chat/agui", body)
		eq(t, "status", got, status)
		c, data := envelopeError(t, raw)
		eq(t, "code", c, code)
		if b, _ := json.Marshal(data); !strings.Contains(string(b), want) {
			t.Errorf("error data %s, want it to mention %q", b, want)
		}
	}

	t.Run("partial, bad args, then both", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, setup{turns: twoCalls})
		tr := w.stream(t, "/chat/agui", `{"threadId":"th","runId":"r1","messages":[{"id":"u","role":"user","content":"pay"}]}`)
		ins := tr.finished(t).Outcome.Interrupts
		if len(ins) != 2 {
			t.Fatalf("%d interrupts, want 2", len(ins))
		}
		check(t, w, resumeBody(entry(ins[0].ID, "resolved", "null")), 400, "ValidationError", "not answered: "+ins[1].ID)
		check(t, w, resumeBody(entry(ins[0].ID, "resolved", `{"args":{"to":"bob","amount":"lots"}}`), entry(ins[1].ID, "cancelled", "null")),
			400, "ValidationError", "resume[0].payload.args")
		check(t, w, resumeBody(entry(ins[0].ID, "approved", "null"), entry(ins[1].ID, "cancelled", "null")), 400, "ValidationError", "resume[0].status")
		check(t, w, resumeBody(entry("bm90LWEtcnVu", "resolved", "null")), 404, "NotFound", "no approval is waiting")
		check(t, w, resumeBody(entry("%%%", "resolved", "null")), 404, "NotFound", "no approval is waiting")
		eq(t, "nothing decided yet: transfers", w.count("transfer"), 0)
		tr2 := w.stream(t, "/chat/agui", resumeBody(entry(ins[0].ID, "resolved", "null"), entry(ins[1].ID, "cancelled", `{"reason":"no"}`)))
		eq(t, "resumed", tr2.result(t).StopReason, agui.StopCompleted)
		eq(t, "transfers", w.count("transfer"), 1)
		check(t, w, resumeBody(entry(ins[0].ID, "resolved", "null"), entry(ins[1].ID, "cancelled", "null")), 409, "Conflict", "already decided")
	})

	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t, setup{install: ai.Options{ApprovalWait: 50 * time.Millisecond}, turns: []turn{
			{Calls: []call{{ID: "call_t", Name: "tools_transfer", Args: `{"to":"bob","amount":500}`}}}, {Text: "Done."},
		}})
		fin := parkTransfer(t, w)
		time.Sleep(100 * time.Millisecond)
		check(t, w, resumeBody(entry(fin.Outcome.Interrupts[0].ID, "resolved", "null")), 409, "Conflict", "expired")
		eq(t, "transfers", w.count("transfer"), 0)
	})
}

// squeeze drops repeats of the event type before, so a test need not know how many
// pieces the arguments came in.
func squeeze(types []string) []string {
	var out []string
	for _, s := range types {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// TestState checks AG-UI state: the client's state is sent back as STATE_SNAPSHOT and
// shown to the model; a tool reads it and sets a key, which streams as a STATE_DELTA
// (JSON Patch), is kept in the run's log and is what the model sees next; the client's
// next run sends the new state and the tool sees it.
func TestState(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{tools: []string{"tools.remember"}, turns: []turn{
		// The fake answers by the conversation's position: both runs play these two turns.
		{Calls: []call{{ID: "call_r", Name: "tools_remember", Args: `{"key":"home/city","value":"Oslo"}`}}},
		{Text: "Noted."},
	}})
	tr := w.stream(t, "/chat/agui", `{"threadId":"th","runId":"r1","state":{"user":"ann"},"messages":[{"id":"u","role":"user","content":"remember Oslo"}]}`)
	golden(t, "agui_state", tr)
	snaps, deltas := of[agui.StateSnapshot](tr), of[agui.StateDelta](tr)
	if len(snaps) != 1 || len(deltas) != 1 {
		t.Fatalf("want one snapshot and one delta, got %v", tr.types())
	}
	eq(t, "snapshot", string(snaps[0].Snapshot), `{"user":"ann"}`)
	eq(t, "delta", string(deltas[0].Delta), `[{"op":"add","path":"/home~1city","value":"Oslo"}]`)
	eq(t, "tool saw the client's state", of[agui.ToolCallResult](tr)[0].Content, `{"ok":true,"before":{"user":"ann"}}`)
	reqs := requests(t, w)
	eq(t, "model sees the state it was sent", reqs[0].Messages[0].Text(), `Shared state (JSON): {"user":"ann"}`)
	eq(t, "model sees the tool's change", reqs[1].Messages[0].Text(), `Shared state (JSON): {"home/city":"Oslo","user":"ann"}`)
	follow := w.follow(t, tr.started(t).RunID, "")
	eq(t, "the log keeps the state events", len(of[agui.StateDelta](follow))+len(of[agui.StateSnapshot](follow)), 2)

	// The next run: the client sends the state it now holds.
	tr2 := w.stream(t, "/chat/agui", `{"threadId":"th","runId":"r2","state":{"home/city":"Oslo","user":"ann"},"messages":[{"id":"u","role":"user","content":"again"}]}`)
	eq(t, "tool saw the state of the last run", of[agui.ToolCallResult](tr2)[0].Content, `{"ok":true,"before":{"home/city":"Oslo","user":"ann"}}`)
}
