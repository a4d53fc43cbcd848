package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/store"
)

// gateParts builds an app of the auth, notes, admin and limited parts only, over a
// private in-memory database, served over loopback HTTP.
func gateParts(t *testing.T) (*engine.App, *httptest.Server, *env) {
	t.Helper()
	e := &env{Journal: "memory", Password: "correct horse battery staple", Logger: slog.New(slog.DiscardHandler)}
	db, err := openDB(e)
	if err != nil {
		t.Fatal(err)
	}
	e.DB = db
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	var opts []engine.Option
	for _, p := range parts {
		switch p.name {
		case "auth", "notes", "admin", "limited":
			o, err := p.build(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, o)
		}
	}
	app, err := engine.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return app, srv, e
}

func TestGatePartsEndToEnd(t *testing.T) {
	app, srv, e := gateParts(t)
	ctx := context.Background()
	anon, err := clientx.ForApp(app, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	as := func(email string) *clientx.Client {
		r := clientx.Call(ctx, anon, gate.SignInEmail, gate.Credentials{Email: email, Password: "correct horse battery staple"})
		if r.Error != nil {
			t.Fatalf("sign in %s: %v", email, r.Error)
		}
		tok := r.Data.AccessToken
		c, err := clientx.ForApp(app, srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob, carol, ops := as("alice@example.com"), as("bob@example.com"), as("carol@example.com"), as("ops@example.com")

	me := clientx.Call(ctx, ops, gate.Me, gate.MeInput{})
	if me.Error != nil || !me.Data.Operator || me.Data.Tenant != "t1" || len(me.Data.Scopes) != 0 {
		t.Fatalf("ops me = %+v", me)
	}
	n := clientx.Call(ctx, alice, Notes.Create, store.Fields{"title": "t1 note", "body": "b"})
	if n.Error != nil {
		t.Fatal(n.Error)
	}
	if r := clientx.Call(ctx, bob, Notes.Get, store.ID{ID: n.Data.ID}); r.Error != nil {
		t.Errorf("bob (t1, notes:read) get: %v", r.Error)
	}
	if r := clientx.Call(ctx, bob, Notes.Remove, store.ID{ID: n.Data.ID}); r.Error == nil || r.Error.Code != engine.CodeForbidden {
		t.Errorf("bob remove: %+v", r.Error)
	}
	if r := clientx.Call(ctx, carol, Notes.Get, store.ID{ID: n.Data.ID}); r.Error == nil || r.Error.Code != engine.CodeNotFound {
		t.Errorf("carol (t2) get: %+v", r.Error)
	}
	if r := clientx.Call(ctx, alice, Stats, struct{}{}); r.Status != http.StatusForbidden {
		t.Errorf("alice admin.stats: %+v", r)
	}
	statuses := []int{}
	for range 6 {
		statuses = append(statuses, clientx.Call(ctx, anon, Ping, struct{}{}).Status)
	}
	if want := []int{200, 200, 200, 200, 200, 429}; !equal(statuses, want) {
		t.Errorf("limited.ping statuses = %v, want %v", statuses, want)
	}
	// The descriptor carries no secret and marks the gated flows.
	resp, err := http.Get(srv.URL + "/_engine/client.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, f := range app.Descriptor().Units {
		for _, fl := range f.Flows {
			if fl.ID == "limited.ping" && !fl.Gated {
				t.Error("limited.ping is not marked gated")
			}
		}
	}
	key, err := demoKey(ctx, e.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) == 0 || strings.Contains(string(body), key.Reveal()) {
		t.Fatal("the descriptor is empty or carries the signing key")
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
