package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bbc28f59/engine"
)

// These tests hold the public seam every extension uses (the module's own, durable and
// ai among them, and a user's) to what it promises.

// scopeGate is a middleware that passes a principal holding scope and refuses others.
func scopeGate(scope string) engine.Middleware {
	return func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			if !fx.Principal().HasScope(scope) {
				return nil, engine.Forbidden("scope", "missing scope "+scope)
			}
			return next(fx, in)
		}
	}
}

// do sends a request to srv and returns the status and body.
func do(t *testing.T, srv *httptest.Server, method, target, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, srv.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, readAll(t, res)
}

// TestHandleMountsRoutesUnderEngineBesideRPC checks a route of Handle under /_engine/:
// its parameter unescaped, the caller authenticated before it runs, HEAD served by GET,
// and RPC calls of a bound flow winning over the route.
func TestHandleMountsRoutesUnderEngineBesideRPC(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("runs")
	start := engine.Define[appIn, appOut](u, "start", engine.Public())
	var mu sync.Mutex
	var got []string
	read := func(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		who := "anonymous"
		if p := fx.Principal(); p != nil {
			who = p.ID
		}
		got = append(got, r.Method+" "+r.PathValue("runId")+" by "+who)
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tokenAuth{}),
		engine.Handle(http.MethodGet, "/_engine/runs/:runId", read),
		engine.Bind(start, func(_ *engine.Fx, in appIn) (appOut, error) { return appOut{Said: "started " + in.Name}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	if code, _ := do(t, srv, "GET", "/_engine/runs/r%201", ""); code != http.StatusTeapot {
		t.Fatalf("GET: HTTP %d", code)
	}
	if code, _ := do(t, srv, "HEAD", "/_engine/runs/r2", "", "Authorization", "Bearer good"); code != http.StatusTeapot {
		t.Fatalf("HEAD: HTTP %d", code)
	}
	// Invalid credentials are refused before the route runs.
	if code, body := do(t, srv, "GET", "/_engine/runs/r3", "", "Authorization", "Bearer bad"); code != http.StatusUnauthorized || !strings.Contains(body, `"Unauthorized"`) {
		t.Fatalf("a bad token: HTTP %d %s", code, body)
	}
	if want := []string{"GET r 1 by anonymous", "HEAD r2 by u1"}; !slices.Equal(got, want) {
		t.Fatalf("the route saw %v, want %v", got, want)
	}
	if code, body := do(t, srv, "POST", "/_engine/runs/start", `{"id":1,"name":"x"}`); code != http.StatusOK || !strings.Contains(body, `"said":"started x"`) {
		t.Fatalf("RPC beside the route: HTTP %d %s", code, body)
	}
	for _, target := range []string{"/_engine/runs/", "/_engine/runs/a/b"} {
		code, body := do(t, srv, "GET", target, "")
		if code != http.StatusNotFound || !strings.Contains(body, `"code":"NotFound"`) {
			t.Fatalf("GET %s: HTTP %d %s, want NotFound", target, code, body)
		}
	}
	if code, _ := do(t, srv, "GET", "/_engine/runs/start", ""); code != http.StatusTeapot {
		t.Fatalf("GET of a flow's RPC path: HTTP %d, want the route", code)
	}
	// The route's path but another method: 405 naming what is allowed.
	code, body := do(t, srv, "DELETE", "/_engine/runs/r4", "")
	if code != http.StatusMethodNotAllowed || !strings.Contains(body, "MethodNotAllowed") {
		t.Fatalf("DELETE: HTTP %d %s", code, body)
	}
	// A flow's trigger may not take /_engine/; Handle may, but not twice.
	noop := func(*engine.Fx, http.ResponseWriter, *http.Request) {}
	wantNewError(t, "nil handler", engine.Handle(http.MethodGet, "/x", nil))
	wantNewError(t, "already routed", engine.Handle(http.MethodGet, "/_engine/a", noop), engine.Handle(http.MethodGet, "/_engine/a", noop))
	wantNewError(t, "must start with /", engine.Handle(http.MethodGet, "x", noop))
}

// TestInterceptorsWrapEveryCallInTheirPlace checks where interceptors run: Intercept
// around the whole call (seeing a gate's denial), InterceptHandler inside the gates,
// first given outermost, and that each sees the flow, the decoded input and the outcome.
func TestInterceptorsWrapEveryCallInTheirPlace(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("ic")
	open := engine.Define[appIn, appOut](u, "open", engine.Public())
	admin := engine.Define[appIn, appOut](u, "admin")
	var mu sync.Mutex
	var trace []string
	note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
	named := func(name string) engine.Interceptor {
		return func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
			return func(fx *engine.Fx, in any) (any, error) {
				note(name + " " + def.ID() + " in " + in.(appIn).Name)
				out, err := next(fx, in)
				code := "ok"
				if e := engine.AsError(err); e != nil {
					code = e.Code
				}
				note(name + " out " + code)
				return out, err
			}
		}
	}
	gate := func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) { note("gate"); return scopeGate("admin")(next)(fx, in) }
	}
	h := func(fx *engine.Fx, in appIn) (appOut, error) { note("handler"); return appOut{Said: in.Name}, nil }
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tokenAuth{}),
		engine.Intercept(named("a"), named("b")), engine.InterceptHandler(named("inner")),
		engine.Bind(open, h), engine.Bind(admin, h, engine.Use(gate)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	if code, _ := do(t, srv, "POST", "/_engine/ic/open", `{"id":1,"name":"x"}`); code != http.StatusOK {
		t.Fatalf("open: HTTP %d", code)
	}
	want := []string{"a ic.open in x", "b ic.open in x", "inner ic.open in x", "handler", "inner out ok", "b out ok", "a out ok"}
	if !slices.Equal(trace, want) {
		t.Fatalf("ran %q, want %q", trace, want)
	}
	trace = nil
	if code, _ := do(t, srv, "POST", "/_engine/ic/admin", `{"id":1,"name":"y"}`, "Authorization", "Bearer good"); code != http.StatusForbidden {
		t.Fatalf("admin without the scope: HTTP %d", code)
	}
	want = []string{"a ic.admin in y", "b ic.admin in y", "gate", "b out Forbidden", "a out Forbidden"}
	if !slices.Equal(trace, want) {
		t.Fatalf("a denied call ran %q, want %q", trace, want)
	}
	trace = nil
	if code, _ := do(t, srv, "POST", "/_engine/ic/admin", `{"id":1,"name":"z"}`); code != http.StatusUnauthorized {
		t.Fatalf("admin anonymously: HTTP %d", code)
	}
	if want := []string{"a ic.admin in z", "b ic.admin in z", "b out Unauthorized", "a out Unauthorized"}; !slices.Equal(trace, want) {
		t.Fatalf("an anonymous call ran %q, want %q", trace, want)
	}
	wantNewError(t, "nil interceptor", engine.Intercept(nil))
	wantNewError(t, "nil interceptor", engine.InterceptHandler(named("x"), nil))
}

