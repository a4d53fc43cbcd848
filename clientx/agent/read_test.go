package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/httpx"
)

// eventJSON renders events as comparable strings.
func eventJSON(t *testing.T, ev agui.Event) string {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("marshal %T: %v", ev, err)
	}
	return string(b)
}

const transcript = "id: 1\n" +
	`data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}` + "\n\n" +
	": ping\n\n" +
	`data: {"no":"type"}` + "\n\n" +
	`data: "plain text frame"` + "\n\n" +
	"id: 2\n" +
	`data: {"type":"CUSTOM","name":"engine.subagent.started","value":{"agent":"a"}}` + "\n\n" +
	"id: 3\n" +
	`data: {"type":"CUSTOM","name":"engine.subagent.finished","value":null}` + "\n\n" +
	"id: 4\n" +
	`data: {"type":"CUSTOM","name":"engine.subagent.error","value":"boom"}` + "\n\n" +
	"id: 5\n" +
	`data: {"type":"CUSTOM","name":"engine.events.truncated","value":{}}` + "\n\n" +
	"id: 6\n" +
	`data: {"type":"STATE_SNAPSHOT","snapshot":{"a":1}}` + "\n\n" +
	"id: 7\n" +
	`data: {"type":"TEXT_MESSAGE_CONTENT","messageId":` + "\n\n" +
	"id: not-a-number\n" +
	`data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}` + "\n\n" +
	"data: [DONE]\n\n"

