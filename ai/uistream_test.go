package ai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/ai/uimessage"
)

// uiStream is one response of the UI route: its raw bytes and its chunks.
type uiStream struct {
	raw    string
	chunks []uimessage.Chunk
}

// types returns the chunk types in order.
func (s uiStream) types() string {
	out := make([]string, len(s.chunks))
	for i, c := range s.chunks {
		out[i] = c.Type
	}
	return strings.Join(out, " ")
}

// of returns the chunks of type typ.
func (s uiStream) of(typ string) []uimessage.Chunk {
	var out []uimessage.Chunk
	for _, c := range s.chunks {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}

// text joins the deltas of the text parts.
func (s uiStream) text() string {
	var b strings.Builder
	for _, c := range s.of(uimessage.ChunkTextDelta) {
		b.WriteString(c.Delta)
	}
	return b.String()
}

// postUI posts a chat request to the UI route and returns the response and its body.
func (w *world) postUI(t *testing.T, body string) (*http.Response, string) {
	t.Helper()
	return w.request(t, "/chat/ui", body)
}

// ui posts a chat request and parses the UI message stream it answers with, checking
// what the AI SDK's transport relies on: status 200, an event stream, the protocol's
// header, one JSON chunk per data: frame and data: [DONE] last.
func (w *world) ui(t *testing.T, body string) uiStream {
	t.Helper()
	res, raw := w.postUI(t, body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /chat/ui: status %d: %s", res.StatusCode, raw)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q", ct)
	}
	eq(t, "x-vercel-ai-ui-message-stream", res.Header.Get("X-Vercel-Ai-Ui-Message-Stream"), "v1")
	s := uiStream{raw: raw}
	bs := blocks(t, raw)
	if len(bs) == 0 || bs[len(bs)-1].data != "[DONE]" {
		t.Fatalf("the stream does not end with data: [DONE]:\n%s", raw)
	}
	for _, b := range bs[:len(bs)-1] {
		if b.hasID {
			t.Errorf("UI frame with an id: %s", b.data)
		}
		var c uimessage.Chunk
		if err := json.Unmarshal([]byte(b.data), &c); err != nil || c.Type == "" {
			t.Fatalf("frame %q is not a chunk: %v", b.data, err)
		}
		again, err := uimessage.AppendJSON(nil, c)
		if err != nil || string(again) != b.data {
			t.Errorf("chunk %s re-encodes as %s (%v)", b.data, again, err)
		}
		s.chunks = append(s.chunks, c)
	}
	return s
}

var approvalIDPattern = regexp.MustCompile(`"approvalId":"[^"]+"`)

// goldenUI compares the normalised stream with testdata/uistream/<scenario>.stream, or
// writes it under -update.
func goldenUI(t *testing.T, scenario string, s uiStream) {
	t.Helper()
	raw := approvalIDPattern.ReplaceAllString(s.raw, `"approvalId":"interrupt_X"`)
	compareGolden(t, "../uistream/"+scenario+".stream", normalise(t, raw, false))
}

// uiRequest encodes an AI SDK chat request of thread id with messages.
func uiRequest(t *testing.T, id string, msgs ...uimessage.Message) string {
	t.Helper()
	b, err := json.Marshal(uimessage.Request{ID: id, Messages: msgs, Trigger: "submit-message"})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func userText(id, text string) uimessage.Message {
	return uimessage.Message{ID: id, Role: "user", Parts: []uimessage.Part{{Type: "text", Text: text}}}
}

// TestUIMessageStream checks the UI encoding of a run with reasoning, a tool call and a
// reply: each AG-UI event as its chunk, in order; the message id the run id (so the
// follow route finds the run's AG-UI log, which is the same as on the engine's own wire);
// and the thread the request's id.
func TestUIMessageStream(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, modelOpts: reasoningOpts, turns: []turn{
				{Reasoning: "The user wants the weather.", Text: "Checking.", Calls: []call{{ID: "call_1", Name: "tools_weather", Args: `{"city":"Paris"}`}}, Usage: &usage{In: 10, Out: 40}},
				{Text: "It is 15C in Paris.", Usage: &usage{In: 20, Out: 10}},
			}})
			s := w.ui(t, uiRequest(t, "chat-1", userText("u1", "weather in Paris?")))
			goldenUI(t, "tool_call_"+kind, s)
			want := "start start-step reasoning-start reasoning-delta"
			if !strings.HasPrefix(s.types(), want) {
				t.Fatalf("stream opens %s, want %s…", s.types(), want)
			}
			if !strings.HasSuffix(s.types(), "text-end finish-step finish") {
				t.Fatalf("stream ends %s", s.types())
			}
			in := s.of(uimessage.ChunkToolInputAvailable)
			if len(in) != 1 || in[0].ToolName != "tools.weather" || in[0].ToolCallID != "call_1" || string(in[0].Input) != `{"city":"Paris"}` {
				t.Errorf("tool-input-available = %+v", in)
			}
			out := s.of(uimessage.ChunkToolOutputAvailable)
			if len(out) != 1 || out[0].ToolCallID != "call_1" || string(out[0].Output) != `{"city":"Paris","tempC":15}` {
				t.Errorf("tool-output-available = %+v", out)
			}
			eq(t, "text", s.text(), "Checking.It is 15C in Paris.")
			eq(t, "finish reason", s.of(uimessage.ChunkFinish)[0].FinishReason, uimessage.FinishStop)

			runID := s.chunks[0].MessageID
			follow := w.follow(t, runID, "")
			verifyAGUI(t, follow.raw, true)
			eq(t, "thread id", follow.started(t).ThreadID, "chat-1")
			var text strings.Builder
			for _, c := range of[agui.TextMessageContent](follow) {
				text.WriteString(c.Delta)
			}
			eq(t, "the log's text", text.String(), s.text())
		})
	}
}

