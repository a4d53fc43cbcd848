package agui_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
)

// wireCases pins the exact JSON of every event type the engine sends.
var wireCases = []struct {
	name string
	ev   agui.Event
	want string
}{
	{"run started", agui.RunStarted{ThreadID: "t-1", RunID: "r-1"},
		`{"type":"RUN_STARTED","threadId":"t-1","runId":"r-1"}`},
	{"step started", agui.StepStarted{StepName: "step-1"},
		`{"type":"STEP_STARTED","stepName":"step-1"}`},
	{"step finished", agui.StepFinished{StepName: "step-1"},
		`{"type":"STEP_FINISHED","stepName":"step-1"}`},
	{"text start", agui.TextMessageStart{MessageID: "m-1", Role: agui.RoleAssistant},
		`{"type":"TEXT_MESSAGE_START","messageId":"m-1","role":"assistant"}`},
	{"text start without role", agui.TextMessageStart{MessageID: "m-1"},
		`{"type":"TEXT_MESSAGE_START","messageId":"m-1"}`},
	{"text content", agui.TextMessageContent{MessageID: "m-1", Delta: "Hi \"you\"\n"},
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"Hi \"you\"\n"}`},
	{"text content empty delta kept", agui.TextMessageContent{MessageID: "m-1"},
		`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":""}`},
	{"text end", agui.TextMessageEnd{MessageID: "m-1"},
		`{"type":"TEXT_MESSAGE_END","messageId":"m-1"}`},
	{"tool start", agui.ToolCallStart{ToolCallID: "c-1", ToolCallName: "refund", ParentMessageID: "m-1"},
		`{"type":"TOOL_CALL_START","toolCallId":"c-1","toolCallName":"refund","parentMessageId":"m-1"}`},
	{"tool start without parent", agui.ToolCallStart{ToolCallID: "c-1", ToolCallName: "refund"},
		`{"type":"TOOL_CALL_START","toolCallId":"c-1","toolCallName":"refund"}`},
	{"tool args", agui.ToolCallArgs{ToolCallID: "c-1", Delta: `{"amount":`},
		`{"type":"TOOL_CALL_ARGS","toolCallId":"c-1","delta":"{\"amount\":"}`},
	{"tool end", agui.ToolCallEnd{ToolCallID: "c-1"},
		`{"type":"TOOL_CALL_END","toolCallId":"c-1"}`},
	{"tool result", agui.ToolCallResult{MessageID: "m-2", ToolCallID: "c-1", Content: "ok", Role: agui.RoleTool},
		`{"type":"TOOL_CALL_RESULT","messageId":"m-2","toolCallId":"c-1","content":"ok","role":"tool"}`},
	{"run finished bare", agui.RunFinished{ThreadID: "t-1", RunID: "r-1"},
		`{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1"}`},
	{"run finished full", agui.RunFinished{
		ThreadID: "t-1", RunID: "r-1",
		Result: &agui.RunResult{Cost: 0.0125, StopReason: agui.StopCompleted, Output: json.RawMessage(`{"ok":true}`)},
		Usage:  []agui.Usage{{InputTokens: new(int64(12)), OutputTokens: new(int64(0))}},
	}, `{"type":"RUN_FINISHED","threadId":"t-1","runId":"r-1","result":{"cost":0.0125,"stopReason":"completed","output":{"ok":true}},"usage":[{"inputTokens":12,"outputTokens":0}]}`},
	{"run finished zero cost, no output, partial usage", agui.RunFinished{
		ThreadID: "t", RunID: "r",
		Result: &agui.RunResult{StopReason: agui.StopMaxSteps},
		Usage:  []agui.Usage{{OutputTokens: new(int64(7))}},
	}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"cost":0,"stopReason":"max_steps"},"usage":[{"outputTokens":7}]}`},
	{"run finished interrupt", agui.RunFinished{
		ThreadID: "t", RunID: "r",
		Result: &agui.RunResult{StopReason: agui.StopCompleted},
		Outcome: agui.InterruptOutcome(agui.Interrupt{
			ID: "cnVuLWEuYy0x", Reason: agui.ReasonApproval,
			Payload:    agui.InterruptPayload{Tool: "refund", Args: json.RawMessage(`{"amount":5}`)},
			ToolCallID: "c-1", ExpiresAt: time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC),
		}),
	}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"cost":0,"stopReason":"completed"},"outcome":{"type":"interrupt","interrupts":[{"id":"cnVuLWEuYy0x","reason":"approval","payload":{"tool":"refund","args":{"amount":5}},"toolCallId":"c-1","expiresAt":"2026-11-22T11:00:00Z"}]}}`},
	{"interrupt with nil args and no AG-UI extras", agui.RunFinished{
		ThreadID: "t", RunID: "r",
		Outcome: agui.InterruptOutcome(agui.Interrupt{ID: "x", Reason: agui.ReasonApproval, Payload: agui.InterruptPayload{Tool: "t"}}),
	}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"x","reason":"approval","payload":{"tool":"t","args":{}}}]}}`},
	{"reasoning start", agui.ReasoningStart{MessageID: "m-1"},
		`{"type":"REASONING_START","messageId":"m-1"}`},
	{"reasoning message start", agui.ReasoningMessageStart{MessageID: "m-1"},
		`{"type":"REASONING_MESSAGE_START","messageId":"m-1","role":"reasoning"}`},
	{"reasoning content", agui.ReasoningMessageContent{MessageID: "m-1", Delta: "Let me think"},
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"m-1","delta":"Let me think"}`},
	{"reasoning content empty delta kept", agui.ReasoningMessageContent{MessageID: "m-1"},
		`{"type":"REASONING_MESSAGE_CONTENT","messageId":"m-1","delta":""}`},
	{"reasoning message end", agui.ReasoningMessageEnd{MessageID: "m-1"},
		`{"type":"REASONING_MESSAGE_END","messageId":"m-1"}`},
	{"reasoning encrypted value", agui.ReasoningEncryptedValue{Subtype: agui.EncryptedMessage, EntityID: "m-1", EncryptedValue: "RXVn=="},
		`{"type":"REASONING_ENCRYPTED_VALUE","subtype":"message","entityId":"m-1","encryptedValue":"RXVn=="}`},
	{"reasoning end", agui.ReasoningEnd{MessageID: "m-1"},
		`{"type":"REASONING_END","messageId":"m-1"}`},
	{"run finished with reasoning tokens", agui.RunFinished{ThreadID: "t", RunID: "r",
		Usage: []agui.Usage{{InputTokens: new(int64(3)), OutputTokens: new(int64(40)), ReasoningTokens: new(int64(32))}}},
		`{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":3,"outputTokens":40,"reasoningTokens":32}]}`},
	{"run error", agui.RunError{Message: "model called a tool it may not use", Code: "AgentLoopHalt"},
		`{"type":"RUN_ERROR","message":"model called a tool it may not use","code":"AgentLoopHalt"}`},
	{"run error without code", agui.RunError{Message: "boom"},
		`{"type":"RUN_ERROR","message":"boom"}`},
	{"custom", agui.Custom{Name: agui.CustomSubagentStarted, Value: json.RawMessage(`{"agent":"helper"}`)},
		`{"type":"CUSTOM","name":"engine.subagent.started","value":{"agent":"helper"}}`},
	{"custom nil value is null", agui.Custom{Name: agui.CustomEventsTruncated},
		`{"type":"CUSTOM","name":"engine.events.truncated","value":null}`},
	{"unknown kept", agui.Unknown{TypeName: "STATE_SNAPSHOT", JSON: json.RawMessage(`{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`)},
		`{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`},
}

func TestEventWireJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("Marshal:\n got %s\nwant %s", got, tc.want)
			}
			// A pointer encodes the same way, so producers may hold either.
			ptr := reflect.New(reflect.TypeOf(tc.ev))
			ptr.Elem().Set(reflect.ValueOf(tc.ev))
			if got2, _ := json.Marshal(ptr.Interface()); string(got2) != tc.want {
				t.Fatalf("Marshal(pointer) = %s", got2)
			}
		})
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := agui.Decode([]byte(tc.want))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if ev.Type() != tc.ev.Type() {
				t.Fatalf("Type() = %q, want %q", ev.Type(), tc.ev.Type())
			}
			again, err := json.Marshal(ev)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			// Nil args and nil custom values decode as {} and null, which re-encode the same.
			if string(again) != tc.want {
				t.Fatalf("re-encoded:\n got %s\nwant %s", again, tc.want)
			}
		})
	}
}

func TestDecodeTypedFields(t *testing.T) {
	t.Parallel()
	ev, err := agui.Decode([]byte(`{"type":"RUN_FINISHED","threadId":"t","runId":"r","timestamp":5,` +
		`"result":{"cost":1.5,"stopReason":"budget","output":"trail"},"usage":[{"inputTokens":3}],` +
		`"outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"approval","payload":{"tool":"x","args":{"n":1}},"toolCallId":"c","expiresAt":"2026-01-02T03:04:05Z"}]}}`))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	rf, ok := ev.(agui.RunFinished)
	if !ok {
		t.Fatalf("Decode gave %T, want agui.RunFinished", ev)
	}
	if rf.Result == nil || rf.Result.Cost != 1.5 || rf.Result.StopReason != agui.StopBudget || string(rf.Result.Output) != `"trail"` {
		t.Fatalf("Result = %+v", rf.Result)
	}
	if len(rf.Usage) != 1 || rf.Usage[0].InputTokens == nil || *rf.Usage[0].InputTokens != 3 || rf.Usage[0].OutputTokens != nil {
		t.Fatalf("Usage = %+v", rf.Usage)
	}
	if rf.Outcome == nil || rf.Outcome.Type != agui.OutcomeInterrupt || len(rf.Outcome.Interrupts) != 1 {
		t.Fatalf("Outcome = %+v", rf.Outcome)
	}
	in := rf.Outcome.Interrupts[0]
	if in.Payload.Tool != "x" || string(in.Payload.Args) != `{"n":1}` || in.ToolCallID != "c" ||
		!in.ExpiresAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Fatalf("Interrupt = %+v", in)
	}
}

