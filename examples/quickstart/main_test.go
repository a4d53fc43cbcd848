package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/examples/quickstart/contract"
	"github.com/bbc28f59/engine/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestQuickstart runs what the quickstart prints: the flows through the typed client,
// the offline agent calling a tool, and a transfer that parks, is approved and resumes.
func TestQuickstart(t *testing.T) {
	srv := serve(t, "")
	ctx := context.Background()

	c, err := clientx.New(srv.URL, clientx.WithRoutes(contract.Greeter.Routes()))
	if err != nil {
		t.Fatal(err)
	}
	if res := clientx.Call(ctx, c, contract.Hello, contract.HelloIn{Name: "gopher"}); res.Data.Message != "Hello, gopher!" {
		t.Fatalf("hello: %+v", res)
	}
	div := clientx.Call(ctx, c, contract.Divide, contract.DivideIn{A: 1, B: 0})
	if data, ok := contract.DivideByZero.DataOf(div.Error); !ok || data.Dividend != 1 || div.Status != http.StatusBadRequest {
		t.Fatalf("divide by zero: %+v", div)
	}

	if res := clientx.Call(ctx, c, ExtractWeather, WeatherIn{Text: "It is 21 degrees in Lisbon"}); res.Error != nil || res.Data != (Weather{City: "Lisbon", TempC: 21}) {
		t.Fatalf("extract.weather: %+v", res)
	}
	if res := clientx.Call(ctx, c, ExtractWeather, WeatherIn{Text: "a nice day"}); res.Error == nil || res.Error.Code != "InvalidModelOutput" {
		t.Fatalf("extract.weather of a text without a city: %+v", res)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "quickstart-test", Version: "v1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: srv.URL + mcp.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	hello, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greeter.hello", Arguments: map[string]any{"name": "mcp"}})
	if err != nil || hello.IsError || !strings.Contains(hello.Content[0].(*sdk.TextContent).Text, "Hello, mcp!") {
		t.Fatalf("greeter.hello over MCP: %v %+v", err, hello)
	}

	weather := chat(t, srv.URL, "weather in Paris")
	if res := lastFinished(t, weather); res.Result == nil || res.Result.StopReason != agui.StopCompleted ||
		!strings.Contains(string(res.Result.Output), `"tempC":17`) {
		t.Fatalf("the weather run: %+v", res.Result)
	}

	parked := chat(t, srv.URL, "send 500 to bob")
	fin := lastFinished(t, parked)
	if fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 || fin.Outcome.Interrupts[0].Payload.Tool != "tools.transfer" {
		t.Fatalf("the transfer must park for approval: %+v", fin)
	}
	if err := agent.Approve(ctx, c, fin.Outcome.Interrupts[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	var final agui.RunFinished
	for f, err := range agent.Follow(ctx, c, fin.RunID, agent.FollowOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := f.Event.(agui.RunFinished); ok && ev.Outcome == nil {
			final = ev
		}
	}
	if final.Result == nil || final.Result.StopReason != agui.StopCompleted || !strings.Contains(string(final.Result.Output), `"ok":true`) {
		t.Fatalf("the approved run must complete with the transfer's result: %+v", final.Result)
	}
}

func chat(t *testing.T, base, message string) []agui.Event {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": message})
	res, err := http.Post(base+"/chat", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []agui.Event
	for ev, err := range agent.ReadAgentEvents(res.Body) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return out
}

func lastFinished(t *testing.T, evs []agui.Event) agui.RunFinished {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if f, ok := evs[i].(agui.RunFinished); ok {
			return f
		}
	}
	t.Fatalf("no RUN_FINISHED in %d events", len(evs))
	return agui.RunFinished{}
}

// serve starts the quickstart's app on a fresh SQLite file (serving the console when
// opsPassword is set) behind a test server, all closed at cleanup.
func serve(t *testing.T, opsPassword string) *httptest.Server {
	t.Helper()
	app, closeDB, err := newApp(filepath.Join(t.TempDir(), "quickstart.db"), opsPassword, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeDB)
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv
}
