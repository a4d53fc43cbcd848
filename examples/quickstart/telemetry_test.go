package main

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/examples/quickstart/contract"
)

// ENGINE_TRACE=stdout prints a flow call's server span; unset, nothing is printed.
func TestTracingToStdout(t *testing.T) {
	for _, on := range []bool{true, false} {
		var out bytes.Buffer
		if on {
			t.Setenv("ENGINE_TRACE", "stdout")
		} else {
			t.Setenv("ENGINE_TRACE", "")
		}
		app, err := engine.New(tracingTo(&out), engine.Bind(contract.Hello, func(fx *engine.Fx, in contract.HelloIn) (contract.HelloOut, error) {
			return contract.HelloOut{Message: "hi"}, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(app.Handler())
		c, err := clientx.New(srv.URL, clientx.WithRoutes(contract.Greeter.Routes()))
		if err != nil {
			t.Fatal(err)
		}
		if res := clientx.Call(t.Context(), c, contract.Hello, contract.HelloIn{Name: "gopher"}); res.Error != nil {
			t.Fatal(res.Error)
		}
		srv.Close()
		printed := strings.Contains(out.String(), `"Value":"greeter.hello"`)
		if printed != on {
			t.Fatalf("ENGINE_TRACE on=%v: printed %q", on, out.String())
		}
	}
}
