package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/internal/tsgen"
)

// serveApp serves flows that show how the HTTP layer treats bodies, statuses, panics and
// cancelled calls; the log is captured.
func serveApp(t *testing.T, opts ...engine.Option) (*httptest.Server, *syncBuffer) {
	t.Helper()
	u := engine.NewUnit("sv")
	odd := engine.NewCode[map[string]string]("Odd", http.StatusConflict)
	echo := engine.Define[appIn, appIn](u, "echo", engine.POST("/sv/echo"), engine.Public())
	get := engine.Define[appIn, appIn](u, "get", engine.GET("/sv/get"), engine.Public())
	declared := engine.Define[appIn, appIn](u, "declared", engine.Public(), engine.Errors(odd))
	cancelled := engine.Define[appIn, appIn](u, "cancelled", engine.Public())
	boom := engine.Define[appIn, appIn](u, "boom", engine.Public())
	logs := &syncBuffer{}
	base := []engine.Option{engine.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
		engine.Bind(echo, func(_ *engine.Fx, in appIn) (appIn, error) { return in, nil }),
		engine.Bind(get, func(_ *engine.Fx, in appIn) (appIn, error) { return in, nil }),
		engine.Bind(declared, func(*engine.Fx, appIn) (appIn, error) {
			// Built without the code's status: the declaration supplies it.
			return appIn{}, engine.NewError("Odd", map[string]string{"message": "odd"})
		}),
		engine.Bind(cancelled, func(*engine.Fx, appIn) (appIn, error) {
			// The flow's own work was cancelled; the caller is still there.
			return appIn{}, context.Canceled
		}),
		engine.Bind(boom, func(*engine.Fx, appIn) (appIn, error) { panic("boom in a flow") }),
		engine.Mount("GET", "/sv/mounted", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom in a route") })),
	}
	app, err := engine.New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv, logs
}

// exchange sends one request and returns the status, the Allow header and the body.
func exchange(t *testing.T, srv *httptest.Server, method, target, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Allow"), readAll(t, res)
}

// TestTheAppServesItsTypeScriptFiles checks /_engine/client.d.ts and /_engine/client.js:
// what the generator writes from the app's descriptor, as `engine client add` would,
// with their content types, and read with GET or HEAD only.
func TestTheAppServesItsTypeScriptFiles(t *testing.T) {
	t.Parallel()
	srv, _ := serveApp(t)
	_, _, desc := exchange(t, srv, "GET", "/_engine/client.json", "")
	d, err := tsgen.Parse([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	want := tsgen.Generate(d, "this app's /_engine/client.json")
	for _, f := range []struct{ path, contentType, body, has string }{
		{"/_engine/client.d.ts", "application/typescript; charset=utf-8", strings.TrimSpace(string(want.DTS)), "export type SvEchoInput = {"},
		{"/_engine/client.js", "text/javascript; charset=utf-8", strings.TrimSpace(string(want.JS)), `echo: { method: "POST", path: "/sv/echo" }`},
	} {
		for range 2 { // the second answer comes from the cache
			res, err := srv.Client().Get(srv.URL + f.path)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, res)
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != f.contentType || body != f.body || !strings.Contains(body, f.has) {
				t.Fatalf("GET %s: HTTP %d %q\n%s", f.path, res.StatusCode, res.Header.Get("Content-Type"), body)
			}
		}
		if code, _, body := exchange(t, srv, "HEAD", f.path, ""); code != http.StatusOK || body != "" {
			t.Fatalf("HEAD %s: HTTP %d %q", f.path, code, body)
		}
		code, allow, body := exchange(t, srv, "POST", f.path, "{}")
		if code != http.StatusMethodNotAllowed || allow != "GET, HEAD" || !strings.Contains(body, `"code":"MethodNotAllowed"`) {
			t.Fatalf("POST %s: HTTP %d Allow %q %s", f.path, code, allow, body)
		}
	}
	if !strings.Contains(string(want.DTS), `declare module "engine/client"`) {
		t.Fatalf("the declarations do not augment the client package:\n%s", want.DTS)
	}
}

// TestTheDescriptorIsReadWithGETOrHEAD checks the methods of /_engine/client.json.
func TestTheDescriptorIsReadWithGETOrHEAD(t *testing.T) {
	t.Parallel()
	srv, _ := serveApp(t)
	if code, _, body := exchange(t, srv, "GET", "/_engine/client.json", ""); code != http.StatusOK || !strings.Contains(body, `"sv.echo"`) {
		t.Fatalf("GET: HTTP %d %s", code, body)
	}
	if code, _, body := exchange(t, srv, "HEAD", "/_engine/client.json", ""); code != http.StatusOK || body != "" {
		t.Fatalf("HEAD: HTTP %d %q", code, body)
	}
	code, allow, body := exchange(t, srv, "POST", "/_engine/client.json", "{}")
	if code != http.StatusMethodNotAllowed || allow != "GET, HEAD" || !strings.Contains(body, `"code":"MethodNotAllowed"`) {
		t.Fatalf("POST: HTTP %d Allow %q %s", code, allow, body)
	}
}

// TestTheBodyLimitAndTheBodiesThatAreNotRead checks that a body of exactly the limit is
// read, one byte more is PayloadTooLarge, and a REST GET's body is never read at all.
func TestTheBodyLimitAndTheBodiesThatAreNotRead(t *testing.T) {
	t.Parallel()
	srv, _ := serveApp(t, engine.WithMaxBodyBytes(24))
	exact := `{"id":1,"name":"abcdef"}`
	if len(exact) != 24 {
		t.Fatalf("body of %d bytes", len(exact))
	}
	if code, _, body := exchange(t, srv, "POST", "/sv/echo", exact); code != http.StatusOK || body != `{"data":{"id":1,"name":"abcdef"},"error":null}` {
		t.Fatalf("a body of the limit: HTTP %d %s", code, body)
	}
	if code, _, body := exchange(t, srv, "POST", "/sv/echo", `{"id":1,"name":"abcdefg"}`); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: HTTP %d %s", code, body)
	}
	big := strings.Repeat(" ", 100)
	if code, _, body := exchange(t, srv, "GET", "/sv/get?id=2&name=q", big); code != http.StatusOK || body != `{"data":{"id":2,"name":"q"},"error":null}` {
		t.Fatalf("a GET with a body over the limit: HTTP %d %s", code, body)
	}
}

// TestDeclaredErrorsTakeTheirStatusFromTheDeclaration checks an error of a declared code
// built without a status: it is answered with the declared one.
func TestDeclaredErrorsTakeTheirStatusFromTheDeclaration(t *testing.T) {
	t.Parallel()
	srv, _ := serveApp(t)
	code, _, body := exchange(t, srv, "POST", "/_engine/sv/declared", `{"id":1,"name":""}`)
	if code != http.StatusConflict || body != `{"data":null,"error":{"code":"Odd","data":{"message":"odd"}}}` {
		t.Fatalf("HTTP %d %s", code, body)
	}
}

// TestACancelledFlowWithTheCallerStillThereIsAnInternalError checks that context.Canceled
// from a flow is only taken for a gone client when the call's own context is done.
func TestACancelledFlowWithTheCallerStillThereIsAnInternalError(t *testing.T) {
	t.Parallel()
	srv, logs := serveApp(t)
	code, _, body := exchange(t, srv, "POST", "/_engine/sv/cancelled", `{"id":1,"name":""}`)
	if code != http.StatusInternalServerError || body != `{"data":null,"error":{"code":"InternalError","data":{"message":"internal error"}}}` {
		t.Fatalf("HTTP %d %s", code, body)
	}
	if !strings.Contains(logs.String(), `"msg":"engine: flow failed","flow":"sv.cancelled","err":"context canceled"`) {
		t.Fatalf("not logged as a failure:\n%s", logs.String())
	}
}

// TestPanicsAreInternalErrorsLoggedWithTheFlow checks a panic in a flow and in a mounted
// route: each answered as InternalError, each logged with its flow (none for the route).
func TestPanicsAreInternalErrorsLoggedWithTheFlow(t *testing.T) {
	t.Parallel()
	srv, logs := serveApp(t)
	want := `{"data":null,"error":{"code":"InternalError","data":{"message":"internal error"}}}`
	if code, _, body := exchange(t, srv, "POST", "/_engine/sv/boom", `{"id":1,"name":""}`); code != http.StatusInternalServerError || body != want {
		t.Fatalf("flow: HTTP %d %s", code, body)
	}
	if code, _, body := exchange(t, srv, "GET", "/sv/mounted", ""); code != http.StatusInternalServerError || body != want {
		t.Fatalf("mounted route: HTTP %d %s", code, body)
	}
	for _, line := range []string{
		`"msg":"engine: panic in flow","flow":"sv.boom","panic":"boom in a flow"`,
		`"msg":"engine: panic in flow","flow":"","panic":"boom in a route"`,
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("no log line with %s in:\n%s", line, logs.String())
		}
	}
	// In-process, the same.
	u := engine.NewUnit("ip")
	f := engine.Define[appIn, appIn](u, "boom", engine.Public())
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.Bind(f, func(*engine.Fx, appIn) (appIn, error) { panic(errors.New("x")) }))
	if err != nil {
		t.Fatal(err)
	}
	out, err := app.Invoke(context.Background(), "ip.boom", nil, json.RawMessage(`{"id":1,"name":""}`))
	if e := engine.AsError(err); out != nil || e == nil || e.Code != engine.CodeInternal {
		t.Fatalf("Invoke: %s, %v", out, err)
	}
}

