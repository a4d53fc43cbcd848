package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// setup starts a fake with turns and a provider pointed at it.
func setup(t *testing.T, turns ...openaitest.Turn) (*openaitest.Server, *openai.Provider) {
	t.Helper()
	srv := openaitest.NewServer(turns...)
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.Options{BaseURL: srv.URL(), APIKey: "test-key"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, p
}

func userRequest(text string) ai.Request {
	return ai.Request{Model: "gpt-test", Messages: []ai.Message{{Role: ai.RoleUser, Content: text}}}
}

func ptr[T any](v T) *T { return &v }

func TestTextTurn(t *testing.T) {
	t.Parallel()
	srv, p := setup(t, openaitest.Turn{Text: "Hello there world", Usage: &openaitest.Usage{PromptTokens: 12, CompletionTokens: 3}})
	req := userRequest("hi")
	req.System = "be brief"
	req.MaxTokens = 64

	var deltas []string
	for c, err := range p.Stream(t.Context(), req) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if c.Text != "" {
			deltas = append(deltas, c.Text)
		}
	}
	if len(deltas) < 3 || strings.Join(deltas, "") != "Hello there world" {
		t.Fatalf("deltas = %q, want the text in several pieces", deltas)
	}

	reply, err := ai.Collect(p.Stream(t.Context(), req))
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if reply.Text != "Hello there world" || reply.FinishReason != "stop" || reply.ToolCalls != nil {
		t.Fatalf("reply = %+v", reply)
	}
	if u := reply.Usage; u.InputTokens == nil || *u.InputTokens != 12 || u.OutputTokens == nil || *u.OutputTokens != 3 || u.Cost != nil {
		t.Fatalf("usage = %+v, want 12 in, 3 out, no cost", u)
	}

	got := srv.Requests()[0]
	if got.Model != "gpt-test" || !got.Stream || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage {
		t.Fatalf("request model/stream = %q %v %+v", got.Model, got.Stream, got.StreamOptions)
	}
	if got.MaxCompletionTokens == nil || *got.MaxCompletionTokens != 64 {
		t.Fatalf("max_completion_tokens = %v, want 64", got.MaxCompletionTokens)
	}
	if len(got.Messages) != 2 || got.Messages[0].Role != "system" || got.Messages[0].Text() != "be brief" ||
		got.Messages[1].Role != "user" || got.Messages[1].Text() != "hi" {
		t.Fatalf("messages = %+v", got.Messages)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer test-key" {
		t.Fatalf("Authorization = %q", h)
	}
}

