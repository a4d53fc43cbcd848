package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/store"
	"github.com/bbc28f59/engine/vault"
	"github.com/google/uuid"
	"github.com/uptrace/bun"
	_ "modernc.org/sqlite"
)

// Note is the record of the test resource.
type Note struct {
	bun.BaseModel `bun:"table:store_test_notes"`

	ID        string    `bun:"id,pk" json:"id" store:"id"`
	Tenant    string    `bun:"tenant,notnull" json:"-" store:"tenant"`
	Title     string    `bun:"title,notnull" json:"title" store:"filter"`
	Body      string    `bun:"body,notnull" json:"body"`
	Pinned    bool      `bun:"pinned,notnull" json:"pinned,omitempty" store:"filter"`
	Views     int       `bun:"views,notnull" json:"views,omitempty" store:"readonly"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"createdAt" store:"created"`
}

// Label is keyed by a column of the database's uuid type where it has one (Postgres),
// which refuses to compare with a string that is not a UUID in a form it knows.
type Label struct {
	bun.BaseModel `bun:"table:store_test_labels"`

	ID   string `bun:"id,pk,type:uuid" json:"id" store:"id"`
	Name string `bun:"name,notnull" json:"name"`
}

var (
	notesUnit = engine.NewUnit("notes")
	Notes     = store.Define[Note](notesUnit, "/notes")
	Labels    = store.Define[Label](engine.NewUnit("labels"), "/labels")
)

type backend struct {
	name string
	open func(tb testing.TB) *bun.DB
}

var backends = []backend{
	{"sqlite", func(tb testing.TB) *bun.DB {
		return testenv.MemorySQLite(tb, "store-test")
	}},
	{"postgres", func(tb testing.TB) *bun.DB {
		// A schema of its own per test keeps parallel tests apart.
		dsn := testenv.Schema(tb, testenv.PostgresDSN(tb, "the Postgres run"), "store_test_")
		return testenv.PostgresDB(tb, dsn)
	}},
}

type harness struct {
	db   *bun.DB
	app  *engine.App
	srv  *httptest.Server
	auth *gate.Auth
}

const key = "0123456789abcdef0123456789abcdef-store-test"

func setup(t testing.TB, be backend) *harness {
	t.Helper()
	h := &harness{db: be.open(t)}
	var err error
	h.auth, err = gate.NewAuth(gate.AuthConfig{DB: h.db, Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret(key)}}, Hash: gate.FastHashParams})
	if err != nil {
		t.Fatal(err)
	}
	h.app, err = engine.New(
		engine.WithAuthenticator(h.auth),
		store.Bind(Notes, h.db, store.TenantScoped(), store.CreateTable(),
			store.ReadGates(gate.Scopes("notes:read")), store.WriteGates(gate.Scopes("notes:write"))),
		store.Bind(Labels, h.db, store.CreateTable(),
			store.ReadGates(gate.Scopes("notes:read")), store.WriteGates(gate.Scopes("notes:write"))),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.app.Handler())
	t.Cleanup(h.srv.Close)
	return h
}

// as returns a REST client acting as a principal of tenant with scopes.
func (h *harness) as(t *testing.T, id, tenant string, scopes ...string) *clientx.Client {
	t.Helper()
	tok, err := h.auth.AccessToken(engine.Principal{ID: id, Email: id + "@example.com", Tenant: tenant, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientx.ForApp(h.app, h.srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *harness) token(t testing.TB, tenant string) string {
	tok, err := h.auth.AccessToken(engine.Principal{ID: "raw", Tenant: tenant, Scopes: []string{"notes:read", "notes:write"}})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (h *harness) count(t *testing.T) int64 {
	t.Helper()
	n, err := h.db.NewSelect().Model((*Note)(nil)).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// get issues a raw GET and returns the status and the decoded envelope.
func (h *harness) rawGet(t *testing.T, path, token string) (int, map[string]any) {
	t.Helper()
	status, body := h.exchange(t, http.MethodGet, path, token, "")
	var env map[string]any
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatalf("GET %s: not an envelope: %s", path, body)
	}
	return status, env
}

// envError is the error of an envelope rawGet decoded, as the client reports it.
func envError(t *testing.T, env map[string]any) *engine.Error {
	t.Helper()
	e, _ := env["error"].(map[string]any)
	if e == nil {
		return nil
	}
	code, _ := e["code"].(string)
	data, err := json.Marshal(e["data"])
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Error{Code: code, Data: json.RawMessage(data)}
}

// issuePaths lists the paths of a ValidationError's issues, comma-separated.
func issuePaths(t *testing.T, e *engine.Error) string {
	t.Helper()
	if errCode(e) != engine.CodeValidation {
		t.Fatalf("error = %+v, want a ValidationError", e)
	}
	var data engine.ValidationData
	if err := e.DecodeData(&data); err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(data.Issues))
	for i, is := range data.Issues {
		paths[i] = is.Path
	}
	return strings.Join(paths, ",")
}

func errCode(e *engine.Error) string {
	if e == nil {
		return ""
	}
	return e.Code
}

func forEach(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, be))
		})
	}
}

