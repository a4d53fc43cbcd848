// Package record reads a store record type: its fields, their store options and their
// JSON names, and the JSON Schema of the record. The declaration side of a store resource
// (store/resource) and the binding side (store) both read a record type through it, so
// the two agree on which fields exist and which are writable. It imports no database
// code: a contract that declares a resource links none.
package record

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// TagKey is the struct tag key of a record field's store options (several separated by
// commas):
//
//	id        the primary key: a string, filled with a UUIDv7 on create
//	tenant    the tenant column: set from the caller on create, never writable
//	created   a time.Time set on create
//	readonly  not writable by create or update (server-managed)
//	filter    usable as an equality filter on list
//
// Without an id option, the field bun marks "pk" is the key.
const TagKey = "store"

// Field is one exported field of a record type.
type Field struct {
	GoName   string       // the Go field name
	JSONName string       // its JSON name ("-" for a tenant field that is never sent)
	Index    []int        // for reflect.Value.FieldByIndex
	Type     reflect.Type // its Go type
	IsID     bool         // the record's id
	IsTenant bool         // the tenant column
	Created  bool         // set on create
	Readonly bool         // never written by create or update
	Filter   bool         // an equality filter of list
}

// Writable reports whether create and update may set the field.
func (f *Field) Writable() bool { return !f.IsID && !f.IsTenant && !f.Created && !f.Readonly }

// Model is a record type read by [Inspect].
type Model struct {
	Type   reflect.Type
	Fields []*Field          // in declaration order
	ByJSON map[string]*Field // by JSON name, the tenant field left out when its name is "-"
	ID     *Field
	Tenant *Field // nil when no field is tagged tenant
}

var timeType = reflect.TypeFor[time.Time]()

// isBaseModel reports whether t is bun's BaseModel, which carries the table name and is no
// field of the record (bun.BaseModel is an alias of schema.BaseModel). It is recognised
// by name so that this package imports no bun.
func isBaseModel(t reflect.Type) bool {
	return t.Name() == "BaseModel" && t.PkgPath() == "github.com/uptrace/bun/schema"
}

// Declare reads record type t for a resource: its model and its JSON Schema. The errors
// start with "store: ", the words engine.New reports them with.
func Declare(t reflect.Type) (*Model, *jsonschema.Schema, error) {
	m, err := Inspect(t)
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{IgnoreInvalidTypes: true})
	if err != nil {
		return nil, nil, fmt.Errorf("store: schema of %v: %w", t, err)
	}
	return m, s, nil
}

// Inspect reads record type t: its fields and their store options.
func Inspect(t reflect.Type) (*Model, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("record type %v is not a struct", t)
	}
	m := &Model{Type: t, ByJSON: map[string]*Field{}}
	var pk *Field // the first field bun marks "pk": the id when no field is tagged id
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() || isBaseModel(sf.Type) {
			continue
		}
		if sf.Anonymous {
			return nil, fmt.Errorf("record type %v: embedded field %s is not supported", t, sf.Name)
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && !hasOpt(sf.Tag.Get(TagKey), "tenant") {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := &Field{GoName: sf.Name, JSONName: name, Index: sf.Index, Type: sf.Type}
		for _, o := range strings.Split(sf.Tag.Get(TagKey), ",") {
			switch strings.TrimSpace(o) {
			case "":
			case "id":
				f.IsID = true
			case "tenant":
				f.IsTenant = true
			case "created":
				f.Created = true
			case "readonly":
				f.Readonly = true
			case "filter":
				f.Filter = true
			default:
				return nil, fmt.Errorf("record type %v: field %s: unknown store option %q", t, sf.Name, o)
			}
		}
		if f.IsID {
			if m.ID != nil {
				return nil, fmt.Errorf("record type %v: two id fields", t)
			}
			m.ID = f
		}
		if pk == nil && hasOpt(sf.Tag.Get("bun"), "pk") {
			pk = f
		}
		if f.IsTenant {
			if m.Tenant != nil || f.Type.Kind() != reflect.String {
				return nil, fmt.Errorf("record type %v: one string tenant field at most", t)
			}
			m.Tenant = f
		}
		if f.Created && f.Type != timeType {
			return nil, fmt.Errorf("record type %v: created field %s must be a time.Time", t, sf.Name)
		}
		if f.IsTenant && f.Filter {
			return nil, fmt.Errorf("record type %v: the tenant field cannot be a filter", t)
		}
		m.Fields = append(m.Fields, f)
		if name != "-" {
			m.ByJSON[name] = f
		}
	}
	if m.ID == nil {
		m.ID = pk // decided after every field is seen: an id tag later on wins
	}
	if m.ID == nil {
		return nil, errors.New("record type " + t.String() + ` has no id field (tag it store:"id")`)
	}
	m.ID.IsID = true
	if m.ID.Type.Kind() != reflect.String {
		return nil, fmt.Errorf("record type %v: id field %s must be a string", t, m.ID.GoName)
	}
	for _, reserved := range []string{"limit", "cursor"} {
		if f := m.ByJSON[reserved]; f != nil && f.Filter {
			return nil, fmt.Errorf("record type %v: %q is a list parameter and cannot be a filter", t, reserved)
		}
	}
	return m, nil
}

func hasOpt(tag, opt string) bool {
	for _, o := range strings.Split(tag, ",") {
		if strings.TrimSpace(o) == opt {
			return true
		}
	}
	return false
}
