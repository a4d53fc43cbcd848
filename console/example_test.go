package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/console"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// The console is one option of the app: it needs the app's authentication (operators
// sign in with it) and, for runs and approvals, a journal. Its page is served to anyone;
// its data only to operators.
func ExampleServe() {
	j, _ := journal.New(memory.New(), journal.Options{})
	app, err := engine.New(
		engine.WithAuthenticator(headerAuth{}), // a real app: gate.Auth's Option
		durable.With(j),
		console.Serve(console.Options{}), // at /_engine/console/
	)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()

	page, _ := http.Get(srv.URL + "/_engine/console/")
	page.Body.Close()
	data, _ := http.Get(srv.URL + "/_engine/console/api/runs")
	data.Body.Close()
	fmt.Println("page:", page.StatusCode, "runs without a token:", data.StatusCode)
	// Output: page: 200 runs without a token: 401
}