func TestReadFramesTranscript(t *testing.T) {
	t.Parallel()
	type row struct {
		id    string
		seq   int64
		event string
		err   bool
	}
	want := []row{
		{"1", 1, `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`, false},
		{"2", 2, `{"type":"CUSTOM","name":"subagent.started","value":{"agent":"a"}}`, false},
		{"3", 3, `{"type":"CUSTOM","name":"subagent.finished","value":null}`, false},
		{"4", 4, `{"type":"CUSTOM","name":"subagent.error","value":"boom"}`, false},
		{"5", 5, `{"type":"CUSTOM","name":"engine.events.truncated","value":{}}`, false},
		{"6", 6, `{"type":"STATE_SNAPSHOT","snapshot":{"a":1}}`, false},
		{"7", 7, "", true},
		{"not-a-number", 0, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`, false},
	}
	var got []row
	for f, err := range agent.ReadFrames(strings.NewReader(transcript)) {
		r := row{id: f.ID, seq: f.Seq, err: err != nil}
		if err == nil {
			r.event = eventJSON(t, f.Event)
		}
		got = append(got, r)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadAgentEventsTypedAndRenamed(t *testing.T) {
	t.Parallel()
	var names []string
	var types []agui.Type
	for ev, err := range agent.ReadAgentEvents(strings.NewReader(transcript)) {
		if err != nil {
			continue // the one malformed frame; reading goes on
		}
		types = append(types, ev.Type())
		if c, ok := ev.(agui.Custom); ok {
			names = append(names, c.Name)
		}
	}
	if got := strings.Join(names, ","); got != "subagent.started,subagent.finished,subagent.error,engine.events.truncated" {
		t.Fatalf("custom names = %s", got)
	}
	if types[0] != agui.TypeRunStarted || types[len(types)-1] != agui.TypeRunFinished {
		t.Fatalf("types = %v", types)
	}
}

func TestReadAgentEventsTruncatedBody(t *testing.T) {
	t.Parallel()
	var errs []error
	n := 0
	for _, err := range agent.ReadAgentEvents(strings.NewReader("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\ndata: {\"ty")) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n != 1 || len(errs) != 1 || !errors.Is(errs[0], io.ErrUnexpectedEOF) {
		t.Fatalf("events %d, errors %v; want 1 event then an unexpected EOF", n, errs)
	}
}

// run is what the test server streams.
var run = []agui.Event{
	agui.RunStarted{ThreadID: "t-1", RunID: "r-1"},
	agui.StepStarted{StepName: "step-1"},
	agui.TextMessageStart{MessageID: "m-1", Role: agui.RoleAssistant},
	agui.TextMessageContent{MessageID: "m-1", Delta: "Hello\nworld"},
	agui.TextMessageEnd{MessageID: "m-1"},
	agui.Custom{Name: agui.CustomSubagentFinished, Value: json.RawMessage(`{"agent":"x"}`)},
	agui.StepFinished{StepName: "step-1"},
	agui.RunFinished{ThreadID: "t-1", RunID: "r-1", Result: &agui.RunResult{StopReason: agui.StopCompleted}},
}

func streamRun(rw http.ResponseWriter, _ *http.Request) {
	w := httpx.NewSSEWriter(rw, httpx.SSEOptions{})
	defer w.Close()
	for i, ev := range run {
		data, _ := json.Marshal(ev)
		if err := w.WriteEvent(int64(i+1), data); err != nil {
			return
		}
	}
	_ = w.WriteDone()
}

func wantRun(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, ev := range run {
		s := eventJSON(t, ev)
		out = append(out, strings.Replace(s, agui.CustomSubagentFinished, agent.SubagentFinished, 1))
	}
	return out
}

func TestReadAgentEventsOverHTTP(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /chat", streamRun)
	mux.HandleFunc("GET /agent/runs/{id}/events", func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != httpx.SSEContentType {
			http.Error(rw, "want Accept: text/event-stream", http.StatusNotAcceptable)
			return
		}
		streamRun(rw, r)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	collect := func(seq func(func(agui.Event, error) bool)) []string {
		var got []string
		for ev, err := range seq {
			if err != nil {
				t.Fatalf("event error: %v", err)
			}
			got = append(got, eventJSON(t, ev))
		}
		return got
	}
	resp, err := srv.Client().Post(srv.URL+"/chat", "application/json", strings.NewReader(`{"message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]string{
		"response": collect(agent.ReadAgentEventsResponse(resp)),
		"url":      collect(agent.ReadAgentEventsURL(t.Context(), srv.URL+"/agent/runs/r-1/events", srv.Client())),
	} {
		if want := wantRun(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
}

func TestReadAgentEventsHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		status   int
		ctype    string
		body     string
		wantCode string // envelope error code, "" for none
	}{
		{"gate denial envelope", 403, "application/json", `{"data":null,"error":{"code":"Forbidden","data":{"gate":"auth","reason":"scope"}}}`, "Forbidden"},
		{"not found envelope", 404, "application/json", `{"data":null,"error":{"code":"NotFound","data":{}}}`, "NotFound"},
		{"plain text 502", 502, "text/plain", "bad gateway", ""},
		{"json that is not an envelope", 500, "application/json", `{"message":"x"}`, ""},
		{"200 but not a stream", 200, "application/json", `{"data":{"ok":true},"error":null}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
				rw.Header().Set("Content-Type", tc.ctype)
				rw.WriteHeader(tc.status)
				_, _ = io.WriteString(rw, tc.body)
			}))
			defer srv.Close()
			var errs []error
			for ev, err := range agent.ReadAgentEventsURL(t.Context(), srv.URL, srv.Client()) {
				if err == nil {
					t.Fatalf("got an event %v from a failed reply", ev)
				}
				errs = append(errs, err)
			}
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want exactly one", errs)
			}
			re, ok := errors.AsType[*agent.ResponseError](errs[0])
			if !ok {
				t.Fatalf("error %v (%T) is not a *agent.ResponseError", errs[0], errs[0])
			}
			if re.StatusCode != tc.status || string(re.Body) != tc.body {
				t.Fatalf("ResponseError = %d %q", re.StatusCode, re.Body)
			}
			code := ""
			if re.Envelope != nil && re.Envelope.Error != nil {
				code = re.Envelope.Error.Code
			}
			if code != tc.wantCode {
				t.Fatalf("envelope code = %q, want %q", code, tc.wantCode)
			}
			if !strings.Contains(re.Error(), http.StatusText(tc.status)) {
				t.Fatalf("Error() = %q lacks the status", re.Error())
			}
		})
	}
}

func TestReadAgentEventsURLContextCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := httpx.NewSSEWriter(rw, httpx.SSEOptions{})
		defer w.Close()
		data, _ := json.Marshal(agui.RunStarted{ThreadID: "t", RunID: "r"})
		_ = w.WriteEvent(1, data)
		select { // a run that never finishes
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var last error
		for ev, err := range agent.ReadAgentEventsURL(ctx, srv.URL, srv.Client()) {
			if err != nil {
				last = err
				continue
			}
			if ev.Type() == agui.TypeRunStarted {
				cancel()
			}
		}
		done <- last
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading did not stop after the context was cancelled")
	}
}

type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

func TestReadAgentEventsResponseClosesBodyOnBreak(t *testing.T) {
	t.Parallel()
	body := &trackedBody{Reader: strings.NewReader(transcript)}
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, Body: body}
	for range agent.ReadAgentEventsResponse(resp) {
		break
	}
	if !body.closed.Load() {
		t.Fatal("body left open after the loop broke")
	}
}

func ExampleReadFrames() {
	body := strings.NewReader("id: 41\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m-1\",\"delta\":\"Hi\"}\n\n" +
		"id: 42\ndata: {\"type\":\"CUSTOM\",\"name\":\"engine.subagent.started\",\"value\":{}}\n\n" +
		"data: [DONE]\n\n")
	var last int64
	for f, err := range agent.ReadFrames(body) {
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		last = f.Seq
		switch ev := f.Event.(type) {
		case agui.TextMessageContent:
			fmt.Println("text:", ev.Delta)
		case agui.Custom:
			fmt.Println("custom:", ev.Name)
		}
	}
	fmt.Println("resume after seq", last)
	// Output:
	// text: Hi
	// custom: subagent.started
	// resume after seq 42
}
