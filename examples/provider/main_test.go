package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
)

// TestProviders runs the example's agent against in-process fakes of both providers'
// streaming APIs, chosen the way the command chooses them, from the environment: the
// model calls the weather tool, then answers.
func TestProviders(t *testing.T) {
	t.Parallel()
	openaiFake := openaitest.NewServer(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "tools_weather", Arguments: `{"city":"Paris"}`}},
			Usage: &openaitest.Usage{PromptTokens: 120, CompletionTokens: 15}},
		openaitest.Turn{Text: "It is 17 °C in Paris."},
	)
	t.Cleanup(openaiFake.Close)
	anthropicFake := anthropictest.NewServer(
		anthropictest.Turn{ToolCalls: []anthropictest.ToolCall{{ID: "toolu_1", Name: "tools_weather", Arguments: `{"city":"Paris"}`}}},
		anthropictest.Turn{Text: "It is 17 °C in Paris."},
	)
	t.Cleanup(anthropicFake.Close)

	cases := []struct {
		name, provider string
		env            map[string]string
	}{
		{"openai", "openai", map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openaiFake.URL()}},
		{"compatible server without a key", "openai", map[string]string{"OPENAI_BASE_URL": openaiFake.URL(), "OPENAI_MODEL": "llama3.2"}},
		{"anthropic", "anthropic", map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": anthropicFake.URL()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model, err := modelFromEnv(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got := model.Provider().Name(); got != tc.provider {
				t.Fatalf("provider %q, want %q", got, tc.provider)
			}
			app, err := newApp(model)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(app.Handler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/chat", "application/json", strings.NewReader(`{"message":"Weather in Paris?"}`))
			if err != nil {
				t.Fatal(err)
			}
			var result string
			var fin *agui.RunFinished
			for ev, err := range agent.ReadAgentEventsResponse(resp) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev := ev.(type) {
				case agui.ToolCallResult:
					result = ev.Content
				case agui.RunFinished:
					fin = &ev
				}
			}
			if result != `{"city":"Paris","tempC":17}` {
				t.Errorf("tool result %q", result)
			}
			if fin == nil || fin.Result == nil || fin.Result.StopReason != agui.StopCompleted {
				t.Fatalf("RUN_FINISHED %+v, want stop reason completed", fin)
			}
		})
	}
}

// TestNoProvider checks that the command refuses to start without a provider, and says
// where the offline model is.
func TestNoProvider(t *testing.T) {
	t.Parallel()
	_, err := modelFromEnv(func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "examples/quickstart") {
		t.Fatalf("err = %v", err)
	}
}
