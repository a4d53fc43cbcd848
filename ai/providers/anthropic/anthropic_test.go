package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
)

// setup starts a fake with turns and a provider pointed at it.
func setup(t *testing.T, turns ...anthropictest.Turn) (*anthropictest.Server, *anthropic.Provider) {
	t.Helper()
	srv := anthropictest.NewServer(turns...)
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Options{BaseURL: srv.URL(), APIKey: "test-key"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, p
}

func userRequest(text string) ai.Request {
	return ai.Request{Model: "claude-test", Messages: []ai.Message{{Role: ai.RoleUser, Content: text}}}
}

func ptr[T any](v T) *T { return &v }

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sameJSON compares two JSON texts by value, ignoring key order.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	return show(va) == show(vb)
}

func TestTextTurn(t *testing.T) {
	t.Parallel()
	srv, p := setup(t, anthropictest.Turn{Text: "Hello there world", Usage: &anthropictest.Usage{InputTokens: 25, OutputTokens: 7}})
	req := userRequest("hi")
	req.System = "be brief"

	var deltas []string
	var chunks []ai.Chunk
	for c, err := range p.Stream(t.Context(), req) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if c.Text != "" {
			deltas = append(deltas, c.Text)
		}
		chunks = append(chunks, c)
	}
	if len(deltas) < 3 || strings.Join(deltas, "") != "Hello there world" {
		t.Fatalf("deltas = %q, want the text in several pieces", deltas)
	}
	reply, err := ai.Collect(replay(chunks))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Hello there world" || reply.FinishReason != "end_turn" || reply.ToolCalls != nil {
		t.Fatalf("reply = %+v", reply)
	}
	want := ai.Usage{InputTokens: ptr[int64](25), OutputTokens: ptr[int64](7)}
	if show(reply.Usage) != show(want) {
		t.Fatalf("usage = %s, want %s", show(reply.Usage), show(want))
	}
	usageChunks := 0
	for _, c := range chunks {
		if c.Usage != nil {
			usageChunks++
		}
	}
	if usageChunks != 1 {
		t.Fatalf("usage chunks = %d, want exactly 1 (input and output merged)", usageChunks)
	}

	got := srv.Requests()[0]
	if got.Model != "claude-test" || !got.Stream || got.MaxTokens != anthropic.DefaultMaxTokens {
		t.Fatalf("request model/stream/max_tokens = %q %v %d", got.Model, got.Stream, got.MaxTokens)
	}
	if got.SystemText() != "be brief" {
		t.Fatalf("system = %s", got.System)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" || got.Messages[0].Content[0].Text != "hi" {
		t.Fatalf("messages = %+v", got.Messages)
	}
	if h := got.Header.Get("X-Api-Key"); h != "test-key" {
		t.Fatalf("x-api-key = %q", h)
	}
}

