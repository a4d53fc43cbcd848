package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server side in process: what the reference app's tests do not reach (durable
// flows that park, outputs that are not objects, flows that cannot be tools).

var (
	ordersUnit = engine.NewUnit("orders")
	// placeFlow parks until a decision, then answers its order.
	placeFlow = engine.Define[OrderIn, OrderIn](ordersUnit, "place", engine.Public(), engine.Durable(),
		engine.Describe("Place an order; an operator confirms it."))
	tagsFlow   = engine.Define[OrderIn, []string](ordersUnit, "tags", engine.Public())
	echoFlow   = engine.Define[string, string](ordersUnit, "echo", engine.Public())
	streamFlow = engine.DefineStream[OrderIn, string, string](ordersUnit, "stream", engine.Public())
)

// OrderIn is an order.
type OrderIn struct {
	Item string `json:"item"`
}

func newOrders(t *testing.T, opts mcp.Options) (*httptest.Server, *journal.Journal, error) {
	t.Helper()
	j, err := journal.New(memory.New(), journal.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	app, err := engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		durable.With(j),
		engine.Bind(placeFlow, func(fx *engine.Fx, in OrderIn) (OrderIn, error) {
			if _, err := durable.Park(fx, "confirm", time.Time{}, in); err != nil {
				return OrderIn{}, err
			}
			return in, nil
		}),
		engine.Bind(tagsFlow, func(_ *engine.Fx, in OrderIn) ([]string, error) { return []string{in.Item, "new"}, nil }),
		engine.Bind(echoFlow, func(_ *engine.Fx, in string) (string, error) { return in, nil }),
		engine.BindStream(streamFlow, func(*engine.Fx, OrderIn, *engine.Stream[string]) (string, error) { return "", nil }),
		mcp.Serve(opts),
	)
	if err != nil {
		return nil, nil, err
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close(context.Background())
	})
	return srv, j, nil
}

// TestServeDurableAndListTools checks a durable flow that parks (a tool result naming the
// run, which a decision then completes), a list output (under "result"), and the flows
// left out: a streaming flow and one whose input is not an object.
func TestServeDurableAndListTools(t *testing.T) {
	t.Parallel()
	srv, j, err := newOrders(t, mcp.Options{Tools: []mcp.Selector{mcp.Units(ordersUnit)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: srv.URL + mcp.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "orders.place" && tool.OutputSchema != nil {
			t.Errorf("the durable tool has an output schema %v: a parked answer would not match it", tool.OutputSchema)
		}
		if tool.Name == "orders.tags" {
			if b, _ := json.Marshal(tool.OutputSchema); !strings.Contains(string(b), `"required":["result"]`) || !strings.Contains(string(b), `"array"`) {
				t.Errorf("orders.tags output schema %s, want the list under result", b)
			}
		}
	}
	if strings.Join(names, ",") != "orders.place,orders.tags" {
		t.Errorf("tools %v, want orders.place and orders.tags (not the stream, nor echo's string input)", names)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "orders.tags", Arguments: map[string]any{"item": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"result":["tea","new"]}` {
		t.Errorf("orders.tags structured content %s", b)
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "orders.place", Arguments: map[string]any{"item": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	runID, _ := res.Meta["engine/runId"].(string)
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError || runID == "" || sc["runId"] != runID || sc["parked"] != true || !strings.Contains(text(res), runID) {
		t.Fatalf("a parked call: isError %v, meta %v, structured %v, text %q", res.IsError, res.Meta, res.StructuredContent, text(res))
	}
	if err := j.Decide(ctx, runID, "confirm", journal.Decision{Kind: journal.DecisionApprove}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := j.GetRun(ctx, runID)
		if err == nil && rec.Status == journal.StatusCompleted {
			if string(rec.Output) != `{"item":"tea"}` {
				t.Errorf("the run's output %s", rec.Output)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run named by the tool result never completed (%v, %v)", rec.Status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeRefusesFlowsThatCannotBeTools checks that naming a flow that cannot be a tool
// is an error of engine.New, not a tool that fails later.
func TestServeRefusesFlowsThatCannotBeTools(t *testing.T) {
	t.Parallel()
	for _, f := range []mcp.Declared{echoFlow, streamFlow} {
		_, _, err := newOrders(t, mcp.Options{Tools: []mcp.Selector{mcp.Flows(f)}})
		if err == nil || !strings.Contains(err.Error(), "cannot be a tool") {
			t.Errorf("Flows(%s): %v, want it refused", f.Def().ID(), err)
		}
	}
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
