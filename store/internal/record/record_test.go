package record

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/uptrace/bun"
)

// The id is the field tagged store:"id" wherever it is, and without one the first field
// bun marks "pk".
func TestInspectFindsTheID(t *testing.T) {
	t.Parallel()
	type pkOnly struct {
		Key string `bun:"key,pk"`
	}
	type idAfterPK struct {
		Seq int64  `bun:"seq,pk,autoincrement"`
		Key string `store:"id"`
	}
	type idBeforePK struct {
		Key string `store:"id"`
		Seq int64  `bun:"seq,pk,autoincrement"`
	}
	type twoPKs struct {
		Key   string `bun:"key,pk"`
		Other string `bun:"other,pk"`
	}
	type idAndPK struct {
		Key string `bun:"key,pk" store:"id"`
	}
	type twoIDs struct {
		Key   string `store:"id"`
		Other string `store:"id"`
	}
	type intPK struct {
		Key int64 `bun:"key,pk"`
	}
	type none struct {
		Key string `bun:"key"`
	}
	cases := []struct {
		typ reflect.Type
		id  string // the id field's Go name, or
		err string // the error it gives
	}{
		{reflect.TypeFor[pkOnly](), "Key", ""},
		{reflect.TypeFor[idAfterPK](), "Key", ""},
		{reflect.TypeFor[idBeforePK](), "Key", ""},
		{reflect.TypeFor[twoPKs](), "Key", ""},
		{reflect.TypeFor[idAndPK](), "Key", ""},
		{reflect.TypeFor[twoIDs](), "", "two id fields"},
		{reflect.TypeFor[intPK](), "", "id field Key must be a string"},
		{reflect.TypeFor[none](), "", "has no id field"},
	}
	for _, tc := range cases {
		t.Run(tc.typ.Name(), func(t *testing.T) {
			t.Parallel()
			m, err := Inspect(tc.typ)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.ID.GoName != tc.id || !m.ID.IsID || m.ID.Writable() {
				t.Fatalf("id = %s (id %v, writable %v), want %s", m.ID.GoName, m.ID.IsID, m.ID.Writable(), tc.id)
			}
			for _, f := range m.Fields {
				if f.IsID != (f == m.ID) {
					t.Fatalf("field %s is marked id %v", f.GoName, f.IsID)
				}
			}
		})
	}
}

// Which fields a record exposes: unexported fields, bun.BaseModel and fields without a
// JSON name are left out, wherever they stand, except the tenant, which is kept but
// never addressed by name; a field without a json tag goes by its Go name.
func TestInspectFields(t *testing.T) {
	t.Parallel()
	type record struct {
		bun.BaseModel `bun:"table:records"`

		//lint:ignore U1000 the field is here for inspect to leave out
		hidden string
		Secret string `json:"-"`
		ID     string `json:"id,omitempty" store:"id"`
		Tenant string `json:"-" store:"tenant"`
		Plain  int
		Title  string `json:"title" store:" filter , readonly "`
	}
	m, err := Inspect(reflect.TypeFor[record]())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Fields {
		names = append(names, f.GoName+":"+f.JSONName)
	}
	if got := strings.Join(names, ","); got != "ID:id,Tenant:-,Plain:Plain,Title:title" {
		t.Fatalf("fields %s", got)
	}
	var byJSON []string
	for name := range m.ByJSON {
		byJSON = append(byJSON, name)
	}
	sort.Strings(byJSON)
	if got := strings.Join(byJSON, ","); got != "Plain,id,title" {
		t.Fatalf("fields by JSON name %s", got)
	}
	if m.Tenant == nil || m.Tenant.GoName != "Tenant" || m.ID.GoName != "ID" {
		t.Fatalf("tenant %+v, id %+v", m.Tenant, m.ID)
	}
	if title := m.ByJSON["title"]; !title.Filter || !title.Readonly || title.Writable() {
		t.Fatalf("title %+v: options with spaces not read", title)
	}
	if !m.ByJSON["Plain"].Writable() {
		t.Fatal("a plain field is not writable")
	}
}

func TestInspectRefuses(t *testing.T) {
	t.Parallel()
	type Embedded struct{ X string }
	type embeds struct {
		ID string `store:"id"`
		Embedded
	}
	type intCreated struct {
		ID      string `store:"id"`
		Created int64  `store:"created"`
	}
	type tenantFilter struct {
		ID     string `store:"id"`
		Tenant string `store:"tenant,filter"`
	}
	type cursorFilter struct {
		ID     string `store:"id"`
		Cursor string `json:"cursor" store:"filter"`
	}
	type twoTenants struct {
		ID string `store:"id"`
		A  string `json:"a" store:"tenant"`
		B  string `json:"b" store:"tenant"`
	}
	type intTenant struct {
		ID     string `store:"id"`
		Tenant int    `json:"-" store:"tenant"`
	}
	type badOption struct {
		ID string `store:"id,bogus"`
	}
	for _, tc := range []struct {
		typ reflect.Type
		err string
	}{
		{reflect.TypeFor[string](), "record type string is not a struct"},
		{reflect.TypeFor[embeds](), "embedded field Embedded is not supported"},
		{reflect.TypeFor[intCreated](), "created field Created must be a time.Time"},
		{reflect.TypeFor[tenantFilter](), "the tenant field cannot be a filter"},
		{reflect.TypeFor[cursorFilter](), `"cursor" is a list parameter and cannot be a filter`},
		{reflect.TypeFor[twoTenants](), "one string tenant field at most"},
		{reflect.TypeFor[intTenant](), "one string tenant field at most"},
		{reflect.TypeFor[badOption](), `field ID: unknown store option "bogus"`},
	} {
		if _, err := Inspect(tc.typ); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error = %v, want one saying %q", tc.typ, err, tc.err)
		}
	}
}

// Declare reads a record and its schema, and words a problem as engine.New reports it.
func TestDeclare(t *testing.T) {
	t.Parallel()
	type note struct {
		ID    string `json:"id" store:"id"`
		Title string `json:"title"`
	}
	m, s, err := Declare(reflect.TypeFor[note]())
	if err != nil || m.ID.GoName != "ID" || s == nil || s.Properties["title"] == nil || s.Properties["title"].Type != "string" {
		t.Fatalf("Declare: model %+v, schema %+v, err %v", m, s, err)
	}
	type noID struct {
		Title string `json:"title"`
	}
	if m, s, err := Declare(reflect.TypeFor[noID]()); err == nil || !strings.HasPrefix(err.Error(), "store: record type") || m != nil || s != nil {
		t.Fatalf("Declare of a record without an id: %v %v %v", m, s, err)
	}
	type withChan struct {
		ID string        `json:"id" store:"id"`
		C  chan struct{} `json:"c"`
	}
	if _, _, err := Declare(reflect.TypeFor[withChan]()); err != nil {
		t.Fatalf("a field JSON cannot carry is left out of the schema, not an error: %v", err)
	}
}

// Only bun's BaseModel is left out as the table's carrier, not a type of that name elsewhere.
func TestOnlyBunsBaseModelIsLeftOut(t *testing.T) {
	t.Parallel()
	type BaseModel struct{}
	type record struct {
		BaseModel `json:"base"`
		ID        string `json:"id" store:"id"`
	}
	if _, err := Inspect(reflect.TypeFor[record]()); err == nil || !strings.Contains(err.Error(), "embedded field BaseModel is not supported") {
		t.Fatalf("a BaseModel of another package: %v", err)
	}
}