// TestUIMessageApproval checks the AI SDK's approval flow: a transfer over 100 parks the
// run and its tool part gets a tool-approval-request; the client's next request carries
// the answer in the tool part (state approval-responded), which decides the interrupt
// through the same resume as AG-UI's; the response continues the same assistant message
// with the transfer's output (approved: it ran once) or tool-output-denied (the model
// saw the denial and its reason), then the model's reply. Answering again is a Conflict.
func TestUIMessageApproval(t *testing.T) {
	t.Parallel()
	for _, approved := range []bool{true, false} {
		t.Run(fmt.Sprint("approved=", approved), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{turns: transferTurns})
			user := userText("u1", "send bob 500")
			first := w.ui(t, uiRequest(t, "chat-2", user))
			name := "approval_approve"
			if !approved {
				name = "approval_deny"
			}
			goldenUI(t, name+"_1", first)
			if !strings.HasSuffix(first.types(), "tool-input-available finish-step tool-approval-request finish") {
				t.Fatalf("parked stream: %s", first.types())
			}
			eq(t, "finish reason", first.of(uimessage.ChunkFinish)[0].FinishReason, uimessage.FinishToolCalls)
			req := first.of(uimessage.ChunkToolApprovalRequest)[0]
			eq(t, "approval toolCallId", req.ToolCallID, "call_t")
			eq(t, "transfers before the answer", w.count("transfer"), 0)

			answer := uimessage.Message{ID: first.chunks[0].MessageID, Role: "assistant", Parts: []uimessage.Part{
				{Type: "step-start"},
				{Type: "text", Text: "Sending it."},
				{Type: "tool-tools.transfer", ToolCallID: "call_t", State: "approval-responded", Input: json.RawMessage(`{"to":"bob","amount":500}`),
					Approval: &uimessage.Approval{ID: req.ApprovalID, Approved: &approved, Reason: "not today"}},
			}}
			second := w.ui(t, uiRequest(t, "chat-2", user, answer))
			goldenUI(t, name+"_2", second)
			eq(t, "continued message", second.chunks[0].MessageID, answer.ID)
			eq(t, "reply", second.text(), "Done.")
			if approved {
				out := second.of(uimessage.ChunkToolOutputAvailable)
				if len(out) != 1 || out[0].ToolCallID != "call_t" || string(out[0].Output) != `{"ok":true,"to":"bob","amount":500}` {
					t.Errorf("tool-output-available = %+v", out)
				}
				eq(t, "transfers", w.count("transfer"), 1)
			} else {
				if d := second.of(uimessage.ChunkToolOutputDenied); len(d) != 1 || d[0].ToolCallID != "call_t" {
					t.Errorf("tool-output-denied = %+v\n%s", d, second.raw)
				}
				eq(t, "transfers", w.count("transfer"), 0)
				reqs := w.model.(*openaitest.Server).Requests()
				last := reqs[len(reqs)-1].Messages
				eq(t, "what the model saw", last[len(last)-1].Text(), `{"error":{"code":"Denied","data":{"reason":"not today"}}}`)
			}
			res, body := w.postUI(t, uiRequest(t, "chat-2", user, answer))
			if res.StatusCode != http.StatusConflict || !strings.Contains(body, `"Conflict"`) {
				t.Errorf("answering again: %d %s", res.StatusCode, body)
			}
		})
	}
}

