package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/store"
	"github.com/bbc28f59/engine/vault"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
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

var (
	notesUnit = engine.NewUnit("notes")
	Notes     = store.Define[Note](notesUnit, "/notes")
)

var seq atomic.Int64

type backend struct {
	name string
	open func(t *testing.T) *bun.DB
}

var backends = []backend{
	{"sqlite", func(t *testing.T) *bun.DB {
		name := fmt.Sprintf("file:store-test-%d-%d?mode=memory&cache=shared&_pragma=busy_timeout(5000)&_txlock=immediate", os.Getpid(), seq.Add(1))
		sqldb, err := sql.Open("sqlite", name)
		if err != nil {
			t.Fatal(err)
		}
		sqldb.SetMaxOpenConns(1)
		db := bun.NewDB(sqldb, sqlitedialect.New())
		t.Cleanup(func() { _ = db.Close() })
		return db
	}},
	{"postgres", func(t *testing.T) *bun.DB {
		dsn := os.Getenv("ENGINE_TEST_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("ENGINE_TEST_POSTGRES_DSN is not set; skipping the Postgres run")
		}
		// A schema of its own per test keeps parallel tests apart.
		ctx := context.Background()
		schema := fmt.Sprintf("store_test_%d_%d", time.Now().UnixNano()%1e9, seq.Add(1))
		admin, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		pool, err := pgxpool.New(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		db := bun.NewDB(stdlib.OpenDBFromPool(pool), pgdialect.New())
		t.Cleanup(func() {
			_ = db.Close()
			pool.Close()
			_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			admin.Close()
		})
		return db
	}},
}

type harness struct {
	db   *bun.DB
	app  *engine.App
	srv  *httptest.Server
	auth *gate.Auth
}

const key = "0123456789abcdef0123456789abcdef-store-test"

func setup(t *testing.T, be backend) *harness {
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

func (h *harness) token(t *testing.T, tenant string) string {
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
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("GET %s: not an envelope: %s", path, b)
	}
	return resp.StatusCode, env
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
			if wantPages := (len(want) + limit - 1) / limit; pages != wantPages && pages != wantPages+1 {
				t.Fatalf("limit %d: %d pages", limit, pages)
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

func TestHostileListQueries(t *testing.T) {
	forEach(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		c := h.as(t, "alice", "t1", "notes:read", "notes:write")
		for i := range 3 {
			if r := clientx.Call(ctx, c, Notes.Create, store.Fields{"title": fmt.Sprint("t", i), "body": "b", "pinned": i == 2}); r.Error != nil {
				t.Fatal(r.Error)
			}
		}
		before := h.count(t)
		tok := h.token(t, "t1")
		for _, tc := range []struct {
			name, query string
			status      int
			rows        int
		}{
			{"limit over max", "limit=101", 400, 0},
			{"huge limit", "limit=99999999999999999999", 400, 0},
			{"negative limit", "limit=-1", 400, 0},
			{"zero limit", "limit=0", 400, 0},
			{"float limit", "limit=2.5", 400, 0},
			{"sql in limit", "limit=" + url.QueryEscape("1; DROP TABLE store_test_notes"), 400, 0},
			{"garbage cursor", "cursor=%25%25%25", 400, 0},
			{"sql cursor", "cursor=" + url.QueryEscape("' OR 1=1 --"), 400, 0},
			{"base64 junk cursor", "cursor=" + "djEuMS4y", 400, 0},
			{"quote in filter", "title=" + url.QueryEscape("' OR '1'='1"), 200, 0},
			{"sql in filter", "title=" + url.QueryEscape("t0'; DELETE FROM store_test_notes; --"), 200, 0},
			{"bad boolean", "pinned=" + url.QueryEscape("1 OR 1=1"), 400, 0},
			{"two limits", "limit=1&limit=2", 400, 0},
			{"undeclared field ignored", "body=b&tenant=t2", 200, 3},
			{"plain filter", "title=t1", 200, 1},
			{"boolean filter", "pinned=true", 200, 1},
			{"two filters", "pinned=true&title=t1", 200, 0},
		} {
			status, env := h.rawGet(t, "/notes?"+tc.query, tok)
			if status != tc.status {
				t.Errorf("%s: status %d, want %d: %v", tc.name, status, tc.status, env)
				continue
			}
			if status == 400 {
				e, _ := env["error"].(map[string]any)
				data, _ := e["data"].(map[string]any)
				if e["code"] != engine.CodeValidation || data["message"] == "" {
					t.Errorf("%s: %v", tc.name, env)
				}
			} else if rows, _ := env["data"].([]any); len(rows) != tc.rows {
				t.Errorf("%s: %d rows, want %d", tc.name, len(rows), tc.rows)
			}
			if n := h.count(t); n != before {
				t.Fatalf("%s: row count %d, want %d", tc.name, n, before)
			}
		}
		// Over RPC, undeclared list fields are refused rather than ignored.
		rpc, err := clientx.New(h.srv.URL, clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return tok, nil }}))
		if err != nil {
			t.Fatal(err)
		}
		if r := rpc.Call(ctx, "notes.list", map[string]any{"tenant": "t2"}); errCode(r.Error) != engine.CodeValidation {
			t.Errorf("RPC list with tenant filter: %+v", r.Error)
		}
		if r := rpc.Call(ctx, "notes.list", map[string]any{"limit": 1e300}); errCode(r.Error) != engine.CodeValidation {
			t.Errorf("RPC list with a huge limit: %+v", r.Error)
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
	db := backends[0].open(t)
	u := engine.NewUnit("bad")
	for name, opt := range map[string]engine.Option{
		"no id":     store.Bind(store.Define[noID](engine.NewUnit("a"), "/a"), db),
		"int id":    store.Bind(store.Define[intID](engine.NewUnit("b"), "/b"), db),
		"bad tag":   store.Bind(store.Define[badTag](engine.NewUnit("c"), "/c"), db),
		"no tenant": store.Bind(store.Define[noTenant](u, "/d"), db, store.TenantScoped()),
		"nil db":    store.Bind(store.Define[noTenant](engine.NewUnit("e"), "/e"), nil),
	} {
		if _, err := engine.New(opt); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}
