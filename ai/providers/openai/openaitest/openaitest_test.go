package openaitest_test

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

func cost(v float64) *float64 { return &v }

// TestTranscripts pins the bytes the fake sends, so a change to the wire format is a reviewed diff.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn openaitest.Turn
		body string
	}{
		{"text", openaitest.Turn{Text: "Hello <b> & world", Usage: &openaitest.Usage{PromptTokens: 9, CompletionTokens: 4}},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`},
		{"tool_calls", openaitest.Turn{
			ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "get_time", Arguments: `{"zone":"Europe/Paris"}`}},
			Usage: &openaitest.Usage{PromptTokens: 20, CompletionTokens: 12, Cost: cost(0.00042)}},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`},
		{"reasoning", openaitest.Turn{Reasoning: "The user greets me.", Text: "Hello",
			Usage: &openaitest.Usage{PromptTokens: 9, CompletionTokens: 30, ReasoningTokens: 24}},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low"}`},
		{"reasoning_field", openaitest.Turn{Reasoning: "Hmm.", ReasoningField: "reasoning", Text: "Hi"},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{"no_usage_requested", openaitest.Turn{Text: "ok", Usage: &openaitest.Usage{PromptTokens: 1, CompletionTokens: 1}},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{"stream_error", openaitest.Turn{Text: "partial", ErrorMessage: "The server had an error"},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{"http_error", openaitest.Turn{Status: 429, ErrorMessage: "Rate limit reached"},
			`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}],"stream":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := openaitest.NewServer(tt.turn)
			defer srv.Close()
			resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := []byte(resp.Status + "\n" + resp.Header.Get("Content-Type") + "\n\n" + string(body))
			golden(t, filepath.Join("testdata", tt.name+".golden"), got)
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (run with -update after review)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestRequestsAreRecorded(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServer(openaitest.Turn{Text: "a"}, openaitest.Turn{Text: "b"})
	defer srv.Close()
	bodies := []string{
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"par"},{"type":"text","text":"ts"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`,
		`{"model":"m","messages":[{"role":"assistant","content":"1"},{"role":"assistant","content":"2"}]}`,
		`not json`,
	}
	wantStatus := []int{200, 200, 500, 400}
	for i, b := range bodies {
		resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != wantStatus[i] {
			t.Errorf("request %d: status %d, want %d", i, resp.StatusCode, wantStatus[i])
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || srv.RequestCount() != 3 {
		t.Fatalf("recorded %d requests, want 3 (the undecodable one is not a request)", len(reqs))
	}
	if got := reqs[0].Messages[0].Text(); got != "parts" {
		t.Errorf("text parts = %q", got)
	}
	m := reqs[1].Messages[1]
	if m.Role != "assistant" || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "f" || reqs[1].Messages[2].ToolCallID != "c" {
		t.Errorf("assistant/tool messages = %+v", reqs[1].Messages)
	}
	if string(reqs[1].Raw) != bodies[1] {
		t.Errorf("Raw = %s", reqs[1].Raw)
	}
}

func TestNewServerFunc(t *testing.T) {
	t.Parallel()
	srv := openaitest.NewServerFunc(func(req openaitest.Request) openaitest.Turn {
		return openaitest.Turn{Text: "echo-" + req.Messages[len(req.Messages)-1].Text()}
	})
	defer srv.Close()
	resp, err := http.Post(srv.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"assistant","content":"a"},{"role":"user","content":"marker"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"content":"echo-marker"`) {
		t.Fatalf("status %d, body:\n%s", resp.StatusCode, body)
	}
}
