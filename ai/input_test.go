package ai_test

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// conversations returns, per model request received, its messages as "role: text".
func conversations(t *testing.T, fake fakeModel) [][]string {
	t.Helper()
	var out [][]string
	switch f := fake.(type) {
	case *openaitest.Server:
		for _, r := range f.Requests() {
			var msgs []string
			for _, m := range r.Messages {
				msgs = append(msgs, m.Role+": "+m.Text())
			}
			out = append(out, msgs)
		}
	case *anthropictest.Server:
		for _, r := range f.Requests() {
			var msgs []string
			for _, m := range r.Messages {
				var text []string
				for _, b := range m.Content {
					text = append(text, b.Text)
				}
				msgs = append(msgs, m.Role+": "+strings.Join(text, ""))
			}
			out = append(out, msgs)
		}
	default:
		t.Fatalf("unknown fake %T", fake)
	}
	return out
}

// TestInputForms checks item 10: a string and {message} are the same turn, {messages}
// sends the whole conversation, and both at once fail with a message saying to pass
// message or messages, not both.
func TestInputForms(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{kind: kind, turns: []turn{{Text: "Hi."}, {Text: "Fine."}}})
			w.stream(t, "/chat/plain", chatBody(t, ChatIn{Text: "hello"}))
			w.stream(t, "/chat/plain", chatBody(t, ChatIn{Message: "hello"}))
			w.stream(t, "/chat/plain", chatBody(t, ChatIn{Messages: []ai.InputMessage{
				{Role: "user", Content: "hello"}, {Role: "assistant", Content: "Hi."}, {Role: "user", Content: "how are you?"},
			}}))
			convs := conversations(t, w.model)
			if len(convs) != 3 {
				t.Fatalf("%d model requests, want 3", len(convs))
			}
			eq(t, "string input", strings.Join(convs[0], " | "), "user: hello")
			eq(t, "{message} input", strings.Join(convs[1], " | "), strings.Join(convs[0], " | "))
			eq(t, "{messages} input", strings.Join(convs[2], " | "), "user: hello | assistant: Hi. | user: how are you?")
		})
	}
}

// TestInputErrors checks the inputs ai.Run refuses, and that it says why.
func TestInputErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   ChatIn
		want string
		is   error
	}{
		{"message and messages", ChatIn{Message: "a", Messages: []ai.InputMessage{{Role: "user", Content: "b"}}},
			"pass message or messages, not both", ai.ErrMessageAndMessages},
		{"neither", ChatIn{}, "needs a message or messages", nil},
		{"bad role", ChatIn{Messages: []ai.InputMessage{{Role: "robot", Content: "b"}}}, `role must be user, assistant, tool, system, developer, activity or reasoning, got "robot"`, nil},
	}
	w := newWorld(t, setup{turns: []turn{{Text: "never"}}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Not parallel: the subtests share the world's last run error.
			status, body := w.post(t, "/chat/plain", chatBody(t, tc.in))
			if status < 400 {
				t.Errorf("status %d, want a failure: %s", status, body)
			}
			w.mu.Lock()
			err := w.runErr
			w.mu.Unlock()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ai.Run error = %v, want one containing %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
		})
	}
	eq(t, "model requests", w.model.RequestCount(), 0)
}

