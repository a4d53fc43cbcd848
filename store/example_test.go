package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/store"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

// Task is a record: a bun model whose store tags say which field is the id, which holds
// the tenant, which the server sets on create and which lists may filter on.
type Task struct {
	bun.BaseModel `bun:"table:tasks"`

	ID        string    `bun:"id,pk" json:"id" store:"id"`
	Tenant    string    `bun:"tenant,notnull" json:"-" store:"tenant"`
	Title     string    `bun:"title,notnull" json:"title"`
	Done      bool      `bun:"done,notnull" json:"done,omitempty" store:"filter"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"createdAt" store:"created"`
}

// Tasks declares the five flows of unit tasks under /tasks. The declaration carries no
// database, so a client package can import it.
var Tasks = store.Define[Task](engine.NewUnit("tasks"), "/tasks")

// userHeader stands for a real authenticator (gate.Auth) in this example: it takes the
// caller from a header as "user@tenant". Never trust such a header in an app.
type userHeader struct{}

func (userHeader) Authenticate(r *http.Request) (*engine.Principal, error) {
	id, tenant, ok := strings.Cut(r.Header.Get("X-Example-User"), "@")
	if !ok {
		return nil, nil
	}
	return &engine.Principal{ID: id, Tenant: tenant}, nil
}

// Example binds a tenant-scoped resource to SQLite in memory and uses its five flows
// over REST with the typed client: create, a partial update, a filtered list read page by
// page, a get from another tenant, and a remove.
func Example() {
	ctx := context.Background()
	sqldb, err := sql.Open("sqlite", "file:store-example?mode=memory&cache=shared")
	if err != nil {
		fmt.Println(err)
		return
	}
	sqldb.SetMaxOpenConns(1) // one connection keeps the in-memory database alive
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	app, err := engine.New(
		engine.WithAuthenticator(userHeader{}),
		store.Bind(Tasks, db, store.TenantScoped(), store.CreateTable()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := app.Start(ctx); err != nil { // creates the table
		fmt.Println(err)
		return
	}
	defer app.Close(ctx)
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()

	as := func(user string) *clientx.Client {
		c, _ := clientx.New(srv.URL, clientx.WithRoutes(Tasks.Unit.Routes()),
			clientx.WithHeaders(http.Header{"X-Example-User": {user}}))
		return c
	}
	alice, bob := as("alice@acme"), as("bob@globex")

	// POST /tasks: the server fills in the id, the tenant and the creation time.
	var ids []string
	for _, title := range []string{"buy milk", "write docs", "fix bike"} {
		res := clientx.Call(ctx, alice, Tasks.Create, store.Fields{"title": title})
		if res.Failed() {
			fmt.Println(res.Error, res.Status)
		}
		ids = append(ids, res.Data.ID)
	}

	// PATCH /tasks/:id changes only the fields sent.
	upd := clientx.Call(ctx, alice, Tasks.Update, store.Fields{"id": ids[1], "done": true})
	fmt.Println(upd.Data.Title, upd.Data.Done)

	// GET /tasks?done=false&limit=1, then the next page with the cursor and the same filter.
	cursor := ""
	for {
		q := store.Query{"done": false, "limit": 1}
		if cursor != "" {
			q["cursor"] = cursor
		}
		page := clientx.Call(ctx, alice, Tasks.List, q)
		for _, t := range page.Data {
			fmt.Println("open:", t.Title)
		}
		if cursor = page.Meta.NextCursor; cursor == "" {
			break
		}
	}

	// Another tenant's record is missing, not forbidden.
	other := clientx.Call(ctx, bob, Tasks.Get, store.ID{ID: ids[0]})
	fmt.Println(other.Error.Code, other.Status)

	// DELETE /tasks/:id answers 204 with no body.
	rm := clientx.Call(ctx, alice, Tasks.Remove, store.ID{ID: ids[0]})
	fmt.Println(rm.Status, rm.Error == nil)
	// Output:
	// write docs true
	// open: buy milk
	// open: fix bike
	// NotFound 404
	// 204 true
}
