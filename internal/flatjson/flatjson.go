// Package flatjson decodes a flow's usual input, a JSON object of a few strings, numbers
// and booleans, into its Go struct exactly as json.Unmarshal does, about five times
// faster and with no allocation beyond the strings it keeps; it declines anything else,
// which the caller then decodes with json.Unmarshal.
package flatjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bbc28f59/engine/internal/jsonx"
)

// Decoder decodes a JSON object whose members are strings, numbers and booleans into one
// struct type, as json.Unmarshal does, without encoding/json's reflection walk and its
// allocations. It reads only what it can read exactly as json.Unmarshal would and
// declines anything else (a member it does not know by its exact name, an escaped or
// nested value, null, a number its field cannot hold, a json.Number), so that the caller
// decodes that input with json.Unmarshal instead. It is meant for input known to be one
// valid JSON value (package engine calls it after its validator accepted the bytes); it
// checks the syntax it reads all the same. A Decoder is safe for concurrent use.
type Decoder struct {
	typ    reflect.Type
	fields []flatField
}

// flatField is one member a Decoder can meet: its JSON name, the field's index, and how
// its value is read (kind 0 when the Decoder declines it, as for a slice or a ",string"
// field).
type flatField struct {
	name  string
	index int
	kind  reflect.Kind
	bits  int
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// New returns the Decoder of struct type t, or nil when t is not a struct or its fields
// take json.Unmarshal's rarer rules (an embedded field, two fields whose names differ only
// in case, a name json.Unmarshal would not take from the tag, a custom unmarshaler on the
// struct itself), which it leaves to json.Unmarshal.
func New(t reflect.Type) *Decoder {
	if t.Kind() != reflect.Struct || unmarshals(t) {
		return nil
	}
	f := &Decoder{typ: t}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		} else if !validName(name) {
			return nil
		}
		for _, g := range f.fields {
			if strings.EqualFold(g.name, name) {
				return nil
			}
		}
		ff := flatField{name: name, index: i}
		// json.Number is a string that json.Unmarshal checks is a number: left to it.
		if !hasOption(opts, "string") && !unmarshals(sf.Type) && sf.Type != numberType {
			switch k := sf.Type.Kind(); k {
			case reflect.String, reflect.Bool,
				reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				ff.kind, ff.bits = k, sizeBits(sf.Type)
			}
		}
		f.fields = append(f.fields, ff)
	}
	return f
}

// unmarshals reports whether t decodes itself (json.Unmarshaler or
// encoding.TextUnmarshaler, with a value or a pointer receiver: *t's methods include
// both), which json.Unmarshal would call.
func unmarshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType)
}

func sizeBits(t reflect.Type) int {
	switch t.Kind() {
	case reflect.String, reflect.Bool:
		return 0
	}
	return t.Bits()
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// validName is encoding/json's test of a tag's name, narrowed to ASCII; New takes a
// struct only when every tagged name passes, so that json.Unmarshal uses each as it is.
func validName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'):
			return false
		}
	}
	return true
}

// Decode decodes raw into the struct ptr points to, which must be a non-nil pointer to the
// type f was made for, and reports whether it did. When it declines raw, *ptr is zero.
func (f *Decoder) Decode(raw []byte, ptr any) bool {
	if f == nil {
		return false
	}
	p := reflect.ValueOf(ptr)
	if p.Kind() != reflect.Pointer || p.Type().Elem() != f.typ || p.IsNil() {
		return false
	}
	v := p.Elem()
	if !f.decode(raw, v) {
		v.SetZero()
		return false
	}
	return true
}

func (f *Decoder) decode(raw []byte, v reflect.Value) bool {
	i := space(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = space(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return space(raw, i+1) == len(raw)
	}
	for {
		key, j, ok := plainString(raw, i)
		if !ok {
			return false
		}
		ff := f.field(key)
		if ff == nil || ff.kind == 0 {
			return false
		}
		i = space(raw, j)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		if i, ok = ff.set(v.Field(ff.index), raw, space(raw, i+1)); !ok {
			return false
		}
		i = space(raw, i)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = space(raw, i+1)
		case '}':
			return space(raw, i+1) == len(raw)
		default:
			return false
		}
	}
}

// field is the field named exactly key.
func (f *Decoder) field(key []byte) *flatField {
	for i := range f.fields {
		if f.fields[i].name == string(key) {
			return &f.fields[i]
		}
	}
	return nil
}

// set reads the value at raw[i:] into fv and returns the index after it.
func (ff *flatField) set(fv reflect.Value, raw []byte, i int) (int, bool) {
	switch ff.kind {
	case reflect.String:
		s, j, ok := plainString(raw, i)
		if !ok {
			return 0, false
		}
		fv.SetString(string(s))
		return j, true
	case reflect.Bool:
		for _, b := range [...]bool{true, false} {
			if j, ok := jsonx.ScanLiteral(raw, i, strconv.FormatBool(b)); ok && endsAt(raw, j) {
				fv.SetBool(b)
				return j, true
			}
		}
		return 0, false
	}
	j, ok := jsonx.ScanNumber(raw, i)
	if !ok || !endsAt(raw, j) {
		return 0, false
	}
	text := raw[i:j]
	switch ff.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(string(text), 10, ff.bits)
		if err != nil {
			return 0, false
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(string(text), 10, ff.bits)
		if err != nil {
			return 0, false
		}
		fv.SetUint(n)
	default: // Float32, Float64
		n, err := strconv.ParseFloat(string(text), ff.bits)
		if err != nil {
			return 0, false
		}
		fv.SetFloat(n)
	}
	return j, true
}

// space returns the index of the first byte at or after i that is not JSON whitespace.
func space(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at raw[i:] when it has no escape and is valid UTF-8,
// so that its bytes are its value, and returns them and the index after it.
func plainString(raw []byte, i int) ([]byte, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			s := raw[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// endsAt reports whether a value read up to raw[j] ends there: at the end, or before
// whitespace or what may follow a member's value.
func endsAt(raw []byte, j int) bool {
	return j == len(raw) || raw[j] == ',' || raw[j] == '}' || raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r'
}