var runIDShape = regexp.MustCompile(`^run_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestThreadID checks that the thread id defaults to the run id, which is unique per run
// and random (never a counter), and that an explicit thread id is used in RUN_STARTED
// and RUN_FINISHED.
func TestThreadID(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi."}}})
	seen := map[string]bool{}
	for range 3 {
		tr := w.stream(t, "/chat/plain", `{"message":"hi"}`)
		s, f := tr.started(t), tr.finished(t)
		if !runIDShape.MatchString(s.RunID) {
			t.Errorf("run id %q is not a random id", s.RunID)
		}
		if seen[s.RunID] {
			t.Errorf("run id %q repeated", s.RunID)
		}
		seen[s.RunID] = true
		eq(t, "default threadId", s.ThreadID, s.RunID)
		eq(t, "RUN_FINISHED.threadId", f.ThreadID, s.RunID)
		eq(t, "RUN_FINISHED.runId", f.RunID, s.RunID)
	}
	tr := w.stream(t, "/chat/plain", chatBody(t, ChatIn{Message: "hi", ThreadID: "thread-42"}))
	s, f := tr.started(t), tr.finished(t)
	eq(t, "explicit RUN_STARTED.threadId", s.ThreadID, "thread-42")
	eq(t, "explicit RUN_FINISHED.threadId", f.ThreadID, "thread-42")
	if s.RunID == "thread-42" || !runIDShape.MatchString(s.RunID) {
		t.Errorf("runId %q must stay the run's own id", s.RunID)
	}
	golden(t, "thread_id", tr)
	checkFollow(t, w, "thread_id", tr)
}

// TestInputAsAnyValue checks the "any value encoding to a string, {message} or
// {messages}" form of ai.Run's input: it must mean exactly what the typed forms mean,
// thread id included.
func TestInputAsAnyValue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi."}, {Text: "Fine."}}})
	w.stream(t, "/chat/plain", `{"raw":"hello"}`)
	w.stream(t, "/chat/plain", `{"raw":{"message":"hello"}}`)
	w.stream(t, "/chat/plain", `{"raw":{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"Hi."},{"role":"user","content":"and?"}]}}`)
	convs := conversations(t, w.model)
	if len(convs) != 3 {
		t.Fatalf("%d model requests, want 3", len(convs))
	}
	eq(t, "raw string", strings.Join(convs[0], " | "), "user: hello")
	eq(t, "raw {message}", strings.Join(convs[1], " | "), "user: hello")
	eq(t, "raw {messages}", strings.Join(convs[2], " | "), "user: hello | assistant: Hi. | user: and?")

	status, _ := w.post(t, "/chat/plain", `{"raw":{"message":"a","messages":[{"role":"user","content":"b"}]}}`)
	if status < 400 {
		t.Errorf("status %d for both message and messages", status)
	}
	w.mu.Lock()
	err := w.runErr
	w.mu.Unlock()
	if !errors.Is(err, ai.ErrMessageAndMessages) {
		t.Errorf("raw message and messages: error %v, want ai.ErrMessageAndMessages", err)
	}
}

// TestInputThreadIDInAnyValue checks that a threadId member of an input given as a plain
// value (here JSON) is used like ai.Input.ThreadID.
func TestInputThreadIDInAnyValue(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi."}}})
	tr := w.stream(t, "/chat/plain", `{"raw":{"message":"hello","threadId":"thread-raw"}}`)
	eq(t, "RUN_STARTED.threadId", tr.started(t).ThreadID, "thread-raw")
	eq(t, "RUN_FINISHED.threadId", tr.finished(t).ThreadID, "thread-raw")
}

// TestAgentDeclarationErrors checks that a badly declared agent fails at ai.Run with an
// error naming the problem, before any model call.
func TestAgentDeclarationErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		s    setup
		want string
	}{
		{"negative maxSteps", setup{maxSteps: -1}, "maxSteps must not be negative"},
		{"negative budget", setup{agentOpts: []ai.AgentOption{ai.Budget(-1)}}, "budget must not be negative"},
		{"unbound tool", setup{tools: []string{"tools.nowhere"}}, "tool flow tools.nowhere is not bound"},
		{"negative price", setup{modelOpts: []ai.ModelOption{ai.WithPricing(-1, 0)}}, "negative price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.s.turns = []turn{{Text: "never"}}
			w := newWorld(t, tc.s)
			status, body := w.post(t, "/chat/plain", `{"message":"hi"}`)
			if status < 400 {
				t.Errorf("status %d: %s", status, body)
			}
			w.mu.Lock()
			err := w.runErr
			w.mu.Unlock()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ai.Run error = %v, want one containing %q", err, tc.want)
			}
			eq(t, "model requests", w.model.RequestCount(), 0)
		})
	}
}

// TestInputThreadIDNoJournalCanStore: a threadId holding a NUL character is bad input,
// answered 400 at threadId before any run begins (no driver could record the thread).
func TestInputThreadIDNoJournalCanStore(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "never"}}})
	status, body := w.post(t, "/chat/agui", `{"threadId":"t\u0000","runId":"r","messages":[{"id":"u","role":"user","content":"hi"}]}`)
	if status != http.StatusBadRequest || !strings.Contains(body, `"ValidationError"`) || !strings.Contains(body, `"threadId"`) {
		t.Fatalf("status %d: %s, want 400 ValidationError at threadId", status, body)
	}
	if n := w.model.RequestCount(); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}
