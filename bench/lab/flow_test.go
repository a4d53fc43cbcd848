package lab_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/bbc28f59/engine/bench/internal/flowbench"
)

// sumProcedure is the connect-go procedure that does math.sum's work.
const sumProcedure = "/bench.v1.MathService/Sum"

// envelope is connect's reply message: the engine's envelope as a Go type, so all
// three sides write the same bytes.
type envelope struct {
	Data  flowbench.SumOut `json:"data"`
	Error *struct{}        `json:"error"`
}

// jsonCodec is connect-go's codec for "application/json" with encoding/json in place of
// protojson, which needs generated protobuf types: connect decodes the same JSON into
// the same Go struct as the engine and raw net/http, so only the framework differs.
type jsonCodec struct{}

func (jsonCodec) Name() string { return "json" }

func (jsonCodec) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	return append(b, '\n'), err // the envelope's newline, as the others write it
}

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// mountConnect serves the sum procedure with connect-go on mux.
func mountConnect(mux *http.ServeMux) {
	mux.Handle(sumProcedure, connect.NewUnaryHandler(sumProcedure,
		func(_ context.Context, req *connect.Request[flowbench.SumIn]) (*connect.Response[envelope], error) {
			return connect.NewResponse(&envelope{Data: flowbench.Sum(*req.Msg)}), nil
		},
		connect.WithCodec(jsonCodec{}),
		// No gzip: Go's transport asks for it on every request, and connect would then
		// compress a 50-byte reply that the other sides send as it is.
		connect.WithCompression("gzip", nil, nil),
	))
}

// BenchmarkFlowPeers is BenchmarkFlowCall's RPC call with connect-go in the same run:
// the same JSON input decoded into the same struct, the same function, the same reply
// bytes, over the same HTTP/1.1 client and server. The connect side is called by the
// same plain client as the others (a unary call of connect's protocol is a plain POST),
// so only the server differs. connect-x-raw and engine-x-raw are throughputs as a
// fraction of raw net/http's; engine-x-connect is the engine's as a fraction of
// connect-go's.
func BenchmarkFlowPeers(b *testing.B) {
	s := flowbench.NewServer(b, mountConnect)
	body := []byte(flowbench.SumBody)
	tallies := flowbench.Measure(b, flowbench.Options{},
		flowbench.Subject{Name: "raw", Call: s.Call(http.MethodPost, "/raw/sum", body, flowbench.SumWant)},
		flowbench.Subject{Name: "engine", Call: s.Call(http.MethodPost, "/_engine/math/sum", body, flowbench.SumWant)},
		flowbench.Subject{Name: "connect", Call: s.Call(http.MethodPost, sumProcedure, body, flowbench.SumWant)},
	)
	b.ReportMetric(tallies["engine"].PerSecond()/tallies["connect"].PerSecond(), "engine-x-connect")
}