func TestCRUD(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		c := h.as(t, "alice", "t1", "notes:read", "notes:write")
		created := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": "groceries", "body": "eggs"})
		if created.Error != nil {
			t.Fatal(created.Error)
		}
		n := created.Data
		if _, err := uuid.Parse(n.ID); err != nil || n.Title != "groceries" || n.CreatedAt.IsZero() {
			t.Fatalf("created = %+v", n)
		}
		got := clientx.Call(ctx, c, Notes.Get, store.ID{ID: n.ID})
		if got.Error != nil || got.Data.Body != "eggs" || !got.Data.CreatedAt.Equal(n.CreatedAt) {
			t.Fatalf("get = %+v", got)
		}
		up := clientx.Call(ctx, c, Notes.Update, store.Fields{"id": n.ID, "body": "eggs, milk"})
		if up.Error != nil || up.Data.Title != "groceries" || up.Data.Body != "eggs, milk" {
			t.Fatalf("partial update = %+v", up)
		}
		if same := clientx.Call(ctx, c, Notes.Update, store.Fields{"id": n.ID}); same.Error != nil || same.Data != up.Data {
			t.Fatalf("update of no field = %+v, want the record unchanged", same)
		}
		// Fields on both sides of "id" in key order are all applied.
		two := clientx.Call(ctx, c, Notes.Update, store.Fields{"body": "bread", "id": n.ID, "pinned": true, "title": "shopping"})
		if two.Error != nil || two.Data.Body != "bread" || !two.Data.Pinned || two.Data.Title != "shopping" || two.Data.ID != n.ID {
			t.Fatalf("update of three fields = %+v", two)
		}
		bad := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": "x", "body": "y", "zeta": 1, "alpha": 2, "views": 3})
		if got := issuePaths(t, bad.Error); got != "alpha,views,zeta" {
			t.Errorf("create with three bad fields: issues at %s, want them all, sorted", got)
		}
		for name, fields := range map[string]store.Fields{
			"readonly field": {"id": n.ID, "views": 5},
			"unknown field":  {"id": n.ID, "owner": "mallory"},
			"wrong type":     {"id": n.ID, "title": 42},
		} {
			if r := clientx.Call(ctx, c, Notes.Update, fields); errCode(r.Error) != engine.CodeValidation {
				t.Errorf("update with %s: %+v", name, r.Error)
			}
		}
		if r := clientx.Call(ctx, c, Notes.Create, store.Fields{"body": "no title"}); errCode(r.Error) != engine.CodeValidation {
			t.Errorf("create without title: %+v", r.Error)
		}
		list := clientx.Call(ctx, c, Notes.List, store.Query{})
		if list.Error != nil || len(list.Data) != 1 || list.Meta.NextCursor != "" {
			t.Fatalf("list = %+v", list)
		}
		rm := clientx.Call(ctx, c, Notes.Remove, store.ID{ID: n.ID})
		if rm.Error != nil || rm.Status != http.StatusNoContent {
			t.Fatalf("remove = %+v", rm)
		}
		if r := clientx.Call(ctx, c, Notes.Get, store.ID{ID: n.ID}); errCode(r.Error) != engine.CodeNotFound {
			t.Fatalf("get after remove = %+v", r)
		}
		if r := clientx.Call(ctx, c, Notes.Remove, store.ID{ID: n.ID}); errCode(r.Error) != engine.CodeNotFound {
			t.Fatalf("second remove = %+v", r)
		}
		reader := h.as(t, "bob", "t1", "notes:read")
		if r := clientx.Call(ctx, reader, Notes.Create, store.Fields{"title": "x", "body": "y"}); errCode(r.Error) != engine.CodeForbidden {
			t.Fatalf("create without notes:write = %+v", r.Error)
		}
	})
}

