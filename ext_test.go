package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/internal/ext"
)

// These tests hold the seam the module's extensions (durable, ai) use, through
// internal/ext, to what the engine promises them.

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

// TestMountEngineServesAReadRouteBesideRPC checks a GET /_engine/<unit>/:param route:
// its parameter unescaped, the app in its context, HEAD too, and POST still RPC.
func TestMountEngineServesAReadRouteBesideRPC(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("runs")
	start := engine.Define[appIn, appOut](u, "start", engine.Public())
	var got []string
	var sameApp bool
	var app *engine.App
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.PathValue("runId"))
		sameApp = ext.AppOf(r) == app
		w.WriteHeader(http.StatusTeapot)
	})
	app, err := engine.New(engine.WithLogger(discardLogger()), ext.MountEngine("runs", "runId", read),
		engine.Bind(start, func(_ *engine.Fx, in appIn) (appOut, error) { return appOut{Said: "started " + in.Name}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	do := func(method, target, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctxT(t), method, srv.URL+target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, readAll(t, res)
	}
	if code, _ := do("GET", "/_engine/runs/r%201", ""); code != http.StatusTeapot {
		t.Fatalf("GET: HTTP %d", code)
	}
	if code, _ := do("HEAD", "/_engine/runs/r2", ""); code != http.StatusTeapot {
		t.Fatalf("HEAD: HTTP %d", code)
	}
	if want := []string{"GET r 1", "HEAD r2"}; !slices.Equal(got, want) || !sameApp {
		t.Fatalf("the read route saw %v (the app in its context: %v), want %v", got, sameApp, want)
	}
	if code, body := do("POST", "/_engine/runs/start", `{"id":1,"name":"x"}`); code != http.StatusOK || !strings.Contains(body, `"said":"started x"`) {
		t.Fatalf("RPC beside the read route: HTTP %d %s", code, body)
	}
	for _, target := range []string{"/_engine/runs/", "/_engine/runs/a/b"} {
		code, body := do("GET", target, "")
		if code != http.StatusNotFound || !strings.Contains(body, `"code":"NotFound"`) {
			t.Fatalf("GET %s: HTTP %d %s, want NotFound", target, code, body)
		}
	}
	if code, body := do("GET", "/_engine/runs/start", ""); code != http.StatusTeapot {
		t.Fatalf("GET of a flow's RPC path: HTTP %d %s, want the read route", code, body)
	}
	if len(got) != 3 {
		t.Fatalf("the read route ran %d times, want 3", len(got))
	}

	h := http.NotFoundHandler()
	for _, c := range []struct {
		name string
		opts []engine.Option
		want string
	}{
		{"no unit", []engine.Option{ext.MountEngine("", "id", h)}, "MountEngine needs a unit, a parameter and a handler"},
		{"no parameter", []engine.Option{ext.MountEngine("runs", "", h)}, "MountEngine needs a unit, a parameter and a handler"},
		{"no handler", []engine.Option{ext.MountEngine("runs", "id", nil)}, "MountEngine needs a unit, a parameter and a handler"},
		{"twice", []engine.Option{ext.MountEngine("runs", "id", h), ext.MountEngine("runs", "x", h)}, "GET /_engine/runs/:x is already mounted"},
	} {
		wantNewError(t, c.want, c.opts...)
	}
}

// TestSetDurableWrapsDurableFlowsOnly checks the durable runner seam: one runner per
// app, wrapped around durable flows inside their middleware, and not around others.
func TestSetDurableWrapsDurableFlowsOnly(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("dur")
	long := engine.Define[appIn, appOut](u, "long", engine.Public(), engine.Durable())
	short := engine.Define[appIn, appOut](u, "short", engine.Public())
	var order []string
	wrap := func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			order = append(order, "runner "+def.ID())
			ext.SetContext(fx, context.WithValue(fx.Context(), ctxMark{}, "set by the runner"))
			return next(fx, in)
		}
	}
	mw := func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) { order = append(order, "middleware"); return next(fx, in) }
	}
	h := func(fx *engine.Fx, in appIn) (appOut, error) {
		mark, _ := fx.Context().Value(ctxMark{}).(string)
		order = append(order, "handler")
		return appOut{Said: mark}, nil
	}
	app, err := engine.New(engine.WithLogger(discardLogger()),
		ext.AppOption(func(a *engine.App) error { return ext.SetDurable(a, wrap) }),
		engine.Bind(long, h, engine.Use(mw)), engine.Bind(short, h))
	if err != nil {
		t.Fatal(err)
	}
	out, err := app.Invoke(context.Background(), "dur.long", nil, json.RawMessage(`{"id":1,"name":""}`))
	if err != nil || string(out) != `{"said":"set by the runner"}` {
		t.Fatalf("durable flow: %s, %v", out, err)
	}
	if want := []string{"middleware", "runner dur.long", "handler"}; !slices.Equal(order, want) {
		t.Fatalf("ran %v, want %v", order, want)
	}
	order = nil
	if out, err := app.Invoke(context.Background(), "dur.short", nil, json.RawMessage(`{"id":1,"name":""}`)); err != nil || string(out) != `{"said":""}` {
		t.Fatalf("ordinary flow: %s, %v", out, err)
	}
	if want := []string{"handler"}; !slices.Equal(order, want) {
		t.Fatalf("ran %v, want %v", order, want)
	}

	setTwice := ext.AppOption(func(a *engine.App) error {
		if err := ext.SetDurable(a, wrap); err != nil {
			return err
		}
		return ext.SetDurable(a, wrap)
	})
	wantNewError(t, "engine: a durable runner is already set", setTwice)
	wantNewError(t, "engine: nil durable runner", ext.AppOption(func(a *engine.App) error { return ext.SetDurable(a, nil) }))
}

