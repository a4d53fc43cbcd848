package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/clientx/auth"
	"github.com/bbc28f59/engine/internal/testenv"
)

// An approver whose access token expired while the run waited (ENGINE_ACCESS_TTL=1s
// here, 15 minutes by default: people approve at human pace) is told 401, not that the
// approval is gone: the Go client's session refreshes once and the approval lands. The
// same expired token is 401 with an RFC 6750 challenge on every kind of route, before any
// tenant check; without a token each route answers as it always did.
func TestAnExpiredTokenIsRefreshedAndTheApprovalLands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the expiry test builds and starts the reference app")
	}
	model := openaitest.NewServer(
		openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_transfer", Name: "tools_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		openaitest.Turn{Text: "Transferred 500 to bob."},
	)
	defer model.Close()
	app := testenv.StartProcess(t, testenv.Build(t, "."), testenv.ProcessOptions{Env: []string{
		"ENGINE_JOURNAL=sqlite:" + filepath.Join(t.TempDir(), "app.db"),
		"ENGINE_MODEL_BASE_URL=" + model.URL(),
		"ENGINE_MODEL_API_KEY=test",
		"ENGINE_JWT_KEY=expiry-test-key-0123456789abcdef0123456789",
		"ENGINE_ACCESS_TTL=1s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	session := auth.NewMemorySession()
	var refreshes atomic.Int32
	c, err := clientx.New(app.URL, clientx.WithClientAuth(func(c *clientx.Client) clientx.Auth {
		return clientx.Auth{GetToken: session.GetToken, Refresh: func(ctx context.Context) error {
			refreshes.Add(1)
			return session.Refresh(ctx, c)
		}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	signIn := c.Call(ctx, "auth.signInEmail", map[string]string{"email": "alice@example.com", "password": "correct horse battery staple"})
	if signIn.Error != nil {
		t.Fatal(signIn.Error)
	}
	var tokens auth.TokenSet
	if err := json.Unmarshal(signIn.Data, &tokens); err != nil {
		t.Fatal(err)
	}
	session.Set(tokens)

	var fin agui.RunFinished
	for f, err := range agent.Stream(ctx, c, Ask, ai.Input{Message: "transfer 500 to bob"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := f.Event.(agui.RunFinished); ok {
			fin = ev
		}
	}
	if fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 {
		t.Fatalf("the transfer did not park: %+v", fin)
	}
	id := fin.Outcome.Interrupts[0].ID
	journalRun, _, err := agui.ParseInterruptID(id)
	if err != nil {
		t.Fatal(err)
	}

	// The approver comes back after the access token expired.
	time.Sleep(time.Until(tokens.ExpiresAt) + 200*time.Millisecond)
	expired := tokens.AccessToken
	for _, r := range []struct{ name, method, path, body string }{
		{"approve", "POST", "/agent/approvals/approve", `{"id":"` + id + `"}`},
		{"deny", "POST", "/agent/approvals/deny", `{"id":"` + id + `"}`},
		{"follow", "GET", "/agent/runs/" + fin.RunID + "/events", ""},
		{"run state", "GET", "/_engine/runs/" + journalRun, ""},
		{"public flow", "POST", "/_engine/math/add", `{"a":1,"b":2}`},
		{"mounted route", "GET", "/chat/capabilities", ""},
	} {
		status, header, body := exchange(t, r.method, app.URL+r.path, "Bearer "+expired, r.body)
		if status != http.StatusUnauthorized || body != `{"data":null,"error":{"code":"Unauthorized","data":{}}}` ||
			header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
			t.Errorf("%s with an expired token: HTTP %d %q %s, want 401 Unauthorized with the invalid_token challenge", r.name, status, header.Get("WWW-Authenticate"), body)
		}
	}
	// Without a token: the spec's answers (the approval is not the anonymous caller's).
	if status, _, body := exchange(t, "POST", app.URL+"/agent/approvals/approve", "", `{"id":"`+id+`"}`); status != http.StatusNotFound {
		t.Errorf("approve without a token: HTTP %d %s, want 404", status, body)
	}
	if status, _, body := exchange(t, "POST", app.URL+"/_engine/math/add", "", `{"a":1,"b":2}`); status != http.StatusOK {
		t.Errorf("public flow without a token: HTTP %d %s, want 200", status, body)
	}

	if err := agent.Approve(ctx, c, id, nil); err != nil {
		t.Fatalf("approve with an expired token: %v", err)
	}
	if n := refreshes.Load(); n != 1 {
		t.Fatalf("the session refreshed %d times, want once", n)
	}
	var text strings.Builder
	for f, err := range agent.Follow(ctx, c, fin.RunID, agent.FollowOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := f.Event.(agui.TextMessageContent); ok {
			text.WriteString(ev.Delta)
		}
	}
	if !strings.Contains(text.String(), "Transferred 500 to bob.") {
		t.Fatalf("the approved run did not finish: %q", text.String())
	}
}

// exchange sends one request with an optional Authorization header and returns the
// status, the headers and the body.
func exchange(t *testing.T, method, url, authorization, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, strings.TrimSpace(string(b))
}
