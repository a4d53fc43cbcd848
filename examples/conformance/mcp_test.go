package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpEnv starts the app, as APP.md's MCP section has it, on a private memory database.
var mcpEnv = []string{"ENGINE_MCP=1", "ENGINE_JOURNAL=memory", "ENGINE_JWT_KEY=mcp-test-key-0123456789abcdef0123"}

// bearer adds a token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// connectMCP connects the official Go SDK's client to endpoint as the holder of token.
func connectMCP(t *testing.T, endpoint, token string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "conformance-test", Version: "v1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPWithGoClient checks APP.md's MCP section with the official Go SDK's client: the
// tools and their schemas, a public call, a declared error as an isError result, a gated
// tool with and without a token, tenant-scoped resources, and the refusal of a foreign
// Host or Origin on a loopback address.
func TestMCPWithGoClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts the reference app")
	}
	t.Parallel()
	app := testenv.StartProcess(t, testenv.Build(t, "."), testenv.ProcessOptions{Name: "mcp", Env: mcpEnv})
	endpoint := app.URL + "/_engine/mcp"
	alice, carol := signIn(t, app.URL, "alice@example.com"), signIn(t, app.URL, "carol@example.com")
	ctx := context.Background()
	anon := connectMCP(t, endpoint, "")

	t.Run("tools", func(t *testing.T) {
		res, err := anon.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Description == "" {
				t.Errorf("tool %s has no description", tool.Name)
			}
			schema, _ := tool.InputSchema.(map[string]any)
			if schema["type"] != "object" {
				t.Errorf("tool %s: inputSchema %v is not an object schema", tool.Name, tool.InputSchema)
			}
		}
		want := []string{"math.add", "math.divide", "math.echo", "math.search", "math.square", "notes.get", "notes.list"}
		if !slices.Equal(names, want) {
			t.Errorf("tools %v, want %v (chat.ask and tools.transfer never)", names, want)
		}
		add := res.Tools[0]
		in, _ := json.Marshal(add.InputSchema)
		out, _ := json.Marshal(add.OutputSchema)
		if !strings.Contains(string(in), `"a":{"type":"number"}`) || !strings.Contains(string(out), `"sum":{"type":"number"}`) {
			t.Errorf("math.add schemas: input %s output %s", in, out)
		}
		if !strings.Contains(res.Tools[1].Description, "DivideByZero") {
			t.Errorf("math.divide's description %q does not name its declared error", res.Tools[1].Description)
		}
	})

	t.Run("call", func(t *testing.T) {
		res, err := anon.CallTool(ctx, &sdk.CallToolParams{Name: "math.add", Arguments: map[string]any{"a": 1, "b": 2}})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || text(res) != `{"sum":3}` {
			t.Errorf("math.add: isError %v, text %q", res.IsError, text(res))
		}
		if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"sum":3}` {
			t.Errorf("math.add structuredContent %s", sc)
		}
		res, err = anon.CallTool(ctx, &sdk.CallToolParams{Name: "math.divide", Arguments: map[string]any{"a": 1, "b": 0}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || text(res) != `{"code":"DivideByZero","data":{"dividend":1}}` || res.StructuredContent != nil {
			t.Errorf("math.divide by 0: isError %v, text %q, structuredContent %v", res.IsError, text(res), res.StructuredContent)
		}
		res, err = anon.CallTool(ctx, &sdk.CallToolParams{Name: "math.add", Arguments: map[string]any{"a": "one"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(text(res), `"code":"ValidationError"`) {
			t.Errorf("math.add with a bad argument: isError %v, text %q", res.IsError, text(res))
		}
	})

	t.Run("gated", func(t *testing.T) {
		res, err := anon.CallTool(ctx, &sdk.CallToolParams{Name: "notes.list", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(text(res), `"code":"Unauthorized"`) {
			t.Errorf("notes.list without a token: isError %v, text %q", res.IsError, text(res))
		}
		res, err = connectMCP(t, endpoint, alice).CallTool(ctx, &sdk.CallToolParams{Name: "notes.list", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("notes.list as alice: %v %q", err, text(res))
		}
		if sc, _ := json.Marshal(res.StructuredContent); !strings.HasPrefix(string(sc), `{"result":[`) {
			t.Errorf("notes.list structuredContent %s, want the list under result", sc)
		}
		// A token that does not verify is refused by the app (401) before MCP sees it.
		c := sdk.NewClient(&sdk.Implementation{Name: "conformance-test", Version: "v1"}, nil)
		if _, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{token: "not-a-token", next: http.DefaultTransport}}}, nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("connecting with a bad token: %v, want Unauthorized", err)
		}
	})

	t.Run("resources", func(t *testing.T) {
		status, body := postJSON(t, app.URL+"/_engine/notes/create", alice, `{"title":"Groceries","body":"milk"}`)
		var note struct {
			Data struct{ ID string } `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &note); status != http.StatusOK || err != nil {
			t.Fatalf("notes.create: %d %s", status, body)
		}
		uri := "engine://notes/" + note.Data.ID
		asAlice, asCarol := connectMCP(t, endpoint, alice), connectMCP(t, endpoint, carol)
		list, err := asAlice.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list.Resources, func(r *sdk.Resource) bool { return r.URI == uri && r.Title == "Groceries" }) {
			t.Errorf("alice's resources %v lack %s", list.Resources, uri)
		}
		read, err := asAlice.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, `"title":"Groceries"`) {
			t.Fatalf("alice reads %s: %v %+v", uri, err, read)
		}
		list, err = asCarol.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(list.Resources, func(r *sdk.Resource) bool { return r.URI == uri }) {
			t.Errorf("carol lists alice's note %s", uri)
		}
		for _, u := range []string{uri, "engine://notes/no-such-note"} {
			_, err = asCarol.ReadResource(ctx, &sdk.ReadResourceParams{URI: u})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != -32002 {
				t.Errorf("carol reads %s: %v, want -32002 resource not found", u, err)
			}
		}
		list, err = anon.ListResources(ctx, nil)
		if err != nil || len(list.Resources) != 0 {
			t.Errorf("an anonymous caller lists %v (%v), want nothing", list, err)
		}
	})

	t.Run("dns-rebinding", func(t *testing.T) {
		for _, c := range []struct{ host, origin string }{{"evil.example.com", ""}, {"", "http://evil.example.com"}} {
			if status := rawInitialize(t, endpoint, c.host, c.origin); status != http.StatusForbidden {
				t.Errorf("Host %q Origin %q: %d, want 403", c.host, c.origin, status)
			}
		}
		u, _ := url.Parse(app.URL)
		if status := rawInitialize(t, endpoint, "localhost:"+u.Port(), "http://localhost:"+u.Port()); status != http.StatusOK {
			t.Errorf("Host localhost: %d, want 200", status)
		}
	})
}

