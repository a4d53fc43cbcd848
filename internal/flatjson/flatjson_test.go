package flatjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type level int

// upper decodes itself: the Decoder must leave it to json.Unmarshal.
type upper string

func (u *upper) UnmarshalText(b []byte) error { *u = upper(strings.ToUpper(string(b))); return nil }

// flatIn has a field of every kind Flat reads, and fields a Decoder must decline or skip.
type flatIn struct {
	S      string      `json:"s"`
	B      bool        `json:"b,omitempty"`
	I      int         `json:"i"`
	I8     int8        `json:"i8"`
	I64    int64       `json:"i64"`
	U      uint        `json:"u"`
	U16    uint16      `json:"u16"`
	F32    float32     `json:"f32"`
	F64    float64     `json:"f64"`
	Level  level       `json:"level"`
	Quoted int         `json:"quoted,string"`
	Upper  upper       `json:"upper"`
	List   []int       `json:"list"`
	Ptr    *int        `json:"ptr"`
	Num    json.Number `json:"num"`
	Skip   string      `json:"-"`
	Plain  string
}

var flatSeeds = []string{
	`{"s":"a","b":true,"i":-12,"i8":127,"i64":9007199254740993,"u":3,"u16":65535,"f32":1.5,"f64":-2.5e-3,"level":2,"Plain":"p"}`,
	`{}`, ` { } `, `{"s":""}`, `{"s":"é ü"}`, `{"s":"a\"b"}`, `{"s":"a\\u0041"}`, "{\"s\":\"\xff\"}",
	`{"i8":128}`, `{"i8":-129}`, `{"i":1.0}`, `{"i":1e2}`, `{"i":-0}`, `{"i":01}`, `{"i":+1}`,
	`{"u":-1}`, `{"u":-0}`, `{"f32":3.5e38}`, `{"f32":1e-46}`, `{"f64":1e400}`, `{"f64":-0}`,
	`{"b":null}`, `{"b":tru}`, `{"b":truex}`, `{"b":false }`, `{"quoted":"12"}`, `{"upper":"abc"}`,
	`{"list":[1]}`, `{"ptr":1}`, `{"num":"abc"}`, `{"num":"12"}`, `{"num":12}`, `{"S":"fold"}`, `{"plain":"fold"}`, `{"extra":1}`,
	`{"s":"a","s":"b"}`, `{"s":"a",}`, `{"s":"a"} x`, `{"s":"a"}}`, `{"s" "a"}`, `{"s":"a" "i":1}`,
	`[]`, `null`, `""`, ``, `{`, "{\"s\":\"a\tb\"}", "{\n\"i\"\r:\t1\n}",
}

// FuzzDecoder holds a Decoder to json.Unmarshal: whatever it decodes, json.Unmarshal decodes
// to the same value, and whatever it declines it leaves zero.
func FuzzDecoder(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	flat := New(reflect.TypeFor[flatIn]())
	if flat == nil {
		f.Fatal("flatIn has no Decoder")
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want flatIn
		if !flat.Decode(raw, &got) {
			if !reflect.DeepEqual(got, flatIn{}) {
				t.Fatalf("%s: declined, but left %+v", raw, got)
			}
			return
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: Decoder decoded %+v; json.Unmarshal: %v", raw, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Decoder decoded %+v; json.Unmarshal %+v", raw, got, want)
		}
	})
}

