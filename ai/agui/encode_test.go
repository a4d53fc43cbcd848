package agui_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
)

// referenceEncodings pairs events with plain structs that encoding/json marshals by
// reflection, the yardstick AppendJSON's hand-written encoding must match byte for byte.
func referenceEncodings(a, b string) []struct {
	ev  agui.Event
	ref any
} {
	return []struct {
		ev  agui.Event
		ref any
	}{
		{agui.TextMessageContent{MessageID: a, Delta: b}, struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
			Delta     string `json:"delta"`
		}{"TEXT_MESSAGE_CONTENT", a, b}},
		{agui.ToolCallArgs{ToolCallID: a, Delta: b}, struct {
			Type       string `json:"type"`
			ToolCallID string `json:"toolCallId"`
			Delta      string `json:"delta"`
		}{"TOOL_CALL_ARGS", a, b}},
		{agui.ToolCallStart{ToolCallID: a, ToolCallName: b, ParentMessageID: b}, struct {
			Type            string `json:"type"`
			ToolCallID      string `json:"toolCallId"`
			ToolCallName    string `json:"toolCallName"`
			ParentMessageID string `json:"parentMessageId,omitempty"`
		}{"TOOL_CALL_START", a, b, b}},
		{agui.ToolCallResult{MessageID: a, ToolCallID: a, Content: b, Role: b}, struct {
			Type       string `json:"type"`
			MessageID  string `json:"messageId"`
			ToolCallID string `json:"toolCallId"`
			Content    string `json:"content"`
			Role       string `json:"role,omitempty"`
		}{"TOOL_CALL_RESULT", a, a, b, b}},
		{agui.ReasoningMessageContent{MessageID: a, Delta: b}, struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
			Delta     string `json:"delta"`
		}{"REASONING_MESSAGE_CONTENT", a, b}},
		{agui.ReasoningMessageStart{MessageID: a}, struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
			Role      string `json:"role"`
		}{"REASONING_MESSAGE_START", a, "reasoning"}},
		{agui.ReasoningStart{MessageID: a}, struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
		}{"REASONING_START", a}},
		{agui.ReasoningMessageEnd{MessageID: b}, struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
		}{"REASONING_MESSAGE_END", b}},
		{agui.ReasoningEnd{MessageID: b}, struct {
			Type      string `json:"type"`
			MessageID string `json:"messageId"`
		}{"REASONING_END", b}},
		{agui.ReasoningEncryptedValue{Subtype: agui.EncryptedMessage, EntityID: a, EncryptedValue: b}, struct {
			Type           string `json:"type"`
			Subtype        string `json:"subtype"`
			EntityID       string `json:"entityId"`
			EncryptedValue string `json:"encryptedValue"`
		}{"REASONING_ENCRYPTED_VALUE", "message", a, b}},
		{agui.RunError{Message: a, Code: b}, struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Code    string `json:"code,omitempty"`
		}{"RUN_ERROR", a, b}},
		{agui.Custom{Name: a, Value: json.RawMessage(`{ "s" : "<` + "x" + `>" }`)}, struct {
			Type  string          `json:"type"`
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		}{"CUSTOM", a, json.RawMessage(`{ "s" : "<x>" }`)}},
	}
}

// runFinishedReferences pairs RUN_FINISHED events whose output is built from s in
// several ways (as json.Marshal writes it, raw between quotes, with whitespace, nested)
// with their reflection-encoded twins; raw forms that are not valid JSON are left out.
func runFinishedReferences(s string, cost float64) []struct {
	ev  agui.Event
	ref any
} {
	type result struct {
		Cost       float64         `json:"cost"`
		StopReason string          `json:"stopReason"`
		Output     json.RawMessage `json:"output,omitempty"`
	}
	type event struct {
		Type     string  `json:"type"`
		ThreadID string  `json:"threadId"`
		RunID    string  `json:"runId"`
		Result   *result `json:"result,omitempty"`
	}
	quoted, _ := json.Marshal(s)
	var out []struct {
		ev  agui.Event
		ref any
	}
	for _, raw := range []string{"", string(quoted), `"` + s + `"`, " " + string(quoted), string(quoted) + "\n", `{"k": ` + string(quoted) + `}`} {
		if raw != "" && !json.Valid([]byte(raw)) {
			continue
		}
		out = append(out, struct {
			ev  agui.Event
			ref any
		}{
			agui.RunFinished{ThreadID: s, RunID: "r", Result: &agui.RunResult{Cost: cost, StopReason: agui.StopReason(s), Output: json.RawMessage(raw)}},
			event{"RUN_FINISHED", s, "r", &result{cost, s, json.RawMessage(raw)}},
		})
	}
	return out
}