// TestUIMessageHistory checks that a conversation the client sends back (an assistant
// message of two steps, a tool part with its output, one with an error, one denied, and
// one still waiting) reaches the model as the turns it came from, with reasoning and data
// parts left out.
func TestUIMessageHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "unused"}, {Text: "unused"}, {Text: "unused"}, {Text: "Fine."}}})
	no := false
	asst := uimessage.Message{ID: "a1", Role: "assistant", Parts: []uimessage.Part{
		{Type: "step-start"},
		{Type: "reasoning", Text: "private"},
		{Type: "text", Text: "Looking."},
		{Type: "tool-tools.weather", ToolCallID: "c1", State: "output-available", Input: json.RawMessage(`{"city":"Oslo"}`), Output: json.RawMessage(`{"city":"Oslo","tempC":12}`)},
		{Type: "dynamic-tool", ToolName: "tools.weather", ToolCallID: "c2", State: "output-error", Input: json.RawMessage(`{"city":""}`), ErrorText: "no city"},
		{Type: "step-start"},
		{Type: "tool-tools.transfer", ToolCallID: "c3", State: "output-denied", Input: json.RawMessage(`{"to":"x","amount":900}`),
			Approval: &uimessage.Approval{ID: "old", Approved: &no, Reason: "nope"}},
		{Type: "tool-tools.weather", ToolCallID: "c4", State: "input-available", Input: json.RawMessage(`{"city":"Rome"}`)},
		{Type: "data-progress"},
		{Type: "step-start"},
		{Type: "text", Text: "Done."},
	}}
	s := w.ui(t, uiRequest(t, "chat-3", userText("u1", "hi"), asst, userText("u2", "thanks")))
	eq(t, "reply", s.text(), "Fine.")
	got := w.model.(*openaitest.Server).Requests()[0].Messages
	var lines []string
	for _, m := range got {
		line := m.Role + ":" + m.Text()
		for _, c := range m.ToolCalls {
			line += " call " + c.ID + " " + c.Function.Name + c.Function.Arguments
		}
		if m.ToolCallID != "" {
			line += " for " + m.ToolCallID
		}
		lines = append(lines, line)
	}
	want := []string{
		"user:hi",
		`assistant:Looking. call c1 tools_weather{"city":"Oslo"} call c2 tools_weather{"city":""}`,
		`tool:{"city":"Oslo","tempC":12} for c1`,
		`tool:{"error":{"code":"ToolError","data":{"message":"no city"}}} for c2`,
		`assistant: call c3 tools_transfer{"to":"x","amount":900}`,
		`tool:{"error":{"code":"Denied","data":{"reason":"nope"}}} for c3`,
		"assistant:Done.",
		"user:thanks",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("the model saw:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestUIMessageRequestErrors checks that a request the run cannot take is answered with
// the envelope before any chunk, which the AI SDK's transport reports as an error.
func TestUIMessageRequestErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi."}}})
	yes := true
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"not JSON", `{`, http.StatusBadRequest, "ValidationError"},
		{"no messages", `{"id":"c","messages":[]}`, http.StatusBadRequest, `"path":"messages"`},
		{"a file", `{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"file","url":"data:,x","mediaType":"text/plain"}]}]}`,
			http.StatusBadRequest, `"path":"messages[0].parts[0]"`},
		{"a tool role", `{"id":"c","messages":[{"id":"u","role":"tool","parts":[]}]}`, http.StatusBadRequest, `"path":"messages[0].role"`},
		{"an answer without approved", uiRequest(t, "c", userText("u", "x"), uimessage.Message{ID: "a", Role: "assistant", Parts: []uimessage.Part{
			{Type: "tool-tools.transfer", ToolCallID: "c1", State: "approval-responded", Approval: &uimessage.Approval{ID: "i"}}}}),
			http.StatusBadRequest, `"path":"messages[1].parts[0].approval"`},
		{"an unknown approval", uiRequest(t, "c", userText("u", "x"), uimessage.Message{ID: "a", Role: "assistant", Parts: []uimessage.Part{
			{Type: "tool-tools.transfer", ToolCallID: "c1", State: "approval-responded", Approval: &uimessage.Approval{ID: "cnVuLWEuYy0x", Approved: &yes}}}}),
			http.StatusNotFound, "NotFound"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := w.postUI(t, tc.body)
			if res.StatusCode != tc.status || !strings.Contains(body, tc.want) || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
				t.Errorf("status %d, %s: %s; want %d with %s", res.StatusCode, res.Header.Get("Content-Type"), body, tc.status, tc.want)
			}
		})
	}
	eq(t, "model requests", w.model.RequestCount(), 0)
}

// TestUIMessageRunError checks that a run that fails after the stream opened sends an
// error chunk (and [DONE]), which the AI SDK's chat turns into its error state.
func TestUIMessageRunError(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "partial", ErrMsg: "The server had an error"}}})
	s := w.ui(t, uiRequest(t, "chat-4", userText("u1", "hi")))
	errs := s.of(uimessage.ChunkError)
	if len(errs) != 1 || !strings.Contains(errs[0].ErrorText, "The server had an error") || !strings.HasSuffix(s.types(), "error") {
		t.Fatalf("stream %s, errors %+v", s.types(), errs)
	}
	if n := len(s.of(uimessage.ChunkFinish)); n != 0 {
		t.Errorf("%d finish chunks after the error", n)
	}
}
