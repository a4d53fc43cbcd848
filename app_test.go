package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
)

type appIn struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

type appOut struct {
	Said string `json:"said"`
}

// wantNewError fails unless New with opts fails with an error containing want.
func wantNewError(t *testing.T, want string, opts ...engine.Option) {
	t.Helper()
	app, err := engine.New(append([]engine.Option{engine.WithLogger(discardLogger())}, opts...)...)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New: app %v, error %v; want an error containing %q", app, err, want)
	}
}

// TestNewRefusesBadOptions checks each option's own refusal, and that a nil option is
// skipped rather than applied.
func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	mine := errors.New("mine")
	u := engine.NewUnit("opts")
	f := engine.Define[appIn, appOut](u, "f", engine.Public())
	h := func(_ *engine.Fx, in appIn) (appOut, error) { return appOut{}, nil }
	sh := func(_ *engine.Fx, in appIn, _ *engine.Stream[int]) (appOut, error) { return appOut{}, nil }
	cases := []struct {
		name string
		opts []engine.Option
		want string
	}{
		{"nil logger", []engine.Option{engine.WithLogger(nil)}, "WithLogger: nil logger"},
		{"zero body limit", []engine.Option{engine.WithMaxBodyBytes(0)}, "limit must be positive, got 0"},
		{"negative body limit", []engine.Option{engine.WithMaxBodyBytes(-1)}, "limit must be positive, got -1"},
		{"nil authenticator", []engine.Option{engine.WithAuthenticator(nil)}, "nil authenticator"},
		{"two authenticators", []engine.Option{engine.WithAuthenticator(tokenAuth{}), engine.WithAuthenticator(tokenAuth{})},
			"an authenticator is already set"},
		{"nil check", []engine.Option{engine.Validate(nil)}, "Validate: nil check"},
		{"bad mount", []engine.Option{engine.Mount("GET", "x", http.NotFoundHandler())}, `Mount: trigger path "x" must start with /`},
		{"invalid option inside Options", []engine.Option{engine.Options(nil, engine.InvalidOption(mine))}, "mine"},
		{"failing check", []engine.Option{engine.Bind(f, h), engine.Validate(func(*engine.App) error { return mine })}, "mine"},
		{"nil flow", []engine.Option{engine.Bind[appIn, appOut](nil, h)}, "Bind: nil flow"},
		{"nil stream flow", []engine.Option{engine.BindStream[appIn, int, appOut](nil, sh)}, "BindStream: nil flow"},
		{"stream flow not made by DefineStream", []engine.Option{engine.BindStream(&engine.StreamFlow[appIn, int, appOut]{}, sh)},
			"BindStream: nil flow"},
		{"nil handler", []engine.Option{engine.Bind(f, nil)}, "Bind opts.f: nil handler"},
		{"bound twice", []engine.Option{engine.Bind(f, h), engine.Bind(f, h)}, "flow opts.f is bound twice"},
		{"nil middleware", []engine.Option{engine.Bind(f, h, engine.Use(nil))}, "Bind opts.f: nil middleware"},
		{"invalid bind option", []engine.Option{engine.Bind(f, h, engine.BindOptions(nil, engine.InvalidBindOption(mine)))},
			"Bind opts.f: mine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wantNewError(t, c.want, c.opts...)
		})
	}

	// A nil option, at New or inside Options, is skipped; the options after it apply.
	var checked int
	app, err := engine.New(nil, engine.Options(nil, engine.WithLogger(discardLogger()),
		engine.WithMaxBodyBytes(1)), engine.Bind(f, h, engine.BindOptions(nil)),
		engine.Validate(func(*engine.App) error { checked++; return nil }))
	if err != nil || checked != 1 {
		t.Fatalf("New: %v, the check ran %d times; want success and one run", err, checked)
	}
	if _, ok := app.Lookup("opts.f"); !ok {
		t.Fatal("opts.f is not bound")
	}
	if _, err := engine.New(engine.InvalidOption(mine)); !errors.Is(err, mine) {
		t.Fatalf("New(InvalidOption(mine)) = %v, want mine itself", err)
	}
}

