package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bbc28f59/engine/internal/flatjson"
	"github.com/bbc28f59/engine/internal/validate"
)

// onceIn has a field of each kind a flow input commonly has.
type onceIn struct {
	Name  string         `json:"name"`
	Count int8           `json:"count"`
	Ratio float64        `json:"ratio"`
	Size  uint           `json:"size,omitempty"`
	Tags  []string       `json:"tags,omitempty"`
	Meta  map[string]int `json:"meta,omitempty"`
	Inner *struct {
		X uint16 `json:"x"`
	} `json:"inner,omitempty"`
	Any   any     `json:"any,omitempty"`
	Flag  bool    `json:"flag"`
	Small float32 `json:"small,omitempty"`
}

// FuzzDecodeOnce holds decodeInput, which decodes an input the validator accepts once,
// straight into the Go type, to decodeChecked, which always decodes twice and validates
// in between: the same value or the same error, for any bytes. The flows are an inferred
// schema alone and the same schema refined with keywords the fast path reads.
func FuzzDecodeOnce(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","count":1,"ratio":1.5,"flag":true}`,
		`{"name":"ab","count":-128,"ratio":0,"flag":false,"size":3,"tags":["x"],"meta":{"k":1},"inner":{"x":65535},"any":[1,{"a":null}]}`,
		`{"name":"a","count":128,"ratio":1,"flag":true}`,
		`{"Name":"a","count":1,"ratio":1,"flag":true}`,
		`{"name":"a","count":1.0,"ratio":1e400,"flag":true}`,
		`{"name":"a","count":1,"ratio":1,"flag":true,"extra":1}`,
		`{"name":"\u00e9","count":1,"ratio":1,"flag":true,"name":"b"}`,
		`{"name":null,"count":1,"ratio":1,"flag":true}`,
		`{"name":"a","count":1,"ratio":1,"flag":true} x`,
		`{"name":"a","count":1,"ratio":1,"flag":true,"inner":{"x":-1}}`,
		`{"name":"a","count":1,"ratio":1,"flag":true,"size":2.0}`,
		`{ "name" : "a" , "count" : -0 , "ratio" : -1.5e-3 , "flag" : false , "small" : 3.4e39 }`,
		`{"name":"a","count":1,"ratio":1,"flag":true,"small":1e-46,"size":18446744073709551615}`,
		`[]`, `null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	plain := onceFlow(f, nil)
	refined := onceFlow(f, func(s *jsonschema.Schema) {
		s.Properties["name"].MinLength = new(2)
		s.Properties["name"].Pattern = "^[a-zé]+$"
		s.Properties["ratio"].ExclusiveMaximum = new(10.0)
		s.Properties["ratio"].MultipleOf = new(0.5)
		s.Properties["tags"].Items.Enum = []any{"x", "y"}
	})
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, fl := range []*onceFlowCase{plain, refined} {
			var once, twice onceIn
			errOnce := decodeInput(raw, &once, fl.def, fl.check, fl.flat)
			errTwice := decodeChecked(inputOrEmpty(raw, fl.def), &twice, fl.check)
			if (errOnce == nil) != (errTwice == nil) || errOnce != nil && !reflect.DeepEqual(AsError(errOnce), AsError(errTwice)) {
				t.Fatalf("%s: decodeInput: %v\ndecodeChecked: %v", raw, errOnce, errTwice)
			}
			if errOnce == nil && !reflect.DeepEqual(once, twice) {
				t.Fatalf("%s: decodeInput: %+v\ndecodeChecked: %+v", raw, once, twice)
			}
		}
	})
}

type onceFlowCase struct {
	def   *FlowDef
	check *validate.Validator
	flat  *flatjson.Decoder
}

func onceFlow(tb testing.TB, refine func(*jsonschema.Schema)) *onceFlowCase {
	tb.Helper()
	s, err := schemaFor(reflect.TypeFor[onceIn]())
	if err != nil {
		tb.Fatal(err)
	}
	if refine != nil {
		refine(s)
	}
	def := &FlowDef{unit: "once", name: "flow", inSchema: s}
	check, err := compileInput(def.ID(), s)
	if err != nil {
		tb.Fatal(err)
	}
	flat := flatjson.New(reflect.TypeFor[onceIn]())
	if flat == nil {
		tb.Fatal("onceIn has no flatjson.Decoder: the fuzzer would not reach the flat decode")
	}
	return &onceFlowCase{def: def, check: check, flat: flat}
}

// TestAppendString holds appendString to json.Marshal, escapes and all.
func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "id", "a b", `say "hi"`, `back\slash`, "<b>&amp;</b>", "tab\there", "\x00\x1f\x7f",
		"héllo", "\u2028\u2029", "bad \xff utf-8", "~",
		// One character alone, so that no other character sends the string to json.Marshal.
		`"`, `\`, "<", ">", "&", "\x01"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendString(%q) = %s, want x%s", s, got, want)
		}
	}
}

