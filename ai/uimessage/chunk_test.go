package uimessage_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/uimessage"
)

// chunksOf builds one chunk of every type from two strings and a JSON value.
func chunksOf(a, b string, v json.RawMessage) []uimessage.Chunk {
	return []uimessage.Chunk{
		{Type: uimessage.ChunkStart, MessageID: a},
		{Type: uimessage.ChunkFinish, FinishReason: b},
		{Type: uimessage.ChunkStartStep},
		{Type: uimessage.ChunkFinishStep},
		{Type: uimessage.ChunkTextStart, ID: a},
		{Type: uimessage.ChunkTextDelta, ID: a, Delta: b},
		{Type: uimessage.ChunkTextEnd, ID: a},
		{Type: uimessage.ChunkReasoningStart, ID: a},
		{Type: uimessage.ChunkReasoningDelta, ID: a, Delta: b},
		{Type: uimessage.ChunkReasoningEnd, ID: a},
		{Type: uimessage.ChunkToolInputStart, ToolCallID: a, ToolName: b},
		{Type: uimessage.ChunkToolInputDelta, ToolCallID: a, InputTextDelta: b},
		{Type: uimessage.ChunkToolInputAvailable, ToolCallID: a, ToolName: b, Input: v},
		{Type: uimessage.ChunkToolOutputAvailable, ToolCallID: a, Output: v},
		{Type: uimessage.ChunkToolOutputDenied, ToolCallID: a},
		{Type: uimessage.ChunkToolApprovalRequest, ApprovalID: a, ToolCallID: b, Reason: b},
		{Type: uimessage.ChunkError, ErrorText: b},
		{Type: "data-x", ID: a, Data: v, Transient: true},
	}
}

func TestAppendJSON(t *testing.T) {
	t.Parallel()
	want := []string{
		`{"type":"start","messageId":"m"}`,
		`{"type":"finish","finishReason":"stop"}`,
		`{"type":"start-step"}`,
		`{"type":"finish-step"}`,
		`{"type":"text-start","id":"m"}`,
		`{"type":"text-delta","id":"m","delta":"stop"}`,
		`{"type":"text-end","id":"m"}`,
		`{"type":"reasoning-start","id":"m"}`,
		`{"type":"reasoning-delta","id":"m","delta":"stop"}`,
		`{"type":"reasoning-end","id":"m"}`,
		`{"type":"tool-input-start","toolCallId":"m","toolName":"stop"}`,
		`{"type":"tool-input-delta","toolCallId":"m","inputTextDelta":"stop"}`,
		`{"type":"tool-input-available","toolCallId":"m","toolName":"stop","input":{"a":[1,2]}}`,
		`{"type":"tool-output-available","toolCallId":"m","output":{"a":[1,2]}}`,
		`{"type":"tool-output-denied","toolCallId":"m"}`,
		`{"type":"tool-approval-request","approvalId":"m","toolCallId":"stop","reason":"stop"}`,
		`{"type":"error","errorText":"stop"}`,
		`{"type":"data-x","id":"m","data":{"a":[1,2]},"transient":true}`,
	}
	for i, c := range chunksOf("m", "stop", json.RawMessage(`{ "a" : [1, 2] }`)) {
		got, err := json.Marshal(c)
		if err != nil || string(got) != want[i] {
			t.Errorf("%s: %s, %v; want %s", c.Type, got, err, want[i])
		}
	}
	// Required members stay when empty; optional ones go; a missing value is null.
	for c, want := range map[*uimessage.Chunk]string{
		{Type: uimessage.ChunkTextDelta, ID: "m"}:                   `{"type":"text-delta","id":"m","delta":""}`,
		{Type: uimessage.ChunkStart}:                                `{"type":"start"}`,
		{Type: uimessage.ChunkToolOutputAvailable, ToolCallID: "c"}: `{"type":"tool-output-available","toolCallId":"c","output":null}`,
	} {
		if got, err := uimessage.AppendJSON(nil, *c); err != nil || string(got) != want {
			t.Errorf("%+v: %s, %v; want %s", *c, got, err, want)
		}
	}
	for _, c := range []uimessage.Chunk{{Type: "nope"}, {Type: "data-"}, {Type: uimessage.ChunkToolInputAvailable, Input: json.RawMessage(`{`)}} {
		if got, err := uimessage.AppendJSON(nil, c); err == nil {
			t.Errorf("%+v encoded as %s, want an error", c, got)
		}
	}
}

