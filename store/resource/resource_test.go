package resource_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/store/resource"
)

// Note is a record shared with clients: bun tags, no bun import (bun names its table
// notes).
type Note struct {
	ID        string    `bun:"id,pk" json:"id" store:"id"`
	Tenant    string    `bun:"tenant,notnull" json:"-" store:"tenant"`
	Title     string    `bun:"title,notnull" json:"title" store:"filter"`
	Body      string    `bun:"body,notnull" json:"body"`
	Pinned    bool      `bun:"pinned,notnull" json:"pinned,omitempty" store:"filter"`
	Views     int       `bun:"views,notnull" json:"views,omitempty" store:"readonly"`
	CreatedAt time.Time `bun:"created_at,notnull" json:"createdAt" store:"created"`
}

// Example declares the notes resource in a contract package: five flows with their
// triggers and schemas, which a server binds with store.Bind and a client calls with
// clientx.
func Example() {
	notes := resource.Define[Note](engine.NewUnit("notes"), "/notes")
	for _, f := range []interface{ Def() *engine.FlowDef }{notes.List, notes.Get, notes.Create, notes.Update, notes.Remove} {
		d := f.Def()
		route, _ := d.Trigger()
		fmt.Println(d.ID(), route.Method, route.Path)
	}
	// Output:
	// notes.list GET /notes
	// notes.get GET /notes/:id
	// notes.create POST /notes
	// notes.update PATCH /notes/:id
	// notes.remove DELETE /notes/:id
}

// keys lists a flow's input properties and required fields.
func keys(f interface{ Def() *engine.FlowDef }) (props, required string) {
	s := f.Def().InputSchema()
	var names []string
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ","), strings.Join(s.Required, ",")
}

// The input schemas published for the five flows offer what each flow takes: the
// writable fields (the created, readonly, tenant and id fields are the server's), the
// filters, and the id; the list's limit within its bounds.
func TestInputSchemas(t *testing.T) {
	t.Parallel()
	notes := resource.Define[Note](engine.NewUnit("notes"), "/notes/")
	for _, tc := range []struct {
		flow            interface{ Def() *engine.FlowDef }
		props, required string
	}{
		{notes.List, "cursor,limit,pinned,title", ""},
		{notes.Get, "id", "id"},
		{notes.Create, "body,pinned,title", "title,body"},
		{notes.Update, "body,id,pinned,title", "id"},
		{notes.Remove, "id", "id"},
	} {
		props, required := keys(tc.flow)
		if props != tc.props || required != tc.required {
			t.Errorf("%s: properties %s, required %s; want %s and %s", tc.flow.Def().ID(), props, required, tc.props, tc.required)
		}
	}
	if notes.Base != "/notes" || notes.Unit == nil {
		t.Fatalf("base %q (the trailing slash trimmed), unit %v", notes.Base, notes.Unit)
	}
	limit := notes.List.Def().InputSchema().Properties["limit"]
	if limit.Type != "integer" || *limit.Minimum != 1 || *limit.Maximum != resource.MaxLimit {
		t.Fatalf("limit schema %+v", limit)
	}
	if id := notes.Get.Def().InputSchema().Properties["id"]; id.Type != "string" || id.MinLength == nil || *id.MinLength != 1 {
		t.Fatalf("id schema %+v", id)
	}
	if title := notes.Create.Def().InputSchema().Properties["title"]; title.Type != "string" {
		t.Fatalf("title schema %+v: not the record's", title)
	}
	if route, ok := notes.Remove.Def().Trigger(); !ok || route.Method != http.MethodDelete || route.Path != "/notes/:id" ||
		!strings.Contains(notes.Remove.Def().Description(), "/notes") {
		t.Fatalf("remove: %v %q", route, notes.Remove.Def().Description())
	}
}

// A record type store cannot use still declares the five flows, with object schemas that
// offer nothing but the id: store.Bind reports the mistake when the app is built.
func TestAnUnusableRecordStillDeclares(t *testing.T) {
	t.Parallel()
	type noID struct {
		Title string `json:"title"`
	}
	r := resource.Define[noID](engine.NewUnit("broken"), "/broken")
	for _, tc := range []struct {
		flow            interface{ Def() *engine.FlowDef }
		props, required string
	}{
		{r.List, "cursor,limit", ""},
		{r.Create, "", ""},
		{r.Update, "id", "id"},
		{r.Get, "id", "id"},
	} {
		if props, required := keys(tc.flow); props != tc.props || required != tc.required {
			t.Errorf("%s: properties %q, required %q; want %q and %q", tc.flow.Def().ID(), props, required, tc.props, tc.required)
		}
	}
}