func TestToolCallTurn(t *testing.T) {
	t.Parallel()
	calls := []openaitest.ToolCall{
		{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "call_b", Name: "get_time", Arguments: `{"zone":"Europe/Paris"}`},
	}
	tests := []struct {
		name    string
		omitIDs bool
		wantIDs []string
	}{
		{name: "with ids", wantIDs: []string{"call_a", "call_b"}},
		{name: "missing ids", omitIDs: true, wantIDs: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := setup(t, openaitest.Turn{Text: "Checking.", ToolCalls: calls, OmitToolCallIDs: tt.omitIDs})
			pieces := map[int]int{}
			var chunks []ai.Chunk
			for c, err := range p.Stream(t.Context(), userRequest("weather?")) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				if c.ToolCall != nil {
					pieces[c.ToolCall.Index]++
				}
				chunks = append(chunks, c)
			}
			if pieces[0] < 3 || pieces[1] < 3 {
				t.Fatalf("tool call pieces per index = %v, want each call split over several chunks", pieces)
			}
			reply, err := ai.Collect(func(yield func(ai.Chunk, error) bool) {
				for _, c := range chunks {
					if !yield(c, nil) {
						return
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "Checking." || reply.FinishReason != "tool_calls" || len(reply.ToolCalls) != 2 {
				t.Fatalf("reply = %+v", reply)
			}
			for i, tc := range reply.ToolCalls {
				want := ai.ToolCall{ID: tt.wantIDs[i], Name: calls[i].Name, Arguments: calls[i].Arguments}
				if tc != want {
					t.Errorf("tool call %d = %+v, want %+v", i, tc, want)
				}
			}
			if !reply.Usage.IsZero() {
				t.Errorf("usage = %+v, want none reported", reply.Usage)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn openaitest.Turn
		want ai.Usage
	}{
		{name: "absent", turn: openaitest.Turn{Text: "ok"}},
		{name: "counts", turn: openaitest.Turn{Text: "ok", Usage: &openaitest.Usage{PromptTokens: 5, CompletionTokens: 1}},
			want: ai.Usage{InputTokens: ptr[int64](5), OutputTokens: ptr[int64](1)}},
		{name: "provider cost", turn: openaitest.Turn{Text: "ok", Usage: &openaitest.Usage{PromptTokens: 5, CompletionTokens: 1, Cost: ptr(0.0042)}},
			want: ai.Usage{InputTokens: ptr[int64](5), OutputTokens: ptr[int64](1), Cost: ptr(0.0042)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := setup(t, tt.turn)
			reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
			if err != nil {
				t.Fatal(err)
			}
			if !sameUsage(reply.Usage, tt.want) {
				t.Fatalf("usage = %s, want %s", show(reply.Usage), show(tt.want))
			}
		})
	}
}

func sameUsage(a, b ai.Usage) bool {
	return show(a) == show(b)
}

func show(u ai.Usage) string {
	b, _ := json.Marshal(u)
	return string(b)
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		msg    string
	}{
		{http.StatusBadRequest, "Invalid value for 'model'"},
		{http.StatusUnauthorized, "Incorrect API key provided"},
		{http.StatusTooManyRequests, "Rate limit reached"},
		{http.StatusInternalServerError, "The server had an error"},
		{http.StatusServiceUnavailable, "Overloaded"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			srv, p := setup(t, openaitest.Turn{Status: tt.status, ErrorMessage: tt.msg})
			_, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
			var perr *ai.ProviderError
			if !errors.As(err, &perr) {
				t.Fatalf("err = %v (%T), want *ai.ProviderError", err, err)
			}
			if perr.Status != tt.status || perr.Message != tt.msg || perr.Provider != "openai" {
				t.Fatalf("error = %+v", perr)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err.Error() = %q lacks the provider's message", err)
			}
			if n := srv.RequestCount(); n != 1 {
				t.Fatalf("requests = %d, want 1 (no retries by default)", n)
			}
		})
	}
}

func TestMidStreamError(t *testing.T) {
	t.Parallel()
	_, p := setup(t, openaitest.Turn{Text: "partial answer", ErrorMessage: "upstream model crashed"})
	reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
	var perr *ai.ProviderError
	if !errors.As(err, &perr) || perr.Message != "upstream model crashed" || perr.Status != 0 {
		t.Fatalf("err = %v, want a stream ProviderError with the provider's message", err)
	}
	if reply.Text != "partial answer" {
		t.Fatalf("text before the error = %q", reply.Text)
	}
}

func TestCancelAbortsRequest(t *testing.T) {
	t.Parallel()
	srv, p := setup(t, openaitest.Turn{Text: strings.Repeat("slow ", 200), Delay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		got     int
		lastErr error
	)
	for c, err := range p.Stream(ctx, userRequest("hi")) {
		if err != nil {
			lastErr = err
			break
		}
		if c.Text != "" {
			got++
			if got == 2 {
				cancel()
			}
		}
	}
	if !errors.Is(lastErr, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", lastErr)
	}
	if got >= 200 {
		t.Fatalf("received %d deltas, the stream did not stop", got)
	}
	waitDisconnect(t, srv.Disconnected())
}

func TestBreakAbortsRequest(t *testing.T) {
	t.Parallel()
	srv, p := setup(t, openaitest.Turn{Text: strings.Repeat("slow ", 200), Delay: 20 * time.Millisecond})
	for c, err := range p.Stream(t.Context(), userRequest("hi")) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Text != "" {
			break
		}
	}
	waitDisconnect(t, srv.Disconnected())
}

// waitDisconnect waits, with a generous deadline, for the fake to see the client go away.
func waitDisconnect(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the client disconnect")
	}
}

func TestRequestCarriesToolsAndHistory(t *testing.T) {
	t.Parallel()
	srv, p := setup(t, openaitest.Turn{Text: "first"}, openaitest.Turn{Text: "It is 18°C in Paris."})
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	req := ai.Request{
		Model:  "gpt-test",
		System: "You are a weather bot.",
		Tools:  []ai.ToolSpec{{Name: "get_weather", Description: "Weather for a city", Parameters: schema}},
		Messages: []ai.Message{
			{Role: ai.RoleUser, Content: "Weather in Paris?"},
			{Role: ai.RoleAssistant, ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			{Role: ai.RoleTool, ToolCallID: "call_1", Content: `{"tempC":18}`},
		},
	}
	reply, err := ai.Collect(p.Stream(t.Context(), req))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "It is 18°C in Paris." {
		t.Fatalf("text = %q: the turn was not chosen by assistant message count", reply.Text)
	}
	got := srv.Requests()[0]
	if len(got.Tools) != 1 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "get_weather" ||
		got.Tools[0].Function.Description != "Weather for a city" {
		t.Fatalf("tools = %+v", got.Tools)
	}
	var gotSchema, wantSchema any
	_ = json.Unmarshal(got.Tools[0].Function.Parameters, &gotSchema)
	_ = json.Unmarshal(schema, &wantSchema)
	if show2(gotSchema) != show2(wantSchema) {
		t.Fatalf("parameters = %s, want %s", got.Tools[0].Function.Parameters, schema)
	}
	if len(got.Messages) != 4 {
		t.Fatalf("messages = %+v", got.Messages)
	}
	if m := got.Messages[0]; m.Role != "system" || m.Text() != "You are a weather bot." {
		t.Fatalf("system message = %+v", m)
	}
	a := got.Messages[2]
	if a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Name != "get_weather" || a.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("assistant message = %+v", a)
	}
	if m := got.Messages[3]; m.Role != "tool" || m.ToolCallID != "call_1" || m.Text() != `{"tempC":18}` {
		t.Fatalf("tool message = %+v", m)
	}
}

func show2(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestEmptyKeySendsNoAuthorization(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(openaitest.Turn{Text: "ok"})
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.Options{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
	if err != nil || reply.Text != "ok" {
		t.Fatalf("reply = %+v, err = %v", reply, err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); strings.TrimSpace(strings.TrimPrefix(h, "Bearer")) != "" {
		t.Fatalf("Authorization = %q, want no key", h)
	}
}

func TestBadRequestsFailBeforeSending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  ai.Request
		want string
	}{
		{"no model", ai.Request{Messages: []ai.Message{{Role: ai.RoleUser, Content: "x"}}}, "no model"},
		{"unknown role", ai.Request{Model: "m", Messages: []ai.Message{{Role: "robot", Content: "x"}}}, `unknown role "robot"`},
		{"tool without id", ai.Request{Model: "m", Messages: []ai.Message{{Role: ai.RoleTool, Content: "x"}}}, "no ToolCallID"},
		{"bad schema", ai.Request{Model: "m", Tools: []ai.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, "not a JSON object"},
		{"negative max tokens", ai.Request{Model: "m", MaxTokens: -1}, "negative"},
	}
	srv, p := setup(t)
	for _, tt := range tests {
		_, err := ai.Collect(p.Stream(t.Context(), tt.req))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
	if n := srv.RequestCount(); n != 0 {
		t.Fatalf("requests sent = %d, want 0", n)
	}
}

func TestNewRejectsNegativeRetries(t *testing.T) {
	t.Parallel()
	if _, err := openai.New(openai.Options{MaxRetries: -1}); err == nil {
		t.Fatal("New accepted MaxRetries -1")
	}
}

// TestIgnoresEnvironment pins the package promise: OPENAI_* variables are never read, so a real key is not sent to
// the server the application configured. Not parallel: it sets environment variables.
func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	srv := openaitest.NewServer(openaitest.Turn{Text: "ok"})
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.Options{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ai.Collect(p.Stream(t.Context(), userRequest("hi"))); err != nil {
		t.Fatalf("stream: %v (did the base URL come from the environment?)", err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); strings.Contains(h, "must-not-leak") {
		t.Fatalf("Authorization = %q: the key came from the environment", h)
	}
}

// An event line longer than MaxEventBytes fails the reply at the bound, after the
// events before it; a negative bound is refused.
func TestALongEventLineFails(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(openaitest.Turn{Text: "ok " + strings.Repeat("x", 8192)})
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.Options{BaseURL: srv.URL(), MaxEventBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
	if err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") || reply.Text != "ok " {
		t.Fatalf("reply %q, err %v: want the text before the long line and an error naming the bound", reply.Text, err)
	}
	if _, err := openai.New(openai.Options{MaxEventBytes: -1}); err == nil {
		t.Fatal("New accepted MaxEventBytes -1")
	}
}