type ctxMark struct{}

// TestTheCallContextsOfAnExtension checks CallFx, RouteFx, Handler and Authenticate.
func TestTheCallContextsOfAnExtension(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("cx")
	f := engine.Define[appIn, appOut](u, "f", engine.Public())
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tokenAuth{}),
		engine.Bind(f, func(fx *engine.Fx, in appIn) (appOut, error) {
			return appOut{Said: in.Name + "@" + fx.Flow().ID()}, nil
		},
			engine.Use(scopeGate("never"))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxMark{}, "mine")
	def, _ := app.Lookup("cx.f")
	p := &engine.Principal{ID: "p"}
	fx := ext.CallFx(app, ctx, def, p)
	if fx.Principal() != p || fx.Flow() != def || fx.App() != app || fx.Request() != nil || fx.Context().Value(ctxMark{}) != "mine" {
		t.Fatalf("CallFx: principal %v flow %v request %v", fx.Principal(), fx.Flow(), fx.Request())
	}
	r := httptest.NewRequest("GET", "/x", nil)
	rfx := ext.RouteFx(app, r, p)
	if rfx.Principal() != p || rfx.Flow().ID() != "_route.route" || rfx.Request() != r {
		t.Fatalf("RouteFx: principal %v flow %s", rfx.Principal(), rfx.Flow().ID())
	}
	// Handler is the bare handler, without the flow's gates.
	h, decode, ok := ext.Handler(app, "cx.f")
	if !ok {
		t.Fatal("Handler(cx.f) not found")
	}
	in, err := decode([]byte(`{"id":1,"name":"n"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h(fx, in); err != nil || out != (appOut{Said: "n@cx.f"}) {
		t.Fatalf("handler: %v, %v", out, err)
	}
	if h, decode, ok := ext.Handler(app, "cx.none"); ok || h != nil || decode != nil {
		t.Fatal("Handler of an unknown flow found something")
	}

	r.Header.Set("Authorization", "Bearer good")
	if got, err := ext.Authenticate(app, r); err != nil || got == nil || got.ID != "u1" {
		t.Fatalf("Authenticate: %v, %v", got, err)
	}
	r.Header.Set("Authorization", "Bearer bad")
	if got, err := ext.Authenticate(app, r); !engine.IsCode(err, engine.CodeUnauthorized) || got != nil {
		t.Fatalf("Authenticate a bad token: %v, %v", got, err)
	}
	bare, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ext.Authenticate(bare, r); got != nil || err != nil {
		t.Fatalf("Authenticate without an authenticator: %v, %v", got, err)
	}
}

// TestCheckGatesRunsAFlowsGatesAlone checks HasGates and CheckGates: the gates of a flow
// run without its handler, for a principal and an input, with errors as a caller sees
// them.
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
	record := func(next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) { seenIn = append(seenIn, in); return next(fx, in) }
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
		if got := ext.HasGates(app, id); got != want {
			t.Errorf("HasGates(%s) = %v, want %v", id, got, want)
		}
	}
	admin := &engine.Principal{ID: "a", Scopes: []string{"admin"}}
	other := &engine.Principal{ID: "o"}
	input := json.RawMessage(`{"id":7,"name":"n"}`)
	if err := ext.CheckGates(app, ctx, "cg.none", admin, input); !engine.IsCode(err, engine.CodeNotFound) ||
		engine.AsError(err).Message() != "no flow cg.none" {
		t.Fatalf("unknown flow: %v", err)
	}
	if err := ext.CheckGates(app, ctx, "cg.gated", nil, input); !engine.IsCode(err, engine.CodeUnauthorized) {
		t.Fatalf("anonymous on a gated flow: %v", err)
	}
	if err := ext.CheckGates(app, ctx, "cg.gated", other, input); !engine.IsCode(err, engine.CodeForbidden) {
		t.Fatalf("without the scope: %v", err)
	}
	if err := ext.CheckGates(app, ctx, "cg.gated", admin, input); err != nil {
		t.Fatalf("with the scope: %v", err)
	}
	if err := ext.CheckGates(app, ctx, "cg.public", nil, nil); err != nil {
		t.Fatalf("anonymous on a public flow without input: %v", err)
	}
	if err := ext.CheckGates(app, ctx, "cg.gated", admin, json.RawMessage(`{"id":"x"}`)); !engine.IsCode(err, engine.CodeValidation) {
		t.Fatalf("a bad input: %v", err)
	}
	if want := []any{appIn{ID: 7, Name: "n"}, appIn{ID: 7, Name: "n"}, appIn{}}; !slices.Equal(seenIn, want) {
		t.Fatalf("the gates saw %v, want %v (a nil input is the zero value)", seenIn, want)
	}
	err := ext.CheckGates(app, ctx, "cg.failing", nil, input)
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
