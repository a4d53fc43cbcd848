package main

import (
	"context"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/store"
	"github.com/uptrace/bun"
)

// Note is a record of the notes store resource. Tenant is never sent: the store sets it
// from the caller and scopes every query by it.
type Note struct {
	bun.BaseModel `bun:"table:notes"`

	ID        string    `bun:"id,pk" json:"id" store:"id"`
	Tenant    string    `bun:"tenant,notnull" json:"-" store:"tenant"`
	Title     string    `bun:"title,notnull" json:"title" store:"filter"`
	Body      string    `bun:"body,notnull" json:"body"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"createdAt" store:"created"`
}

// The notes unit: a store resource at /notes.
var (
	NotesUnit = engine.NewUnit("notes")
	Notes     = store.Define[Note](NotesUnit, "/notes")
)

func init() {
	register("notes", func(_ context.Context, e *env) (engine.Option, error) {
		return store.Bind(Notes, e.DB, store.TenantScoped(), store.CreateTable(),
			store.ReadGates(gate.Scopes("notes:read")),
			store.WriteGates(gate.Scopes("notes:write"))), nil
	})
}