// TestChecksRunOnceEveryOptionIsApplied checks that a Validate check sees flows bound
// after it, and that the first failing check fails New.
func TestChecksRunOnceEveryOptionIsApplied(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("late")
	f := engine.Define[appIn, appOut](u, "f", engine.Public())
	var seen []string
	check := func(a *engine.App) error {
		for _, d := range a.Flows() {
			seen = append(seen, d.ID())
		}
		return nil
	}
	_, err := engine.New(engine.Validate(check),
		engine.Bind(f, func(*engine.Fx, appIn) (appOut, error) { return appOut{}, nil }))
	if err != nil || !slices.Equal(seen, []string{"late.f"}) {
		t.Fatalf("New: %v, the check saw %v; want [late.f]", err, seen)
	}
}

// TestStartAndCloseRunTheHooksInOrder checks the lifecycle: start hooks in order, once;
// close hooks in reverse order, their errors joined; a failed start leaves the app
// stopped.
func TestStartAndCloseRunTheHooksInOrder(t *testing.T) {
	t.Parallel()
	var log []string
	hook := func(name string, err error) func(context.Context, *engine.App) error {
		return func(context.Context, *engine.App) error { log = append(log, name); return err }
	}
	errA, errB := errors.New("close a"), errors.New("close b")
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.OnStart(hook("start 1", nil)), engine.OnStart(hook("start 2", nil)),
		engine.OnClose(hook("close 1", errA)), engine.OnClose(hook("close 2", nil)), engine.OnClose(hook("close 3", errB)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := app.Close(ctx); err != nil || len(log) != 0 {
		t.Fatalf("Close before Start: %v, ran %v; want nothing", err, log)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err == nil || err.Error() != "engine: app already started" {
		t.Fatalf("second Start: %v", err)
	}
	err = app.Close(ctx)
	if !errors.Is(err, errA) || !errors.Is(err, errB) || err.Error() != "close b\nclose a" {
		t.Fatalf("Close: %q, want the joined errors of close 3 and close 1", err)
	}
	want := []string{"start 1", "start 2", "close 3", "close 2", "close 1"}
	if !slices.Equal(log, want) {
		t.Fatalf("hooks ran %v, want %v", log, want)
	}
	if err := app.Close(ctx); err != nil || len(log) != len(want) {
		t.Fatalf("second Close: %v, ran %v", err, log)
	}
	// It can start again after Close.
	if err := app.Start(ctx); err != nil {
		t.Fatalf("Start after Close: %v", err)
	}

	boom := errors.New("boom")
	log = nil
	failing, err := engine.New(engine.WithLogger(discardLogger()),
		engine.OnStart(hook("start 1", boom)), engine.OnStart(hook("start 2", nil)), engine.OnClose(hook("close", nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := failing.Start(ctx); !errors.Is(err, boom) {
		t.Fatalf("Start: %v, want boom", err)
	}
	if err := failing.Close(ctx); err != nil || !slices.Equal(log, []string{"start 1"}) {
		t.Fatalf("Close after a failed Start: %v, hooks ran %v; want only start 1", err, log)
	}
}

// TestMiddlewareAndTheGate checks the chain of a bound flow: its middleware outermost
// first, the gate before them on a gated flow, over HTTP and through Invoke.
func TestMiddlewareAndTheGate(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("chain")
	gated := engine.Define[appIn, appOut](u, "gated")
	open := engine.Define[appIn, appOut](u, "open", engine.Public())
	var order []string
	mw := func(name string) engine.Middleware {
		return func(next engine.HandlerFunc) engine.HandlerFunc {
			return func(fx *engine.Fx, in any) (any, error) {
				order = append(order, name)
				return next(fx, in)
			}
		}
	}
	h := func(fx *engine.Fx, in appIn) (appOut, error) {
		order = append(order, "handler")
		who := "anonymous"
		if p := fx.Principal(); p != nil {
			who = p.ID
		}
		return appOut{Said: in.Name + " by " + who}, nil
	}
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tokenAuth{}),
		engine.Bind(gated, h, engine.Use(mw("outer"), mw("inner"))),
		engine.Bind(open, h, engine.Use(mw("only"))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := app.Invoke(ctx, "chain.gated", nil, json.RawMessage(`{"id":1,"name":"x"}`)); !engine.IsCode(err, engine.CodeUnauthorized) {
		t.Fatalf("anonymous call of a gated flow: %v, want Unauthorized", err)
	}
	if len(order) != 0 {
		t.Fatalf("an unauthorized call ran %v", order)
	}
	out, err := app.Invoke(ctx, "chain.gated", &engine.Principal{ID: "ada"}, json.RawMessage(`{"id":1,"name":"x"}`))
	if err != nil || string(out) != `{"said":"x by ada"}` {
		t.Fatalf("gated call: %s, %v", out, err)
	}
	if want := []string{"outer", "inner", "handler"}; !slices.Equal(order, want) {
		t.Fatalf("ran %v, want %v", order, want)
	}
	order = nil
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	res, err := http.Post(srv.URL+"/_engine/chain/open", "application/json", strings.NewReader(`{"id":1,"name":"y"}`))
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	if res.StatusCode != http.StatusOK || body != `{"data":{"said":"y by anonymous"},"error":null}` {
		t.Fatalf("public call: HTTP %d %s", res.StatusCode, body)
	}
	if want := []string{"only", "handler"}; !slices.Equal(order, want) {
		t.Fatalf("ran %v, want %v", order, want)
	}
}

// TestServerOnlyFlows checks that a server-only flow has no route and no RPC, needs no
// authenticator though gated, is listed under "server" with its tags, and still runs
// through Invoke. The server-only flow sorts before the other, which the descriptor
// must still list.
func TestServerOnlyFlows(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("jobs")
	job := engine.Define[appIn, appOut](u, "audit", engine.POST("/jobs/audit"), engine.Describe("Audits."))
	pub := engine.Define[appIn, appOut](u, "ping", engine.GET("/jobs/ping"), engine.Public())
	h := func(_ *engine.Fx, in appIn) (appOut, error) { return appOut{Said: in.Name}, nil }
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.Bind(job, h, engine.ServerOnly(), engine.Tag("cron", "@hourly"), engine.Tag("owner", "ops")),
		engine.Bind(pub, h, engine.Tag("a", 1.0), engine.Tag("b", true)))
	if err != nil {
		t.Fatalf("New: %v (a gated server-only flow needs no authenticator)", err)
	}
	if got, want := app.Routes(), (engine.Routes{"jobs": {"ping": {Method: "GET", Path: "/jobs/ping"}}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("Routes %v, want %v", got, want)
	}
	d := app.Descriptor()
	wantServer := []engine.DescriptorServerFlow{{ID: "jobs.audit", Description: "Audits.",
		Tags: map[string]any{"cron": "@hourly", "owner": "ops"}}}
	if !reflect.DeepEqual(d.Server, wantServer) {
		t.Fatalf("descriptor server %+v, want %+v", d.Server, wantServer)
	}
	if len(d.Units) != 1 || len(d.Units[0].Flows) != 1 ||
		!reflect.DeepEqual(d.Units[0].Flows[0].Tags, map[string]any{"a": 1.0, "b": true}) {
		t.Fatalf("descriptor units %+v, want jobs.ping with tags a and b", d.Units)
	}
	if def, _ := app.Lookup("jobs.ping"); def == nil {
		t.Fatal("jobs.ping is not bound")
	} else if r, ok := def.Trigger(); !ok || r != (engine.Route{Method: "GET", Path: "/jobs/ping"}) {
		t.Fatalf("Trigger of jobs.ping = %v, %v", r, ok)
	}
	if r, ok := engine.Define[appIn, appOut](u, "rpcOnly").Def().Trigger(); ok || r != (engine.Route{}) {
		t.Fatalf("Trigger of a flow without one = %v, %v", r, ok)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	for _, target := range []string{"/_engine/jobs/audit", "/jobs/audit"} {
		res, err := http.Post(srv.URL+target, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, res)
		if res.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code":"NotFound"`) {
			t.Fatalf("POST %s: HTTP %d %s, want NotFound", target, res.StatusCode, body)
		}
	}
	out, err := app.Invoke(context.Background(), "jobs.audit", nil, json.RawMessage(`{"id":1,"name":"n"}`))
	if err == nil || !engine.IsCode(err, engine.CodeUnauthorized) {
		t.Fatalf("anonymous Invoke of the gated server-only flow: %s, %v; want Unauthorized", out, err)
	}
	out, err = app.Invoke(context.Background(), "jobs.audit", &engine.Principal{ID: "cron"}, json.RawMessage(`{"id":1,"name":"n"}`))
	if err != nil || string(out) != `{"said":"n"}` {
		t.Fatalf("Invoke: %s, %v", out, err)
	}
}

// TestAGatedFlowIsRefusedWithoutAnAuthenticatorWhateverItsPlace checks checkConfig
// looks at every flow, not only the first.
func TestAGatedFlowIsRefusedWithoutAnAuthenticatorWhateverItsPlace(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("cfg")
	a := engine.Define[appIn, appOut](u, "a", engine.Public())
	b := engine.Define[appIn, appOut](u, "b")
	h := func(*engine.Fx, appIn) (appOut, error) { return appOut{}, nil }
	wantNewError(t, "flow cfg.b is gated (not engine.Public()) but the app has no authenticator", engine.Bind(a, h), engine.Bind(b, h))
	if _, err := engine.New(engine.Bind(a, h), engine.Bind(b, h), engine.WithAuthenticator(tokenAuth{})); err != nil {
		t.Fatalf("with an authenticator: %v", err)
	}
}

// TestFlowsAreSortedByUnitThenName checks App.Flows' order and Lookup.
func TestFlowsAreSortedByUnitThenName(t *testing.T) {
	t.Parallel()
	b, a := engine.NewUnit("b"), engine.NewUnit("a")
	h := func(*engine.Fx, appIn) (appOut, error) { return appOut{}, nil }
	var opts []engine.Option
	for _, f := range []*engine.Flow[appIn, appOut]{
		engine.Define[appIn, appOut](b, "a", engine.Public()),
		engine.Define[appIn, appOut](a, "z", engine.Public()),
		engine.Define[appIn, appOut](b, "c", engine.Public()),
		engine.Define[appIn, appOut](a, "m", engine.Public()),
	} {
		opts = append(opts, engine.Bind(f, h))
	}
	app, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range app.Flows() {
		ids = append(ids, d.ID())
	}
	if want := []string{"a.m", "a.z", "b.a", "b.c"}; !slices.Equal(ids, want) {
		t.Fatalf("Flows %v, want %v", ids, want)
	}
	if d, ok := app.Lookup("b.c"); !ok || d.ID() != "b.c" {
		t.Fatalf("Lookup(b.c) = %v, %v", d, ok)
	}
	if d, ok := app.Lookup("b.x"); ok || d != nil {
		t.Fatalf("Lookup(b.x) = %v, %v; want nothing", d, ok)
	}
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return strings.TrimSpace(b.String())
}

// TestDeclarationMistakesFailNew checks what Define and its options refuse, reported by
// New when the flow is bound, and what they accept at the edges.
func TestDeclarationMistakesFailNew(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("decl")
	bad := engine.NewUnit("bad-unit")
	h := func(*engine.Fx, appIn) (appOut, error) { return appOut{}, nil }
	hAny := func(_ *engine.Fx, in any) (any, error) { return in, nil }
	cases := []struct {
		name string
		flow *engine.Flow[appIn, appOut]
		want string // "" when the declaration is accepted
	}{
		{"reserved path", engine.Define[appIn, appOut](u, "r1", engine.POST("/_engine/x"), engine.Public()),
			`flow decl.r1: trigger path "/_engine/x" is reserved for engine`},
		{"reserved path without a slash", engine.Define[appIn, appOut](u, "r2", engine.POST("/_engine"), engine.Public()),
			`flow decl.r2: trigger path "/_engine" is reserved for engine`},
		{"a path beginning like the prefix", engine.Define[appIn, appOut](u, "r3", engine.POST("/_engines"), engine.Public()), ""},
		{"status 399", engine.Define[appIn, appOut](u, "s1", engine.Errors(engine.NewCode[struct{}]("Odd", 399)), engine.Public()),
			`flow decl.s1: error code "Odd": status 399 is not an error status`},
		{"status 400", engine.Define[appIn, appOut](u, "s2", engine.Errors(engine.NewCode[struct{}]("Low", 400)), engine.Public()), ""},
		{"status 599", engine.Define[appIn, appOut](u, "s3", engine.Errors(engine.NewCode[struct{}]("High", 599)), engine.Public()), ""},
		{"status 600", engine.Define[appIn, appOut](u, "s4", engine.Errors(engine.NewCode[struct{}]("Over", 600)), engine.Public()),
			`flow decl.s4: error code "Over": status 600 is not an error status`},
		{"framework code", engine.Define[appIn, appOut](u, "s5", engine.Errors(engine.NewCode[struct{}](engine.CodeNotFound, 404)), engine.Public()),
			`error code "NotFound" is a framework code`},
		{"bad flow name", engine.Define[appIn, appOut](u, "no-dash", engine.Public()),
			"flow decl.no-dash: unit and flow names must be identifiers"},
		{"bad unit name", engine.Define[appIn, appOut](bad, "fine", engine.Public()),
			"flow bad-unit.fine: unit and flow names must be identifiers"},
		{"the first option error is kept", engine.Define[appIn, appOut](u, "o1", engine.GET("x"), engine.Trigger("BREW", "/y"), engine.Public()),
			`flow decl.o1: trigger path "x" must start with /`},
		{"a name error beats an option error", engine.Define[appIn, appOut](u, "o-2", engine.GET("x"), engine.Public()),
			"flow decl.o-2: unit and flow names must be identifiers"},
		{"a name error beats a missing parameter", engine.Define[appIn, appOut](u, "o-3", engine.GET("/o/:missing"), engine.Public()),
			"flow decl.o-3: unit and flow names must be identifiers"},
		{"a parameter that is no field", engine.Define[appIn, appOut](u, "p1", engine.GET("/p/:missing"), engine.Public()),
			"flow decl.p1: path parameter :missing is not a field of the input"},
		{"a parameter that is a field", engine.Define[appIn, appOut](u, "p2", engine.GET("/p/:id"), engine.Public()), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := engine.New(engine.WithLogger(discardLogger()), engine.Bind(c.flow, h))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("New: %v, want success", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("New: %v, want an error containing %q", err, c.want)
			}
		})
	}
	// Any map or interface input, behind pointers or not, can carry a path parameter.
	anyIn := engine.Define[any, any](u, "anyIn", engine.GET("/any/:id"), engine.Public())
	if _, err := engine.New(engine.Bind(anyIn, hAny)); err != nil {
		t.Fatalf("%s: %v", anyIn.ID(), err)
	}
	m := engine.Define[*map[string]int, any](u, "mapIn", engine.GET("/map/:id"), engine.Public())
	if _, err := engine.New(engine.Bind(m, func(_ *engine.Fx, in *map[string]int) (any, error) { return in, nil })); err != nil {
		t.Fatalf("%s: %v", m.ID(), err)
	}
	s := engine.Define[*string, any](u, "strIn", engine.GET("/str/:id"), engine.Public())
	if _, err := engine.New(engine.Bind(s, func(_ *engine.Fx, in *string) (any, error) { return in, nil })); err == nil ||
		!strings.Contains(err.Error(), "path parameter :id is not a field of the input") {
		t.Fatalf("%s: %v, want the parameter refused", s.ID(), err)
	}
}

// TestHasScope checks Principal.HasScope, on no principal too.
func TestHasScope(t *testing.T) {
	t.Parallel()
	p := &engine.Principal{ID: "p", Scopes: []string{"read", "write"}}
	if !p.HasScope("write") || p.HasScope("admin") {
		t.Fatalf("HasScope of %v: write %v, admin %v", p.Scopes, p.HasScope("write"), p.HasScope("admin"))
	}
	var none *engine.Principal
	if none.HasScope("read") {
		t.Fatal("no principal has a scope")
	}
	if (&engine.Principal{}).HasScope("") {
		t.Fatal("a principal without scopes has the empty scope")
	}
}
