package bench_test

import (
	"net/http"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/bench/internal/flowbench"
)

// The flows measured and their raw baselines live in package flowbench, which the lab
// module's benchmark (the same calls against connect-go) shares.
type (
	sumIn     = flowbench.SumIn
	sumOut    = flowbench.SumOut
	squareIn  = flowbench.SquareIn
	squareOut = flowbench.SquareOut
)

var (
	sumFlow    = flowbench.SumFlow
	squareFlow = flowbench.SquareFlow
)

// flowServer is the loopback server of the engine app and its raw baselines.
type flowServer struct {
	url    string
	app    *engine.App
	client *http.Client
}

func newFlowServer(tb testing.TB) *flowServer {
	tb.Helper()
	s := flowbench.NewServer(tb, nil)
	return &flowServer{url: s.URL, app: s.App, client: s.Client}
}

// BenchmarkFlowCall (server side) calls each shape of flow over loopback TCP from 32
// concurrent callers, in batches that alternate with the raw net/http handler doing the
// same JSON work (flowbench.Measure: a batch on each side per round, the order rotated
// every round). engine-x-raw is the engine's throughput as a fraction of raw's (target ≥
// 0.95); engine-cpu-x-raw the same in process CPU per call; *-allocs/call are
// whole-process allocations of one call made alone, client included (the client is the
// same on both sides). The lab module's BenchmarkFlowPeers adds connect-go to the same
// run.
func BenchmarkFlowCall(b *testing.B) {
	s := flowbench.NewServer(b, nil)
	for _, c := range flowbench.Shapes {
		b.Run(c.Name, func(b *testing.B) {
			flowbench.Measure(b, flowbench.Options{},
				flowbench.Subject{Name: "raw", Call: s.Call(c.Method, c.RawPath, c.Body, c.Want)},
				flowbench.Subject{Name: "engine", Call: s.Call(c.Method, c.EnginePath, c.Body, c.Want)},
			)
		})
	}
}