func replay(chunks []ai.Chunk) func(func(ai.Chunk, error) bool) {
	return func(yield func(ai.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func TestToolCallTurn(t *testing.T) {
	t.Parallel()
	calls := []anthropictest.ToolCall{
		{ID: "toolu_a", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "toolu_b", Name: "get_time", Arguments: `{"zone":"Europe/Paris"}`},
	}
	tests := []struct {
		name    string
		omitIDs bool
		wantIDs []string
	}{
		{name: "with ids", wantIDs: []string{"toolu_a", "toolu_b"}},
		{name: "missing ids", omitIDs: true, wantIDs: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := setup(t, anthropictest.Turn{Text: "Checking.", ToolCalls: calls, OmitToolCallIDs: tt.omitIDs})
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
			if len(pieces) != 2 || pieces[0] < 3 || pieces[1] < 3 {
				t.Fatalf("tool call pieces per index = %v, want indexes 0 and 1 each split over several chunks", pieces)
			}
			reply, err := ai.Collect(replay(chunks))
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "Checking." || reply.FinishReason != "tool_use" || len(reply.ToolCalls) != 2 {
				t.Fatalf("reply = %+v", reply)
			}
			for i, tc := range reply.ToolCalls {
				want := ai.ToolCall{ID: tt.wantIDs[i], Name: calls[i].Name, Arguments: calls[i].Arguments}
				if tc != want {
					t.Errorf("tool call %d = %+v, want %+v", i, tc, want)
				}
			}
			if !reply.Usage.IsZero() {
				t.Errorf("usage = %s, want none reported", show(reply.Usage))
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		msg     string
		errType string
	}{
		{http.StatusBadRequest, "max_tokens: field required", "invalid_request_error"},
		{http.StatusUnauthorized, "invalid x-api-key", "authentication_error"},
		{http.StatusTooManyRequests, "Number of requests has exceeded your rate limit", "rate_limit_error"},
		{http.StatusInternalServerError, "Internal server error", "api_error"},
		{529, "Overloaded", "overloaded_error"},
	}
	for _, tt := range tests {
		t.Run(tt.errType, func(t *testing.T) {
			t.Parallel()
			srv, p := setup(t, anthropictest.Turn{Status: tt.status, ErrorMessage: tt.msg})
			_, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
			var perr *ai.ProviderError
			if !errors.As(err, &perr) {
				t.Fatalf("err = %v (%T), want *ai.ProviderError", err, err)
			}
			if perr.Status != tt.status || perr.Message != tt.msg || perr.Type != tt.errType || perr.Provider != "anthropic" {
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
	_, p := setup(t, anthropictest.Turn{Text: "partial answer", ErrorMessage: "Overloaded"})
	reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
	var perr *ai.ProviderError
	if !errors.As(err, &perr) || perr.Message != "Overloaded" || perr.Type != "overloaded_error" || perr.Status != 0 {
		t.Fatalf("err = %v, want a stream ProviderError with the provider's message", err)
	}
	if reply.Text != "partial answer" {
		t.Fatalf("text before the error = %q", reply.Text)
	}
}

func TestCancelAbortsRequest(t *testing.T) {
	t.Parallel()
	srv, p := setup(t, anthropictest.Turn{Text: strings.Repeat("slow ", 200), Delay: 20 * time.Millisecond})
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
	srv, p := setup(t, anthropictest.Turn{Text: strings.Repeat("slow ", 200), Delay: 20 * time.Millisecond})
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
	srv, p := setup(t, anthropictest.Turn{Text: "first"}, anthropictest.Turn{Text: "It is 18°C in Paris."})
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)
	req := ai.Request{
		Model:     "claude-test",
		System:    "You are a weather bot.",
		MaxTokens: 300,
		Tools:     []ai.ToolSpec{{Name: "get_weather", Description: "Weather for a city", Parameters: schema}},
		Messages: []ai.Message{
			{Role: ai.RoleUser, Content: "Weather in Paris and London?"},
			{Role: ai.RoleAssistant, Content: "Let me check.", ToolCalls: []ai.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "toolu_2", Name: "get_weather", Arguments: `{"city":"London"}`},
			}},
			{Role: ai.RoleTool, ToolCallID: "toolu_1", Content: `{"tempC":18}`},
			{Role: ai.RoleTool, ToolCallID: "toolu_2", Content: `{"tempC":12}`},
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
	if got.MaxTokens != 300 || got.SystemText() != "You are a weather bot." {
		t.Fatalf("max_tokens/system = %d %s", got.MaxTokens, got.System)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "get_weather" || got.Tools[0].Description != "Weather for a city" ||
		!sameJSON(t, got.Tools[0].InputSchema, schema) {
		t.Fatalf("tools = %+v, schema %s", got.Tools, got.Tools[0].InputSchema)
	}
	if len(got.Messages) != 3 {
		t.Fatalf("messages = %+v, want user, assistant, user(tool results)", got.Messages)
	}
	a := got.Messages[1]
	if a.Role != "assistant" || len(a.Content) != 3 || a.Content[0].Type != "text" || a.Content[0].Text != "Let me check." {
		t.Fatalf("assistant message = %+v", a)
	}
	for i, want := range []struct{ id, input string }{{"toolu_1", `{"city":"Paris"}`}, {"toolu_2", `{"city":"London"}`}} {
		b := a.Content[i+1]
		if b.Type != "tool_use" || b.ID != want.id || b.Name != "get_weather" || !sameJSON(t, b.Input, []byte(want.input)) {
			t.Fatalf("tool_use block %d = %+v", i, b)
		}
	}
	r := got.Messages[2]
	if r.Role != "user" || len(r.Content) != 2 {
		t.Fatalf("tool results message = %+v", r)
	}
	for i, want := range []struct{ id, content string }{{"toolu_1", `{"tempC":18}`}, {"toolu_2", `{"tempC":12}`}} {
		b := r.Content[i]
		if b.Type != "tool_result" || b.ToolUseID != want.id || b.ContentText() != want.content {
			t.Fatalf("tool_result block %d = %+v", i, b)
		}
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
		{"bad args", ai.Request{Model: "m", Messages: []ai.Message{{Role: ai.RoleAssistant,
			ToolCalls: []ai.ToolCall{{ID: "1", Name: "f", Arguments: "{oops"}}}}}, "not JSON"},
		{"bad schema", ai.Request{Model: "m", Tools: []ai.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, "not a JSON object"},
		{"non-object schema", ai.Request{Model: "m", Tools: []ai.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":"string"}`)}}}, `want "object"`},
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
	if _, err := anthropic.New(anthropic.Options{MaxRetries: -1}); err == nil {
		t.Fatal("New accepted MaxRetries -1")
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn anthropictest.Turn
		want ai.Usage
	}{
		{name: "absent", turn: anthropictest.Turn{Text: "ok"}},
		{name: "counts", turn: anthropictest.Turn{Text: "ok", Usage: &anthropictest.Usage{InputTokens: 5, OutputTokens: 2}},
			want: ai.Usage{InputTokens: ptr[int64](5), OutputTokens: ptr[int64](2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, p := setup(t, tt.turn)
			reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
			if err != nil {
				t.Fatal(err)
			}
			if show(reply.Usage) != show(tt.want) {
				t.Fatalf("usage = %s, want %s", show(reply.Usage), show(tt.want))
			}
		})
	}
}

// TestIgnoresEnvironment pins the package promise: ANTHROPIC_* variables are never read, so a real key is not sent
// to the server the application configured. Not parallel: it sets environment variables.
func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := anthropictest.NewServer(anthropictest.Turn{Text: "ok"})
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Options{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ai.Collect(p.Stream(t.Context(), userRequest("hi"))); err != nil {
		t.Fatalf("stream: %v (did the base URL come from the environment?)", err)
	}
	h := srv.Requests()[0].Header
	if strings.Contains(h.Get("X-Api-Key"), "must-not-leak") || strings.Contains(h.Get("Authorization"), "must-not-leak") {
		t.Fatalf("headers = %v: the key came from the environment", h)
	}
}

// An event line longer than MaxEventBytes fails the reply at the bound, after the
// events before it; a negative bound is refused.
func TestALongEventLineFails(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServer(anthropictest.Turn{Text: "ok " + strings.Repeat("x", 8192)})
	t.Cleanup(srv.Close)
	p, err := anthropic.New(anthropic.Options{BaseURL: srv.URL(), MaxEventBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := ai.Collect(p.Stream(t.Context(), userRequest("hi")))
	if err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") || reply.Text != "ok " {
		t.Fatalf("reply %q, err %v: want the text before the long line and an error naming the bound", reply.Text, err)
	}
	if _, err := anthropic.New(anthropic.Options{MaxEventBytes: -1}); err == nil {
		t.Fatal("New accepted MaxEventBytes -1")
	}
}