var referenceStrings = []string{"", "plain", "<b>&amp;</b>", "\u2028\u2029", "\x00\x01\x1f\x7f", "\xff\xfe bad utf8",
	"\"quoted\" \\ back", "\t\n\r\b\f", "日本語 🎉", `\u0041 \/ \q`, "\xe2\x80", "tail\\"}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range referenceStrings {
		for _, c := range referenceEncodings("id-"+s, s) {
			checkAgainstReference(t, c.ev, c.ref)
		}
	}
	for _, cost := range []float64{0, 0.0123, 1e-7, 2.5e-12, 1e21, 123456789.5, -3e-8, 1e-6} {
		for _, s := range referenceStrings {
			for _, c := range runFinishedReferences(s, cost) {
				checkAgainstReference(t, c.ev, c.ref)
			}
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("m-1", "hello <b> & \u2028 \x00 \xff \"q\" \\ \t\n\r\b\f")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, c := range referenceEncodings(a, b) {
			checkAgainstReference(t, c.ev, c.ref)
		}
		for _, c := range runFinishedReferences(b, float64(len(a))/7) {
			checkAgainstReference(t, c.ev, c.ref)
		}
	})
}

func checkAgainstReference(t *testing.T, ev agui.Event, ref any) {
	t.Helper()
	want, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := agui.AppendJSON(nil, ev)
	if err != nil {
		t.Fatalf("AppendJSON(%#v): %v", ev, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON(%#v):\n got %s\nwant %s", ev, got, want)
	}
	if !json.Valid(got) {
		t.Fatalf("AppendJSON gave invalid JSON %q", got)
	}
}

func TestAppendJSONAppendsAndReportsErrors(t *testing.T) {
	t.Parallel()
	buf := []byte("prefix:")
	buf, err := agui.AppendJSON(buf, agui.TextMessageEnd{MessageID: "m-1"})
	if err != nil || string(buf) != `prefix:{"type":"TEXT_MESSAGE_END","messageId":"m-1"}` {
		t.Fatalf("AppendJSON = %s, %v", buf, err)
	}
	// Pointers encode like values.
	if b, err := agui.AppendJSON(nil, &agui.StepStarted{StepName: "step-1"}); err != nil || string(b) != `{"type":"STEP_STARTED","stepName":"step-1"}` {
		t.Fatalf("AppendJSON(pointer) = %s, %v", b, err)
	}
	bad := []agui.Event{
		nil,
		agui.Custom{Name: "x", Value: json.RawMessage(`{not json`)},
		agui.RunFinished{Result: &agui.RunResult{Output: json.RawMessage(`[`)}},
		agui.RunFinished{Result: &agui.RunResult{Output: json.RawMessage(`"unterminated`)}},
		agui.RunFinished{Result: &agui.RunResult{Output: json.RawMessage(`"a" "b"`)}},
		agui.RunFinished{Result: &agui.RunResult{Cost: math.NaN()}},
		agui.Unknown{TypeName: "X", JSON: json.RawMessage(`{`)},
	}
	for _, ev := range bad {
		if b, err := agui.AppendJSON(nil, ev); err == nil {
			t.Errorf("AppendJSON(%#v) = %s, want an error", ev, b)
		}
		if ev != nil {
			if _, err := json.Marshal(ev); err == nil {
				t.Errorf("json.Marshal(%#v) succeeded, want an error", ev)
			}
		}
	}
}
