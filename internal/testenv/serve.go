package testenv

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/bbc28f59/engine"
)

// Serve builds an app of opts, starts it (closed when the test ends) and serves it over
// HTTP on a loopback port (closed when the test ends).
func Serve(tb testing.TB, opts ...engine.Option) *httptest.Server {
	tb.Helper()
	app, err := engine.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = app.Close(context.Background()) })
	srv := httptest.NewServer(app.Handler())
	tb.Cleanup(srv.Close)
	return srv
}