// BenchmarkDecodeInput is one decode of a flow's usual input, accepted by the validator:
// decodeInput's (the check, then flatjson.Decoder) against the same check followed by
// encoding/json's Unmarshal.
func BenchmarkDecodeInput(b *testing.B) {
	fl := onceFlow(b, nil)
	raw := []byte(`{"name":"ab","count":12,"ratio":1.5,"flag":true}`)
	b.Run("engine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in onceIn
			if err := decodeInput(raw, &in, fl.def, fl.check, fl.flat); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var in onceIn
			if !fl.check.Accepts(raw) {
				b.Fatal("not accepted")
			}
			if err := json.Unmarshal(raw, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBoundFlowsReadPlainInputsFlat holds the wiring of the flat reader: a flow whose input
// is a struct of plain fields gets one, a map input none, and a call over HTTP reaches the
// handler with the input as sent, whether the reader took it or left it to json.Unmarshal
// (an escaped string) or to the long way (a bad count, answered 400).
func TestBoundFlowsReadPlainInputsFlat(t *testing.T) {
	t.Parallel()
	type plainIn struct {
		Name  string  `json:"name"`
		Count int     `json:"count"`
		Ratio float64 `json:"ratio,omitempty"`
		Flag  bool    `json:"flag,omitempty"`
	}
	u := NewUnit("flat")
	plain := Define[plainIn, plainIn](u, "plain", Public())
	loose := Define[map[string]any, map[string]any](u, "loose", Public())
	app, err := New(
		Bind(plain, func(_ *Fx, in plainIn) (plainIn, error) { return in, nil }),
		Bind(loose, func(_ *Fx, in map[string]any) (map[string]any, error) { return in, nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	if app.bindings["flat.plain"].flat == nil {
		t.Fatal("flat.plain was bound without the flat reader")
	}
	if app.bindings["flat.loose"].flat != nil {
		t.Fatal("flat.loose, a map input, was bound with the flat reader")
	}
	if d, err := NewDecoder[plainIn](); err != nil || d.flat == nil {
		t.Fatalf("NewDecoder[plainIn]: %v, flat reader %v", err, d.flat)
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	for _, c := range []struct{ body, status, want string }{
		{`{"name":"né","count":-12,"ratio":1.5,"flag":true}`, "200 OK", `{"name":"né","count":-12,"ratio":1.5,"flag":true}`},
		{`{"name":"a\u0041","count":1}`, "200 OK", `{"name":"aA","count":1}`},
		{`{"name":"a","count":1.5}`, "400 Bad Request", `"path":"count"`},
	} {
		resp, err := http.Post(srv.URL+RPCPrefix+"flat/plain", "application/json", bytes.NewReader([]byte(c.body)))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.Status != c.status || !bytes.Contains(got, []byte(c.want)) {
			t.Errorf("POST %s: %s %s, want %s holding %s", c.body, resp.Status, got, c.status, c.want)
		}
	}
}
