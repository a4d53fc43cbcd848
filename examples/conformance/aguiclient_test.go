package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/internal/testenv"
)

// TestAGUIClients drives real processes of this app with AG-UI's stock HttpAgent
// (aguiclient/scenarios.mjs, @ag-ui/client pinned in aguiclient/package.json): a
// three-turn conversation with a server tool in turn one, a client tool answered and
// continued, state set by a tool and seen next run, transfer interrupts answered by
// resume (approve, approve with an edited amount, deny) through the other of two
// instances on Postgres, and an expired, a foreign tenant's and an already-decided
// interrupt. Every stream the client received is then checked by the AG-UI verifier.
func TestAGUIClients(t *testing.T) {
	dsn := testenv.PostgresDSN(t, "the AG-UI client test")
	if testing.Short() {
		t.Skip("-short: the AG-UI client test builds and starts processes")
	}
	if _, err := os.Stat(filepath.Join("aguiclient", "node_modules", "@ag-ui", "client")); err != nil {
		t.Skip("aguiclient/node_modules is missing: run npm ci --prefix examples/conformance/aguiclient (CI does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the AG-UI client test runs AG-UI's own TypeScript client")
	}
	dsn = testenv.Schema(t, dsn, "conformance_")
	bin := testenv.Build(t, ".")
	model := openaitest.NewServerFunc(scriptedAssistant)
	defer model.Close()
	env := []string{
		"ENGINE_JOURNAL=" + dsn,
		"ENGINE_MODEL_BASE_URL=" + model.URL(),
		"ENGINE_MODEL_API_KEY=test",
		"ENGINE_LEASE_TTL=2s",
		"ENGINE_JWT_KEY=agui-client-test-key-0123456789abcdef",
	}
	a := startInstance(t, bin, "a", env)
	b := startInstance(t, bin, "b", env)
	c := startInstance(t, bin, "c", append(env, "ENGINE_APPROVAL_WAIT=1s"))
	out := t.TempDir()
	cmd := exec.Command("node", filepath.Join("aguiclient", "scenarios.mjs"))
	cmd.Env = append(os.Environ(),
		"AGUI_A="+a.URL, "AGUI_B="+b.URL, "AGUI_C="+c.URL, "AGUI_OUT="+out,
		"AGUI_TOKEN="+signIn(t, a.URL, "alice@example.com"),
		"AGUI_FOREIGN="+signIn(t, a.URL, "carol@example.com"))
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("HttpAgent scenarios failed: %v\n%s", err, res)
	}
	t.Logf("%s", res)
	// The state a tool set reached the model in the next run, through the client.
	seen := false
	for _, r := range model.Requests() {
		if strings.Contains(r.Messages[0].Text(), `Shared state (JSON): {"city":"Oslo"}`) {
			seen = true
		}
	}
	if !seen {
		t.Error("no model request showed the state tools.remember set")
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.sse"))
	if len(files) < 15 {
		t.Fatalf("%d streams saved, want every run's (15 or more)", len(files))
	}
	script := os.Getenv("AGUI_VERIFY")
	if script == "" {
		t.Log("AGUI_VERIFY is not set: the streams are not checked with the AG-UI verifier here (CI checks them)")
		return
	}
	if res, err := exec.Command("node", append([]string{script, "--no-done"}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("AG-UI verifier rejected a stream: %v\n%s", err, res)
	}
}

// scriptedAssistant is the fake model of TestAGUIClients: it answers from the
// conversation the way the scenarios expect, whatever instance or run asks.
func scriptedAssistant(req openaitest.Request) openaitest.Turn {
	msgs := req.Messages
	last := msgs[len(msgs)-1]
	call := func(id, name, args string) openaitest.Turn {
		return openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	if last.Role == "tool" {
		return openaitest.Turn{Text: "Done: " + last.Text()}
	}
	text := last.Text()
	switch {
	case strings.Contains(text, "weather"):
		return call("call_weather", "tools_weather", `{"city":"Paris"}`)
	case strings.Contains(text, "ask me"):
		return call("call_ask", "askUser", `{"question":"Which city?"}`)
	case strings.Contains(text, "remember"):
		return call("call_remember", "tools_remember", `{"key":"city","value":"Oslo"}`)
	case strings.Contains(text, "transfer"):
		return call("call_transfer", "tools_transfer", `{"to":"bob","amount":500}`)
	case strings.Contains(text, "where do I live"):
		sys := msgs[0].Text()
		if i := strings.Index(sys, "Shared state (JSON): "); i >= 0 {
			var state json.RawMessage
			if json.Unmarshal([]byte(sys[i+len("Shared state (JSON): "):]), &state) == nil {
				return openaitest.Turn{Text: "State: " + string(state)}
			}
		}
		return openaitest.Turn{Text: "State: none"}
	}
	return openaitest.Turn{Text: "Reply to: " + text}
}
