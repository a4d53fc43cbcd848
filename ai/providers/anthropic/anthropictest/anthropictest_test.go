package anthropictest_test

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// TestTranscripts pins the bytes the fake sends, so a change to the wire format is a reviewed diff.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		turn anthropictest.Turn
	}{
		{"text", anthropictest.Turn{Text: "Hello <b> & world", Usage: &anthropictest.Usage{InputTokens: 9, OutputTokens: 4}}},
		{"tool_calls", anthropictest.Turn{Text: "Checking.",
			ToolCalls: []anthropictest.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "toolu_2", Name: "get_time", Arguments: `{"zone":"Europe/Paris"}`}},
			Usage: &anthropictest.Usage{InputTokens: 20, OutputTokens: 12}}},
		{"thinking", anthropictest.Turn{Thinking: "The user wants the weather.", RedactedThinking: "EmwKAhgBEgy3va3pzix/LafPsn4",
			ToolCalls: []anthropictest.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			Usage:     &anthropictest.Usage{InputTokens: 20, OutputTokens: 60}}},
		{"no_usage_no_ids", anthropictest.Turn{OmitToolCallIDs: true,
			ToolCalls: []anthropictest.ToolCall{{ID: "toolu_1", Name: "f", Arguments: `{}`}}}},
		{"stream_error", anthropictest.Turn{Text: "partial", ErrorMessage: "Overloaded"}},
		{"http_error", anthropictest.Turn{Status: 529, ErrorMessage: "Overloaded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := anthropictest.NewServer(tt.turn)
			defer srv.Close()
			resp, err := http.Post(srv.URL()+"/v1/messages", "application/json",
				strings.NewReader(`{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"stream":true}`))
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
	srv := anthropictest.NewServer(anthropictest.Turn{Text: "a"}, anthropictest.Turn{Text: "b"})
	defer srv.Close()
	bodies := []string{
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"m","max_tokens":5,"system":"plain","messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"1"},{"role":"assistant","content":"2"}]}`,
		`not json`,
	}
	wantStatus := []int{200, 200, 500, 400}
	for i, b := range bodies {
		resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(b))
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
	if reqs[0].SystemText() != "sys" || reqs[1].SystemText() != "plain" {
		t.Errorf("system = %q, %q", reqs[0].SystemText(), reqs[1].SystemText())
	}
	if c := reqs[0].Messages[0].Content; len(c) != 1 || c[0].Type != "text" || c[0].Text != "x" {
		t.Errorf("string content = %+v", c)
	}
	use, res := reqs[1].Messages[1].Content[0], reqs[1].Messages[2].Content[0]
	if use.Type != "tool_use" || use.ID != "t1" || string(use.Input) != `{"a":1}` || res.ToolUseID != "t1" || res.ContentText() != "r" {
		t.Errorf("tool blocks = %+v / %+v", use, res)
	}
}

func TestNewServerFunc(t *testing.T) {
	t.Parallel()
	srv := anthropictest.NewServerFunc(func(req anthropictest.Request) anthropictest.Turn {
		return anthropictest.Turn{Text: "echo-" + req.Messages[len(req.Messages)-1].Content[0].Text}
	})
	defer srv.Close()
	resp, err := http.Post(srv.URL()+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"a"},{"role":"user","content":"marker"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"text":"echo-marker"`) {
		t.Fatalf("status %d, body:\n%s", resp.StatusCode, body)
	}
}
