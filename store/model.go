package store

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Struct tag options of a record type, under the key "store" (several separated by
// commas):
//
//	id        the primary key: a string, filled with a UUIDv7 on create
//	tenant    the tenant column: set from the caller on create, never writable
//	created   a time.Time set on create
//	readonly  not writable by create or update (server-managed)
//	filter    usable as an equality filter on list
//
// Without an id option, the field bun marks "pk" is the key.
const tagKey = "store"

type field struct {
	goName   string
	jsonName string
	index    []int
	typ      reflect.Type
	id       bool
	tenant   bool
	created  bool
	readonly bool
	filter   bool
}

func (f *field) writable() bool { return !f.id && !f.tenant && !f.created && !f.readonly }

type model struct {
	typ    reflect.Type
	fields []*field
	byJSON map[string]*field
	id     *field
	tenant *field
}

var timeType = reflect.TypeFor[time.Time]()

func inspect(t reflect.Type) (*model, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("record type %v is not a struct", t)
	}
	m := &model{typ: t, byJSON: map[string]*field{}}
	var pk *field // the first field bun marks "pk": the id when no field is tagged id
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Type == reflect.TypeFor[bun.BaseModel]() {
			continue
		}
		if sf.Anonymous {
			return nil, fmt.Errorf("record type %v: embedded field %s is not supported", t, sf.Name)
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && !hasOpt(sf.Tag.Get(tagKey), "tenant") {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f := &field{goName: sf.Name, jsonName: name, index: sf.Index, typ: sf.Type}
		for _, o := range strings.Split(sf.Tag.Get(tagKey), ",") {
			switch strings.TrimSpace(o) {
			case "":
			case "id":
				f.id = true
			case "tenant":
				f.tenant = true
			case "created":
				f.created = true
			case "readonly":
				f.readonly = true
			case "filter":
				f.filter = true
			default:
				return nil, fmt.Errorf("record type %v: field %s: unknown store option %q", t, sf.Name, o)
			}
		}
		if f.id {
			if m.id != nil {
				return nil, fmt.Errorf("record type %v: two id fields", t)
			}
			m.id = f
		}
		if pk == nil && hasOpt(sf.Tag.Get("bun"), "pk") {
			pk = f
		}
		if f.tenant {
			if m.tenant != nil || f.typ.Kind() != reflect.String {
				return nil, fmt.Errorf("record type %v: one string tenant field at most", t)
			}
			m.tenant = f
		}
		if f.created && f.typ != timeType {
			return nil, fmt.Errorf("record type %v: created field %s must be a time.Time", t, sf.Name)
		}
		if f.tenant && f.filter {
			return nil, fmt.Errorf("record type %v: the tenant field cannot be a filter", t)
		}
		m.fields = append(m.fields, f)
		if name != "-" {
			m.byJSON[name] = f
		}
	}
	if m.id == nil {
		m.id = pk // decided after every field is seen: an id tag later on wins
	}
	if m.id == nil {
		return nil, errors.New("record type " + t.String() + ` has no id field (tag it store:"id")`)
	}
	m.id.id = true
	if m.id.typ.Kind() != reflect.String {
		return nil, fmt.Errorf("record type %v: id field %s must be a string", t, m.id.goName)
	}
	for _, reserved := range []string{"limit", "cursor"} {
		if f := m.byJSON[reserved]; f != nil && f.filter {
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