// rawInitialize posts an initialize request with the given Host and Origin.
func rawInitialize(t *testing.T, endpoint, host, origin string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// text is the text of a tool result's first content.
func text(res *sdk.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// TestMCPBehindRoundRobin checks that the endpoint is stateless: two instances behind a
// round-robin proxy answer one client's requests alternately, and the client notices
// nothing. A host named in ENGINE_MCP_ALLOWED_HOSTS passes the rebinding check.
func TestMCPBehindRoundRobin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and starts the reference app")
	}
	t.Parallel()
	bin := testenv.Build(t, ".")
	env := append(slices.Clone(mcpEnv), "ENGINE_MCP_ALLOWED_HOSTS=mcp.example.test")
	backends := []*testenv.Process{
		testenv.StartProcess(t, bin, testenv.ProcessOptions{Name: "rr-a", Env: env}),
		testenv.StartProcess(t, bin, testenv.ProcessOptions{Name: "rr-b", Env: env}),
	}
	var mu sync.Mutex
	var served []int
	next := 0
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := next % len(backends)
		next++
		served = append(served, i)
		mu.Unlock()
		u, _ := url.Parse(backends[i].URL)
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	defer proxy.Close()

	cs := connectMCP(t, proxy.URL+"/_engine/mcp", "")
	ctx := context.Background()
	for i := range 6 {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "math.add", Arguments: map[string]any{"a": i, "b": 1}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %q", i, err, text(res))
		}
		if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"sum":`+string(rune('1'+i))+`}` {
			t.Errorf("call %d: %s", i, sc)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	counts := [2]int{}
	for _, i := range served {
		counts[i]++
	}
	if counts[0] < 3 || counts[1] < 3 {
		t.Errorf("requests per instance %v (%v), want both to answer alternately", counts, served)
	}
	if status := rawInitialize(t, backends[0].URL+"/_engine/mcp", "mcp.example.test", ""); status != http.StatusOK {
		t.Errorf("an allowed host: %d, want 200", status)
	}
}