func TestTenantIsolation(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		alice := h.as(t, "alice", "t1", "notes:read", "notes:write")
		carol := h.as(t, "carol", "t2", "notes:read", "notes:write")
		mine := clientx.Call(ctx, alice, Notes.Create, store.Fields{"title": "secret", "body": "t1 only"})
		if mine.Error != nil {
			t.Fatal(mine.Error)
		}
		id := mine.Data.ID
		if r := clientx.Call(ctx, carol, Notes.Create, store.Fields{"title": "carol's", "body": "t2"}); r.Error != nil {
			t.Fatal(r.Error)
		}
		for name, e := range map[string]*engine.Error{
			"get":    clientx.Call(ctx, carol, Notes.Get, store.ID{ID: id}).Error,
			"update": clientx.Call(ctx, carol, Notes.Update, store.Fields{"id": id, "title": "pwned"}).Error,
			"remove": clientx.Call(ctx, carol, Notes.Remove, store.ID{ID: id}).Error,
		} {
			if errCode(e) != engine.CodeNotFound {
				t.Errorf("carol %s of alice's note: %+v, want NotFound", name, e)
			}
		}
		list := clientx.Call(ctx, carol, Notes.List, store.Query{"title": "secret"})
		if list.Error != nil || len(list.Data) != 0 {
			t.Fatalf("carol lists alice's notes: %+v", list)
		}
		all := clientx.Call(ctx, carol, Notes.List, store.Query{})
		if len(all.Data) != 1 || all.Data[0].Title != "carol's" {
			t.Fatalf("carol's list = %+v", all.Data)
		}
		still := clientx.Call(ctx, alice, Notes.Get, store.ID{ID: id})
		if still.Error != nil || still.Data.Title != "secret" {
			t.Fatalf("alice's note changed: %+v", still)
		}
	})
}

func TestPagination(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		const total = 1000
		want := map[string]bool{}
		rows := make([]Note, 0, total)
		for i := range total {
			id, _ := uuid.NewV7()
			tenant := "t1"
			if i%10 == 0 {
				tenant = "t2" // interleaved rows of another tenant must never show
			} else {
				want[id.String()] = true
			}
			rows = append(rows, Note{ID: id.String(), Tenant: tenant, Title: fmt.Sprintf("n%d", i%3), Body: "b", CreatedAt: time.Now().UTC()})
		}
		if _, err := h.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		c := h.as(t, "alice", "t1", "notes:read")
		for _, limit := range []int{100, 37} {
			seen := map[string]bool{}
			cursor, pages := "", 0
			for {
				q := store.Query{"limit": limit}
				if cursor != "" {
					q["cursor"] = cursor
				}
				r := clientx.Call(ctx, c, Notes.List, q)
				if r.Error != nil {
					t.Fatal(r.Error)
				}
				pages++
				for _, n := range r.Data {
					if seen[n.ID] {
						t.Fatalf("limit %d: duplicate %s", limit, n.ID)
					}
					seen[n.ID] = true
				}
				if r.Meta.NextCursor == "" {
					break
				}
				if len(r.Data) != limit {
					t.Fatalf("limit %d: short page %d with a next cursor", limit, len(r.Data))
				}
				cursor = r.Meta.NextCursor
			}
			if len(seen) != len(want) {
				t.Fatalf("limit %d: saw %d rows, want %d", limit, len(seen), len(want))
			}
			for id := range want {
				if !seen[id] {
					t.Fatalf("limit %d: gap at %s", limit, id)
				}
			}
			// 900 rows make nine full pages of 100: the last one has no next cursor.
			if wantPages := (len(want) + limit - 1) / limit; pages != wantPages {
				t.Fatalf("limit %d: %d pages, want %d", limit, pages, wantPages)
			}
		}
		// Default limit, and a filter kept across pages.
		r := clientx.Call(ctx, c, Notes.List, store.Query{})
		if len(r.Data) != store.DefaultLimit || r.Meta.NextCursor == "" {
			t.Fatalf("default page: %d rows, cursor %q", len(r.Data), r.Meta.NextCursor)
		}
		var titles []string
		cursor := ""
		for {
			q := store.Query{"title": "n1", "limit": 100}
			if cursor != "" {
				q["cursor"] = cursor
			}
			r := clientx.Call(ctx, c, Notes.List, q)
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			for _, n := range r.Data {
				titles = append(titles, n.Title)
			}
			if cursor = r.Meta.NextCursor; cursor == "" {
				break
			}
		}
		sort.Strings(titles)
		if len(titles) != 300 || titles[0] != "n1" || titles[len(titles)-1] != "n1" {
			t.Fatalf("filtered pages: %d rows", len(titles))
		}
		// A cursor made for one query is refused on another.
		first := clientx.Call(ctx, c, Notes.List, store.Query{"limit": 5})
		other := clientx.Call(ctx, c, Notes.List, store.Query{"limit": 5, "title": "n2", "cursor": first.Meta.NextCursor})
		if errCode(other.Error) != engine.CodeValidation {
			t.Fatalf("cursor of another query: %+v", other.Error)
		}
	})
}