// TestWriteErrorWithoutACall checks WriteError outside any flow: the envelope is written
// as for a flow, an unknown error hidden as InternalError.
func TestWriteErrorWithoutACall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		code int
		body string
	}{
		{engine.NotFound("no thing %d", 7), http.StatusNotFound, `{"data":null,"error":{"code":"NotFound","data":{"message":"no thing 7"}}}`},
		{errors.New("secret detail"), http.StatusInternalServerError, `{"data":null,"error":{"code":"InternalError","data":{"message":"internal error"}}}`},
	} {
		rec := httptest.NewRecorder()
		engine.WriteError(nil, rec, httptest.NewRequest("GET", "/x", nil), c.err)
		if rec.Code != c.code || strings.TrimSpace(rec.Body.String()) != c.body || rec.Header().Get("Content-Type") == "" {
			t.Errorf("WriteError(%v): HTTP %d %s", c.err, rec.Code, rec.Body.String())
		}
	}
}

// TestInvokeHidesFailuresAndPassesCancellationOn checks the errors of an in-process
// call: a failure is an InternalError without its detail; a call whose context was
// cancelled gets the cancellation itself.
func TestInvokeHidesFailuresAndPassesCancellationOn(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("inv")
	fails := engine.Define[appIn, appIn](u, "fails", engine.Public())
	waits := engine.Define[appIn, appIn](u, "waits", engine.Public())
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.Bind(fails, func(*engine.Fx, appIn) (appIn, error) { return appIn{}, errors.New("database down") }),
		engine.Bind(waits, func(fx *engine.Fx, _ appIn) (appIn, error) { <-fx.Context().Done(); return appIn{}, fx.Context().Err() }))
	if err != nil {
		t.Fatal(err)
	}
	input := json.RawMessage(`{"id":1,"name":""}`)
	_, err = app.Invoke(context.Background(), "inv.fails", nil, input)
	if e := engine.AsError(err); e == nil || e.Code != engine.CodeInternal || e.Message() != "internal error" {
		t.Fatalf("a failing flow: %v, want InternalError without detail", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = app.Invoke(ctx, "inv.waits", nil, input)
	if !errors.Is(err, context.Canceled) || engine.AsError(err) != nil {
		t.Fatalf("a cancelled call: %v (%T), want context.Canceled", err, err)
	}
}

// TestInvokeOfAParkedCall checks that Invoke names the run of a call that parked (the
// 202 of HTTP) as an *AcceptedError, and returns ErrParked itself when the call has no
// run id, and that a RunState is final once completed or failed.
func TestInvokeOfAParkedCall(t *testing.T) {
	t.Parallel()
	f := engine.Define[appIn, appOut](engine.NewUnit("parks"), "wait", engine.Public())
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.Bind(f, func(fx *engine.Fx, in appIn) (appOut, error) {
		if in.ID == 1 {
			fx.SetMeta("runId", in.Name)
		}
		return appOut{}, fmt.Errorf("waiting: %w", engine.ErrParked)
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Invoke(ctxT(t), f.ID(), nil, json.RawMessage(`{"id":1,"name":"run-1"}`))
	if acc, ok := errors.AsType[*engine.AcceptedError](err); !ok || acc.RunID != "run-1" {
		t.Fatalf("Invoke of a call parked in run-1: %v, want an AcceptedError naming run-1", err)
	}
	for _, input := range []string{`{"id":1,"name":""}`, `{"id":2,"name":"run-2"}`} {
		_, err = app.Invoke(ctxT(t), f.ID(), nil, json.RawMessage(input))
		if _, ok := errors.AsType[*engine.AcceptedError](err); ok || !errors.Is(err, engine.ErrParked) {
			t.Fatalf("Invoke of a call parked without a run id (%s): %v, want ErrParked", input, err)
		}
	}
	for status, final := range map[string]bool{"running": false, "parked": false, "completed": true, "failed": true} {
		if got := (engine.RunState{Status: status}).Final(); got != final {
			t.Errorf("RunState{Status: %q}.Final() = %v, want %v", status, got, final)
		}
	}
}