// FuzzAppendJSON checks that every chunk encodes as valid JSON that decodes to the same
// chunk, whatever its strings hold, and that a member that is not JSON is an error.
func FuzzAppendJSON(f *testing.F) {
	f.Add("m-1", "hello <b> & \u2028 \x00 \xff \"q\" \\ \t\n", []byte(`{"a":1}`))
	f.Add("", "", []byte(`nope`))
	f.Fuzz(func(t *testing.T, a, b string, v []byte) {
		for _, c := range chunksOf(a, b, v) {
			got, err := uimessage.AppendJSON(nil, c)
			hasValue := c.Type == uimessage.ChunkToolInputAvailable || c.Type == uimessage.ChunkToolOutputAvailable || c.Type == "data-x"
			if hasValue && len(v) > 0 && !json.Valid(v) {
				if err == nil {
					t.Fatalf("%s with value %q encoded as %s", c.Type, v, got)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON %q", got)
			}
			var back uimessage.Chunk
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, err := uimessage.AppendJSON(nil, back)
			if err != nil {
				t.Fatal(err)
			}
			// Bytes that are not UTF-8 come back as U+FFFD, once; text that is comes back as it was.
			if utf8.ValidString(a) && utf8.ValidString(b) && string(again) != string(got) {
				t.Fatalf("round trip: %s then %s", got, again)
			}
		}
	})
}

// TestEncoder checks the mapping of AG-UI events to chunks.
func TestEncoder(t *testing.T) {
	t.Parallel()
	in := agui.Interrupt{ID: "int-1", ToolCallID: "c2", Message: "Approve?"}
	events := []agui.Event{
		agui.RunStarted{ThreadID: "t", RunID: "run-1"},
		agui.StateSnapshot{Snapshot: json.RawMessage(`{}`)},
		agui.StepStarted{StepName: "step-1"},
		agui.ReasoningStart{MessageID: "m-1"},
		agui.ReasoningMessageStart{MessageID: "m-1"},
		agui.ReasoningMessageContent{MessageID: "m-1", Delta: "hm"},
		agui.ReasoningMessageEnd{MessageID: "m-1"},
		agui.ReasoningEncryptedValue{Subtype: agui.EncryptedMessage, EntityID: "m-1", EncryptedValue: "sig"},
		agui.ReasoningEnd{MessageID: "m-1"},
		agui.ToolCallStart{ToolCallID: "c1", ToolCallName: "tools.weather"},
		agui.ToolCallArgs{ToolCallID: "c1", Delta: `{"city":`},
		agui.ToolCallArgs{ToolCallID: "c1", Delta: `"Oslo"}`},
		agui.ToolCallEnd{ToolCallID: "c1"},
		agui.ToolCallStart{ToolCallID: "c3", ToolCallName: "tools.weather"},
		agui.ToolCallArgs{ToolCallID: "c3", Delta: `not json`},
		agui.ToolCallEnd{ToolCallID: "c3"},
		agui.Custom{Name: "engine.subagent.started", Value: json.RawMessage(`{"agent":"r"}`)},
		agui.ToolCallResult{MessageID: "m-2", ToolCallID: "c1", Content: `{"tempC":3}`},
		agui.ToolCallResult{MessageID: "m-3", ToolCallID: "c3", Content: `plain text`},
		agui.ToolCallResult{MessageID: "m-4", ToolCallID: "denied", Content: `{"error":{}}`},
		agui.StepFinished{StepName: "step-1"},
		agui.RunStarted{ThreadID: "t", RunID: "run-1"},
		agui.RunFinished{ThreadID: "t", RunID: "run-1", Outcome: agui.InterruptOutcome(in)},
		agui.RunError{Message: "boom", Code: "AgentLoopHalt"},
	}
	e := &uimessage.Encoder{Denied: map[string]bool{"denied": true}}
	var chunks []uimessage.Chunk
	for _, ev := range events {
		chunks = e.Event(chunks, ev)
	}
	var got []string
	for _, c := range chunks {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{
		`{"type":"start","messageId":"run-1"}`,
		`{"type":"start-step"}`,
		`{"type":"reasoning-start","id":"m-1"}`,
		`{"type":"reasoning-delta","id":"m-1","delta":"hm"}`,
		`{"type":"reasoning-end","id":"m-1"}`,
		`{"type":"tool-input-start","toolCallId":"c1","toolName":"tools.weather"}`,
		`{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"{\"city\":"}`,
		`{"type":"tool-input-delta","toolCallId":"c1","inputTextDelta":"\"Oslo\"}"}`,
		`{"type":"tool-input-available","toolCallId":"c1","toolName":"tools.weather","input":{"city":"Oslo"}}`,
		`{"type":"tool-input-start","toolCallId":"c3","toolName":"tools.weather"}`,
		`{"type":"tool-input-delta","toolCallId":"c3","inputTextDelta":"not json"}`,
		`{"type":"tool-input-available","toolCallId":"c3","toolName":"tools.weather","input":"not json"}`,
		`{"type":"data-engine.subagent.started","data":{"agent":"r"},"transient":true}`,
		`{"type":"tool-output-available","toolCallId":"c1","output":{"tempC":3}}`,
		`{"type":"tool-output-available","toolCallId":"c3","output":"plain text"}`,
		`{"type":"tool-output-denied","toolCallId":"denied"}`,
		`{"type":"finish-step"}`,
		`{"type":"tool-approval-request","approvalId":"int-1","toolCallId":"c2","reason":"Approve?"}`,
		`{"type":"finish","finishReason":"tool-calls"}`,
		`{"type":"error","errorText":"AgentLoopHalt: boom"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("chunks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for reason, want := range map[agui.StopReason]string{agui.StopCompleted: "stop", agui.StopMaxSteps: "tool-calls", agui.StopBudget: "other", agui.StopError: "error"} {
		c := (&uimessage.Encoder{}).Event(nil, agui.RunFinished{Result: &agui.RunResult{StopReason: reason}})
		eq(t, string(reason), c[0].FinishReason, want)
	}
	c := (&uimessage.Encoder{MessageID: "a-1"}).Event(nil, agui.RunStarted{RunID: "run-2"})
	eq(t, "continued message id", c[0].MessageID, "a-1")
	c = (&uimessage.Encoder{}).Event(nil, agui.RunFinished{Outcome: &agui.Outcome{Type: agui.OutcomeCancelled}})
	eq(t, "cancelled", c[0].FinishReason, "interrupted")
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestRequestSchema checks that the request's schema takes a request as the AI SDK
// sends it, members the engine does not read included.
func TestRequestSchema(t *testing.T) {
	t.Parallel()
	s, err := uimessage.Request{}.JSONSchema().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"c","trigger":"submit-message","messageId":null,"extra":1,"messages":[
		{"id":"u","role":"user","metadata":{"x":1},"parts":[{"type":"text","text":"hi","providerMetadata":{"a":{}}},{"type":"file","url":"data:,","mediaType":"text/plain"}]},
		{"id":"a","role":"assistant","parts":[{"type":"step-start"},{"type":"tool-x","toolCallId":"c","state":"approval-responded","input":{"a":1},
			"approval":{"id":"i","approved":false,"reason":"no","isAutomatic":false},"callProviderMetadata":{}}]}]}`
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("the schema refuses an AI SDK request: %v", err)
	}
	var missing any
	_ = json.Unmarshal([]byte(`{"messages":[]}`), &missing)
	if err := s.Validate(missing); err == nil {
		t.Error("the schema takes a request without an id")
	}
}