func TestDefineAndBindErrors(t *testing.T) {
	t.Parallel()
	type noID struct {
		Title string `json:"title"`
	}
	type intID struct {
		ID int64 `bun:"id,pk" json:"id"`
	}
	type badTag struct {
		ID string `bun:"id,pk" json:"id" store:"bogus"`
	}
	type noTenant struct {
		ID string `bun:"id,pk" json:"id"`
	}
	type twoTenants struct {
		ID string `bun:"id,pk" json:"id"`
		A  string `json:"a" store:"tenant"`
		B  string `json:"b" store:"tenant"`
	}
	type intTenant struct {
		ID     string `bun:"id,pk" json:"id"`
		Tenant int    `json:"-" store:"tenant"`
	}
	type notAColumn struct {
		ID    string `bun:"id,pk" json:"id"`
		Extra string `bun:"-" json:"extra"`
	}
	type limitFilter struct {
		ID    string `bun:"id,pk" json:"id"`
		Limit int    `json:"limit" store:"filter"`
	}
	db := backends[0].open(t)
	cases := []struct {
		name string
		opt  engine.Option
		want string // in New's error
	}{
		{"no id", store.Bind(store.Define[noID](engine.NewUnit("a"), "/a"), db), "has no id field"},
		{"int id", store.Bind(store.Define[intID](engine.NewUnit("b"), "/b"), db), "id field ID must be a string"},
		{"bad tag", store.Bind(store.Define[badTag](engine.NewUnit("c"), "/c"), db), `unknown store option "bogus"`},
		{"no tenant", store.Bind(store.Define[noTenant](engine.NewUnit("d"), "/d"), db, store.TenantScoped()), `no field tagged store:"tenant"`},
		{"nil db", store.Bind(store.Define[noTenant](engine.NewUnit("e"), "/e"), nil), "nil db"},
		{"two tenants", store.Bind(store.Define[twoTenants](engine.NewUnit("f"), "/f"), db), "one string tenant field at most"},
		{"int tenant", store.Bind(store.Define[intTenant](engine.NewUnit("g"), "/g"), db), "one string tenant field at most"},
		{"nil resource", store.Bind[noTenant](nil, db), "nil resource"},
		{"field without a column", store.Bind(store.Define[notAColumn](engine.NewUnit("h"), "/h"), db), "field Extra of store_test.notAColumn is not a bun column"},
		{"limit as a filter", store.Bind(store.Define[limitFilter](engine.NewUnit("i"), "/i"), db), `"limit" is a list parameter and cannot be a filter`},
	}
	for _, tc := range cases {
		// An authenticator, so the app has nothing else to refuse.
		_, err := engine.New(engine.WithAuthenticator(nobody{}), tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// nobody authenticates no one.
type nobody struct{}

func (nobody) Authenticate(*http.Request) (*engine.Principal, error) { return nil, nil }

// TestBindOptions checks the options a test or a deployment sets: the created clock, a
// nil clock meaning the real one, and tables left alone without CreateTable.
func TestBindOptions(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		fixed := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)
		for _, tc := range []struct {
			name  string
			clock func() time.Time
			check func(time.Time) bool
		}{
			{"fixed clock", func() time.Time { return fixed }, func(c time.Time) bool { return c.Equal(fixed) }},
			{"nil clock is the real one", nil, func(c time.Time) bool { return !c.IsZero() }},
		} {
			u := engine.NewUnit("clocked")
			res := store.Define[Note](u, "/clocked")
			app, err := engine.New(engine.WithAuthenticator(h.auth), store.Bind(res, h.db, store.TenantScoped(), store.WithNow(tc.clock)))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(app.Handler())
			tok := h.token(t, "t1")
			c, err := clientx.ForApp(app, srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
			if err != nil {
				t.Fatal(err)
			}
			r := clientx.Call(ctx, c, res.Create, store.Fields{"title": "x", "body": "y"})
			srv.Close()
			if r.Error != nil || !tc.check(r.Data.CreatedAt) {
				t.Errorf("%s: created = %+v", tc.name, r)
			}
		}

		type Unmade struct {
			bun.BaseModel `bun:"table:store_test_unmade"`
			ID            string `bun:"id,pk" json:"id"`
		}
		app, err := engine.New(engine.WithAuthenticator(h.auth),
			store.Bind(store.Define[Unmade](engine.NewUnit("unmade"), "/unmade"), h.db))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := h.db.NewSelect().Model((*Unmade)(nil)).Count(ctx); err == nil {
			t.Fatal("Bind without CreateTable created the table")
		}
	})
}