func TestDecodeSpellings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want agui.Type
	}{
		{"type first", `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`, agui.TypeRunStarted},
		{"type last", `{"threadId":"t","runId":"r","type":"RUN_STARTED"}`, agui.TypeRunStarted},
		{"spaces", ` { "type" : "RUN_STARTED" , "threadId":"t","runId":"r"}`, agui.TypeRunStarted},
		{"escaped type", `{"type":"RUN\u005fSTARTED","threadId":"t","runId":"r"}`, agui.TypeRunStarted},
		{"unknown, type first", `{"type":"ACTIVITY_DELTA","x":[1]}`, "ACTIVITY_DELTA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := agui.Decode([]byte(tc.in))
			if err != nil || ev.Type() != tc.want {
				t.Fatalf("Decode(%s) = %#v, %v; want type %s", tc.in, ev, err, tc.want)
			}
		})
	}
}

func TestDecodeUnknownTypeKeepsRawJSON(t *testing.T) {
	t.Parallel()
	src := []byte(`{"type":"ACTIVITY_SNAPSHOT","messageId":"a-1","activityType":"plan","content":{}}`)
	ev, err := agui.Decode(src)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	u, ok := ev.(agui.Unknown)
	if !ok || u.TypeName != "ACTIVITY_SNAPSHOT" || string(u.JSON) != string(src) {
		t.Fatalf("Decode = %#v", ev)
	}
	src[0] = 'X' // the event must own its bytes
	if u.JSON[0] != '{' {
		t.Fatal("Unknown.JSON aliases the input buffer")
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     string
		noType bool // true: ErrNoType; false: some other error
	}{
		{"string", `"plain text"`, true},
		{"number", `42`, true},
		{"array", `[1,2]`, true},
		{"null", `null`, true},
		{"object without type", `{"messageId":"m"}`, true},
		{"empty type", `{"type":""}`, true},
		{"numeric type", `{"type":7}`, true},
		{"null type", `{"type":null}`, true},
		{"not JSON", `{"type":"RUN_STARTED"`, false},
		{"empty input", ``, false},
		{"wrong member type", `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":5}`, false},
		{"unknown type, broken JSON", `{"type":"X","a":`, false},
		{"known type, broken JSON", `{"type":"RUN_STARTED","threadId":}`, false},
		{"non-object result", `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":"x"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, err := agui.Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode(%s) = %#v, want an error", tc.in, ev)
			}
			if got := errors.Is(err, agui.ErrNoType); got != tc.noType {
				t.Fatalf("Decode(%s) error %v: errors.Is(ErrNoType) = %v, want %v", tc.in, err, got, tc.noType)
			}
		})
	}
}

func TestNewCustom(t *testing.T) {
	t.Parallel()
	c, err := agui.NewCustom("app.progress", map[string]int{"done": 3})
	if err != nil {
		t.Fatalf("NewCustom: %v", err)
	}
	got, _ := json.Marshal(c)
	if want := `{"type":"CUSTOM","name":"app.progress","value":{"done":3}}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if _, err := agui.NewCustom("bad", func() {}); err == nil {
		t.Fatal("NewCustom with an unencodable value succeeded")
	}
}