// TestDecoderReads pins what a Decoder reads itself and what it leaves to json.Unmarshal, so that
// a Decoder that declined everything could not pass FuzzDecoder unnoticed.
func TestDecoderReads(t *testing.T) {
	t.Parallel()
	flat := New(reflect.TypeFor[flatIn]())
	for _, c := range []struct {
		raw  string
		read bool
	}{
		{flatSeeds[0], true},
		{`{}`, true},
		{` { "s" : "é ü" , "i" : -0 , "f64" : -0 } `, true},
		{"{\n\"i\"\r:\t1\n}", true},
		{`{"s":"a","s":"b"}`, true}, // json.Unmarshal keeps the last; so does the Decoder
		{`{"s":"a\"b"}`, false},     // escaped
		{"{\"s\":\"\xff\"}", false}, // json.Unmarshal would replace the byte
		{`{"i8":128}`, false},
		{`{"i":1.0}`, false},
		{`{"f64":1e400}`, false},
		{`{"b":null}`, false},
		{`{"quoted":"12"}`, false},
		{`{"upper":"abc"}`, false},
		{`{"list":[1]}`, false},
		{`{"num":"abc"}`, false}, // json.Unmarshal refuses a json.Number that is not a number
		{`{"num":12}`, false},
		{`{"S":"fold"}`, false}, // json.Unmarshal matches names without case; the Decoder leaves that to it
		{`{"extra":1}`, false},
		{`{"s":"a"} x`, false},
		{`null`, false},
		// Every delimiter a value may end at; then input cut short or broken at each step.
		{"{\"i\":1,\"u\":2 ,\"u16\":3\t,\"i8\":4\r,\"i64\":5\n,\"b\":true}", true},
		{`{"s"`, false}, {`{"s":`, false}, {`{"s":"a"`, false}, {`{"s":"abc`, false}, {`{"s`, false},
		{`{"i":1`, false}, {`{"b":true`, false}, {`{"s"x"a"}`, false}, {`{"b":}`, false}, {`{"i":}`, false}, {`{"f64":1.}`, false}, {`{"f64":-}`, false},
	} {
		var got, want flatIn
		if read := flat.Decode([]byte(c.raw), &got); read != c.read {
			t.Errorf("%s: read %v, want %v", c.raw, read, c.read)
			continue
		}
		if c.read {
			if err := json.Unmarshal([]byte(c.raw), &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Decoder %+v; json.Unmarshal %+v, %v", c.raw, got, want, err)
			}
		}
	}
}

// TestNewDeclinesTypes lists the types a Decoder leaves wholly to json.Unmarshal.
func TestNewDeclinesTypes(t *testing.T) {
	t.Parallel()
	type embedded struct{ A int }
	for name, typ := range map[string]reflect.Type{
		"not a struct": reflect.TypeFor[map[string]int](),
		"a pointer":    reflect.TypeFor[*flatIn](),
		"embedding":    reflect.TypeFor[struct{ embedded }](),
		"names by case": reflect.TypeFor[struct {
			A int `json:"a"`
			B int `json:"A"`
		}](),
		"an invalid name": reflect.TypeFor[struct {
			//lint:ignore SA5008 the tag's name is invalid on purpose: New must decline it.
			A int `json:"a\\b"`
		}](),
		"a self-decoder": reflect.TypeFor[struct{ json.RawMessage }](),
	} {
		if New(typ) != nil {
			t.Errorf("%s (%v): New made a Decoder", name, typ)
		}
	}
	blank := New(reflect.TypeFor[struct {
		_ int // unexported: not a member json.Unmarshal fills; the fields after it are
		A int
	}]())
	if blank == nil || len(blank.fields) != 1 {
		t.Errorf("a struct with a blank field: %+v, want its one exported field", blank)
	}
	var none *Decoder // New's answer for a type it leaves to json.Unmarshal
	if none.Decode([]byte(`{}`), new(flatIn)) {
		t.Error("a nil Decoder read a value")
	}
	if New(reflect.TypeFor[struct{ A int }]()).Decode([]byte(`{"A":1}`), new(flatIn)) {
		t.Error("Decode read into a value of another type")
	}
}

func BenchmarkDecoder(b *testing.B) {
	raw := []byte(`{"s":"hello","i":12,"f64":1.5,"b":true}`)
	flat := New(reflect.TypeFor[flatIn]())
	b.Run("flatjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v flatIn
			if !flat.Decode(raw, &v) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v flatIn
			if err := json.Unmarshal(raw, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
