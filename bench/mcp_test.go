package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/bench/internal/flowbench"
	"github.com/bbc28f59/engine/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPToolCall measures a tools/call of a public flow through the MCP endpoint
// (mcp.Serve: the official Go SDK's stateless streamable HTTP transport) against the same
// flow called over RPC, on one loopback server and one HTTP transport. The caller is the
// official Go SDK's client (sdk-client), or a plain HTTP client posting the JSON-RPC
// request as that client does at revision 2026-07-28 (raw-client: the server's share
// alone). Subject and RPC alternate in batches of 64 serial calls, so both meet the same
// machine load; x-rpc is MCP throughput as a fraction of RPC throughput (RPC time per
// call ÷ MCP time per call; aim ≥ 0.8), x-rpc-cpu the same in process CPU time (client
// and server both, from getrusage around each batch). Every reply is checked.
func BenchmarkMCPToolCall(b *testing.B) {
	app, err := engine.New(
		engine.Bind(sumFlow, func(_ *engine.Fx, in sumIn) (sumOut, error) { return flowbench.Sum(in), nil }),
		mcp.Serve(mcp.Options{Tools: []mcp.Selector{mcp.Flows(sumFlow)}}),
	)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(app)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 16, MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "v1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: srv.URL + mcp.Path, HTTPClient: client}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"a": 1.5, "b": 2.25, "label": "total"}
	sdkCall := func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "math.sum", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("tools/call: %v %+v", err, res)
		}
		var out sumOut
		raw, _ := json.Marshal(res.StructuredContent)
		if json.Unmarshal(raw, &out) != nil || out.Sum != 3.75 || out.Label != "total" {
			b.Fatalf("tools/call answered %s", raw)
		}
	}
	rawBody := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"math.sum",` +
		`"arguments":{"a":1.5,"b":2.25,"label":"total"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	rawCall := func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcp.Path, bytes.NewReader(rawBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "math.sum")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"structuredContent":{"sum":3.75,"label":"total"}`)) {
			b.Fatalf("raw tools/call: %d %s %v", res.StatusCode, body, err)
		}
	}
	rpc := (&flowbench.Server{URL: srv.URL, App: app, Client: client}).Call(http.MethodPost, "/_engine/math/sum",
		[]byte(`{"a":1.5,"b":2.25,"label":"total"}`), `"sum":3.75`)
	rpcCall := func() {
		if err := rpc(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sdk-client", func(b *testing.B) { alternate(b, sdkCall, rpcCall) })
	b.Run("raw-client", func(b *testing.B) { alternate(b, rawCall, rpcCall) })
}

// alternate runs subject and baseline in alternating batches of 64 serial calls until
// b.N calls of each, and reports the time per call of each and x-rpc, the subject's
// throughput as a fraction of the baseline's.
func alternate(b *testing.B, subject, baseline func()) {
	for range 100 { // warm connections and caches
		subject()
		baseline()
	}
	const batch = 64
	var subjectNs, baselineNs, subjectCPU, baselineCPU time.Duration
	calls := 0
	b.ResetTimer()
	for i := 0; calls < b.N; i++ {
		first, second := subject, baseline
		if i%2 == 1 {
			first, second = baseline, subject
		}
		t0, c0 := time.Now(), cpuTime()
		for range batch {
			first()
		}
		t1, c1 := time.Now(), cpuTime()
		for range batch {
			second()
		}
		d1, d2 := t1.Sub(t0), time.Since(t1)
		u1, u2 := c1-c0, cpuTime()-c1
		if i%2 == 1 {
			d1, d2 = d2, d1
			u1, u2 = u2, u1
		}
		subjectNs, baselineNs = subjectNs+d1, baselineNs+d2
		subjectCPU, baselineCPU = subjectCPU+u1, baselineCPU+u2
		calls += batch
	}
	n := float64(calls)
	b.ReportMetric(float64(subjectNs.Nanoseconds())/n, "mcp-ns/call")
	b.ReportMetric(float64(baselineNs.Nanoseconds())/n, "rpc-ns/call")
	b.ReportMetric(float64(baselineNs)/float64(subjectNs), "x-rpc")
	b.ReportMetric(float64(subjectCPU.Nanoseconds())/n, "mcp-cpu-ns/call")
	b.ReportMetric(float64(baselineCPU)/float64(subjectCPU), "x-rpc-cpu")
}
