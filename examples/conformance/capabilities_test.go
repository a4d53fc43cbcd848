package main

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/internal/testenv"
)

// TestAssistantCapabilities reads the assistant's AG-UI capabilities from a real process:
// what it declares must be what the engine does (streams that resume, interrupts answered
// with resume and edited arguments, client tools, state events), and its tools are the
// ones the model is offered, under their wire names, with input schemas. The document
// lists every tool with its schema, so it is served behind chat.ask's gates: an
// anonymous caller is asked to sign in and sees none of it.
func TestAssistantCapabilities(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the capabilities test builds and starts the app")
	}
	in := startInstance(t, testenv.Build(t, "."), "caps", []string{"ENGINE_JOURNAL=memory"})
	anon, err := http.Get(in.URL + "/chat/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(anon.Body)
	anon.Body.Close()
	if anon.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "tools_") {
		t.Fatalf("anonymous GET /chat/capabilities: %d %s, want 401 and no tool", anon.StatusCode, body)
	}
	req, err := http.NewRequest(http.MethodGet, in.URL+"/chat/capabilities", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+signIn(t, in.URL, "alice@example.com"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var c ai.Capabilities
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /chat/capabilities: %d %v", res.StatusCode, err)
	}
	h := c.HumanInTheLoop
	if c.Identity.Name != "assistant" || !c.Transport.Streaming || !c.Transport.Resumable ||
		!h.Supported || !h.Approvals || !h.Interrupts || !h.ApproveWithEdits ||
		!c.Tools.Supported || !c.Tools.ClientProvided || !c.State.Snapshots || !c.State.Deltas {
		t.Fatalf("capabilities %+v", c)
	}
	var names []string
	for _, tool := range c.Tools.Items {
		var schema map[string]any
		if err := json.Unmarshal(tool.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("tool %s: parameters %s", tool.Name, tool.Parameters)
		}
		names = append(names, tool.Name)
	}
	want := []string{"tools_weather", "tools_transfer", "tools_explode", "tools_research", "tools_remember"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}