// TestAnExtensionRunsAHandlerItself checks what an extension that runs handlers itself
// (the durable runner) uses: the handler its inner interceptor was given, a call context
// from NewCall, and DecodeInput, none of which passes through the gates.
func TestAnExtensionRunsAHandlerItself(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("cx")
	f := engine.Define[appIn, appOut](u, "f", engine.Public())
	kept := map[string]engine.HandlerFunc{}
	keep := func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
		kept[def.ID()] = next
		return next
	}
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tokenAuth{}),
		engine.InterceptHandler(keep),
		engine.Bind(f, func(fx *engine.Fx, in appIn) (appOut, error) {
			return appOut{Said: in.Name + "@" + fx.Flow().ID() + " by " + fx.Principal().ID}, nil
		}, engine.Use(scopeGate("never"))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxMark{}, "mine")
	p := &engine.Principal{ID: "p"}
	fx, err := app.NewCall(ctx, "cx.f", p)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Principal() != p || fx.Flow().ID() != "cx.f" || fx.App() != app || fx.Request() != nil || fx.Context().Value(ctxMark{}) != "mine" {
		t.Fatalf("NewCall: principal %v flow %v request %v", fx.Principal(), fx.Flow(), fx.Request())
	}
	in, err := app.DecodeInput("cx.f", json.RawMessage(`{"id":1,"name":"n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kept["cx.f"](fx, in); err != nil || out != (appOut{Said: "n@cx.f by p"}) {
		t.Fatalf("the kept handler (no gates): %v, %v", out, err)
	}
	if _, err := app.DecodeInput("cx.f", json.RawMessage(`{"id":"x"}`)); !engine.IsCode(err, engine.CodeValidation) {
		t.Fatalf("DecodeInput of a bad input: %v", err)
	}
	if _, err := app.NewCall(ctx, "cx.none", nil); !engine.IsCode(err, engine.CodeNotFound) {
		t.Fatalf("NewCall of an unknown flow: %v", err)
	}
	if _, err := app.DecodeInput("cx.none", nil); !engine.IsCode(err, engine.CodeNotFound) {
		t.Fatalf("DecodeInput of an unknown flow: %v", err)
	}

	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("Authorization", "Bearer good")
	if got, err := app.Authenticate(r); err != nil || got == nil || got.ID != "u1" {
		t.Fatalf("Authenticate: %v, %v", got, err)
	}
	r.Header.Set("Authorization", "Bearer bad")
	if got, err := app.Authenticate(r); !engine.IsCode(err, engine.CodeUnauthorized) || got != nil {
		t.Fatalf("Authenticate a bad token: %v, %v", got, err)
	}
	bare, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := bare.Authenticate(r); got != nil || err != nil || bare.HasAuthenticator() || !app.HasAuthenticator() {
		t.Fatalf("Authenticate without an authenticator: %v, %v", got, err)
	}
}

type ctxMark struct{}

// TestCheckGatesRunsAFlowsGatesAlone checks HasGates and CheckGates: the gates of a flow
// run without its handler, for a principal and an input, with errors as a caller sees
// them, and ForRead marks a check made for a read.
func TestCheckGatesRunsAFlowsGatesAlone(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("cg")
	ran := 0
	h := func(*engine.Fx, appIn) (appOut, error) { ran++; return appOut{}, nil }
	gated := engine.Define[appIn, appOut](u, "gated")
	public := engine.Define[appIn, appOut](u, "public", engine.Public())
	plain := engine.Define[appIn, appOut](u, "plain", engine.Public())
	failing := engine.Define[appIn, appOut](u, "failing", engine.Public())
	var seenIn []any
	var reads []bool
	record := func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			seenIn = append(seenIn, in)
			reads = append(reads, engine.IsForRead(fx.Context()))
			return next(fx, in)
		}
	}
	broken := func(engine.HandlerFunc) engine.HandlerFunc {
		return func(*engine.Fx, any) (any, error) { return nil, errors.New("database down") }
	}
	logs := &syncBuffer{}
	app := newApp(t, logs,
		engine.Bind(gated, h, engine.Use(record, scopeGate("admin"))),
		engine.Bind(public, h, engine.Use(record)),
		engine.Bind(plain, h),
		engine.Bind(failing, h, engine.Use(broken)))
	ctx := context.Background()
	for id, want := range map[string]bool{"cg.gated": true, "cg.public": true, "cg.plain": false, "cg.none": false} {
		if got := app.HasGates(id); got != want {
			t.Errorf("HasGates(%s) = %v, want %v", id, got, want)
		}
	}
	admin := &engine.Principal{ID: "a", Scopes: []string{"admin"}}
	other := &engine.Principal{ID: "o"}
	input := json.RawMessage(`{"id":7,"name":"n"}`)
	if err := app.CheckGates(ctx, "cg.none", admin, input); !engine.IsCode(err, engine.CodeNotFound) ||
		engine.AsError(err).Message() != "no flow cg.none" {
		t.Fatalf("unknown flow: %v", err)
	}
	if err := app.CheckGates(ctx, "cg.gated", nil, input); !engine.IsCode(err, engine.CodeUnauthorized) {
		t.Fatalf("anonymous on a gated flow: %v", err)
	}
	if err := app.CheckGates(ctx, "cg.gated", other, input); !engine.IsCode(err, engine.CodeForbidden) {
		t.Fatalf("without the scope: %v", err)
	}
	if err := app.CheckGates(engine.ForRead(ctx), "cg.gated", admin, input); err != nil {
		t.Fatalf("with the scope: %v", err)
	}
	if err := app.CheckGates(ctx, "cg.public", nil, nil); err != nil {
		t.Fatalf("anonymous on a public flow without input: %v", err)
	}
	if err := app.CheckGates(ctx, "cg.gated", admin, json.RawMessage(`{"id":"x"}`)); !engine.IsCode(err, engine.CodeValidation) {
		t.Fatalf("a bad input: %v", err)
	}
	if want := []any{appIn{ID: 7, Name: "n"}, appIn{ID: 7, Name: "n"}, appIn{}}; !slices.Equal(seenIn, want) {
		t.Fatalf("the gates saw %v, want %v (a nil input is the zero value)", seenIn, want)
	}
	if want := []bool{false, true, false}; !slices.Equal(reads, want) {
		t.Fatalf("IsForRead in the gates: %v, want %v", reads, want)
	}
	err := app.CheckGates(ctx, "cg.failing", nil, input)
	if e := engine.AsError(err); e == nil || e.Code != engine.CodeInternal || e.Message() != "internal error" {
		t.Fatalf("a gate that fails: %v, want InternalError without detail", err)
	}
	if !strings.Contains(logs.String(), "database down") {
		t.Fatalf("the gate's failure was not logged: %s", logs.String())
	}
	if ran != 0 {
		t.Fatalf("CheckGates ran a handler %d times", ran)
	}
}

// TestClaimRunIDOutsideADurableRun checks that a call made outside any durable run has no
// key to claim as a run id.
func TestClaimRunIDOutsideADurableRun(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("cl")
	f := engine.Define[appIn, appOut](u, "f", engine.Public())
	app := newApp(t, nil, engine.Bind(f, func(fx *engine.Fx, _ appIn) (appOut, error) {
		id, ok := fx.ClaimRunID()
		if ok || id != "" {
			return appOut{}, errors.New("claimed " + id)
		}
		return appOut{Said: "none"}, nil
	}))
	if out, err := app.Invoke(context.Background(), "cl.f", nil, json.RawMessage(`{"id":1,"name":""}`)); err != nil || string(out) != `{"said":"none"}` {
		t.Fatalf("%s, %v", out, err)
	}
}
