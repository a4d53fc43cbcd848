package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
)

type statsPoint struct {
	V float64 `json:"v"`
}

type statsBase struct {
	Spread float64 `json:"spread"`
}

type statsOut struct {
	statsBase
	Mean     float64            `json:"mean"`
	Points   []statsPoint       `json:"points"`
	ByName   map[string]float64 `json:"byName,omitempty"`
	Hidden   float64            `json:"-"`
	Ratio    *float32           `json:"ratio,omitempty"`
	Untagged float64
}

// opaque writes itself with a number its fields do not show.
type opaque struct{ x float64 }

func (o opaque) MarshalJSON() ([]byte, error) { return json.Marshal(o.x) }

type statsIn struct {
	Case string `json:"case"`
}

// TestNonFiniteOutput checks that an output holding NaN or ±Inf is answered, over real
// HTTP, with an InternalError envelope naming the field, and is logged with the flow.
func TestNonFiniteOutput(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	f32 := float32(math.Inf(-1))
	outputs := map[string]statsOut{
		"fine":     {Mean: 1, Points: []statsPoint{{V: 2}}, Hidden: nan},
		"mean":     {Mean: nan},
		"point":    {Points: []statsPoint{{V: 1}, {V: inf}}},
		"map":      {ByName: map[string]float64{"b": 1, "c": -inf, "a": 2}},
		"embedded": {statsBase: statsBase{Spread: nan}},
		"pointer":  {Ratio: &f32},
		"untagged": {Untagged: inf},
	}
	u := engine.NewUnit("stats")
	flow := engine.Define[statsIn, statsOut](u, "summary", engine.Public())
	scalar := engine.Define[statsIn, float64](u, "scalar", engine.Public())
	hidden := engine.Define[statsIn, opaque](u, "hidden", engine.Public())
	logs := &syncBuffer{}
	app, err := engine.New(engine.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
		engine.Bind(flow, func(_ *engine.Fx, in statsIn) (statsOut, error) { return outputs[in.Case], nil }),
		engine.Bind(scalar, func(_ *engine.Fx, _ statsIn) (float64, error) { return nan, nil }),
		engine.Bind(hidden, func(_ *engine.Fx, _ statsIn) (opaque, error) { return opaque{x: -inf}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)

	cases := []struct {
		flow, input, path, message string
	}{
		{"summary", "mean", "mean", "output field mean is NaN, which JSON cannot carry"},
		{"summary", "point", "points[1].v", "output field points[1].v is +Inf, which JSON cannot carry"},
		{"summary", "map", "byName.c", "output field byName.c is -Inf, which JSON cannot carry"},
		{"summary", "embedded", "spread", "output field spread is NaN, which JSON cannot carry"},
		{"summary", "pointer", "ratio", "output field ratio is -Inf, which JSON cannot carry"},
		{"summary", "untagged", "Untagged", "output field Untagged is +Inf, which JSON cannot carry"},
		{"scalar", "any", "", "the output is NaN, which JSON cannot carry"},
		{"hidden", "any", "", "the output holds -Inf, which JSON cannot carry"},
	}
	for _, c := range cases {
		res, err := srv.Client().Post(srv.URL+"/_engine/stats/"+c.flow, "application/json", strings.NewReader(`{"case":"`+c.input+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Data  json.RawMessage
			Error struct {
				Code string
				Data struct{ Message, Path string }
			}
		}
		err = json.NewDecoder(res.Body).Decode(&env)
		res.Body.Close()
		if err != nil {
			t.Fatalf("%s: reply is not an envelope: %v", c.input, err)
		}
		if res.StatusCode != http.StatusInternalServerError || env.Error.Code != engine.CodeInternal || string(env.Data) != "null" {
			t.Errorf("%s: HTTP %d code %q data %s, want 500 InternalError", c.input, res.StatusCode, env.Error.Code, env.Data)
		}
		if env.Error.Data.Path != c.path || env.Error.Data.Message != c.message {
			t.Errorf("%s: error data %+v, want path %q message %q", c.input, env.Error.Data, c.path, c.message)
		}
		if !strings.Contains(logs.String(), `"flow":"stats.`+c.flow+`","path":"`+c.path+`"`) {
			t.Errorf("%s: no log line with the flow and path in:\n%s", c.input, logs.String())
		}
	}

	// A NaN in a field JSON leaves out is no problem.
	res, err := srv.Client().Post(srv.URL+"/_engine/stats/summary", "application/json", strings.NewReader(`{"case":"fine"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("fine output: HTTP %d", res.StatusCode)
	}

	// An in-process call (an agent's tool) gets the same error.
	_, err = app.Invoke(context.Background(), "stats.summary", nil, json.RawMessage(`{"case":"point"}`))
	var data struct{ Path string }
	if e := engine.AsError(err); e == nil || e.Code != engine.CodeInternal || e.DecodeData(&data) != nil || data.Path != "points[1].v" {
		t.Errorf("Invoke: %v (data %+v), want InternalError at points[1].v", err, data)
	}
}

// cyclic is an output encoding/json refuses as a cycle, not as a number.
type cyclic struct {
	Next *cyclic `json:"next"`
}

// deepNaN returns NaN behind n pointers.
func deepNaN(n int) any {
	v := reflect.ValueOf(math.NaN())
	for range n {
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		v = p
	}
	return v.Interface()
}

// TestOutputsJSONCannotEncode checks the other outputs encoding/json refuses: a channel
// and a cycle are internal errors without detail, logged as encoding failures; a NaN is
// looked for 200 levels down and no further.
func TestOutputsJSONCannotEncode(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("enc")
	f := engine.Define[statsIn, any](u, "out", engine.Public())
	loop := &cyclic{}
	loop.Next = loop
	outputs := map[string]any{
		"chan":  make(chan int),
		"cycle": loop,
		"d200":  deepNaN(200),
		"d201":  deepNaN(201),
	}
	logs := &syncBuffer{}
	app, err := engine.New(engine.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
		engine.Bind(f, func(_ *engine.Fx, in statsIn) (any, error) { return outputs[in.Case], nil }))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ input, message, log string }{
		{"chan", "internal error", `"msg":"engine: flow failed","flow":"enc.out","err":"encoding output of enc.out: json: unsupported type: chan int"`},
		{"cycle", "internal error", `"msg":"engine: flow failed","flow":"enc.out","err":"encoding output of enc.out: json: unsupported value: encountered a cycle via *engine_test.cyclic"`},
		{"d200", "the output is NaN, which JSON cannot carry", `"flow":"enc.out","path":"","value":"NaN"`},
		{"d201", "the output holds NaN, which JSON cannot carry", `"flow":"enc.out","path":"","value":"NaN"`},
	} {
		_, err := app.Invoke(context.Background(), "enc.out", nil, json.RawMessage(`{"case":"`+c.input+`"}`))
		if e := engine.AsError(err); e == nil || e.Code != engine.CodeInternal || e.Message() != c.message {
			t.Errorf("%s: %v, want InternalError %q", c.input, err, c.message)
		}
		if !strings.Contains(logs.String(), c.log) {
			t.Errorf("%s: no log line with %s in:\n%s", c.input, c.log, logs.String())
		}
	}
	if strings.Contains(logs.String(), "panic") {
		t.Errorf("a panic was logged:\n%s", logs.String())
	}
}

type namedParts struct {
	hidden   statsPoint           // encoding/json skips it
	Inner    statsPoint           // a struct field without a tag keeps its Go name
	In       statsPoint           `json:"in"`
	statsTag `json:"tagged"`      // an embedded struct with a name is not promoted
	ByID     map[int]float64      `json:"byId"`
	ByText   map[textKey]float64  `json:"byText"`
	Nested   map[string][]float64 `json:"nested"`
}

type statsTag struct {
	W float64 `json:"w"`
}

// textKey is a map key encoding/json writes through MarshalText.
type textKey struct{ a, b string }

func (k textKey) MarshalText() ([]byte, error) { return []byte(k.a + "/" + k.b), nil }

// nest puts v n levels deep through wrap.
func nest(v reflect.Value, n int, wrap func(reflect.Value) reflect.Value) any {
	for range n {
		v = wrap(v)
	}
	return v.Interface()
}

// TestNonFinitePathsNameEveryKindOfMember checks the path of a NaN behind struct fields
// with and without tags, a named embedded struct and non-string map keys, and that the
// search stops 200 levels down through slices, maps and struct fields alike.
func TestNonFinitePathsNameEveryKindOfMember(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	nanV := reflect.ValueOf(nan)
	inSlice := func(v reflect.Value) reflect.Value {
		s := reflect.MakeSlice(reflect.SliceOf(v.Type()), 1, 1)
		s.Index(0).Set(v)
		return s
	}
	inMap := func(v reflect.Value) reflect.Value {
		m := reflect.MakeMap(reflect.MapOf(reflect.TypeFor[string](), v.Type()))
		m.SetMapIndex(reflect.ValueOf("k"), v)
		return m
	}
	embedded := func(v reflect.Value) reflect.Value {
		s := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "E", Type: v.Type(), Anonymous: true}})).Elem()
		s.Field(0).Set(v)
		return s
	}
	inField := func(v reflect.Value) reflect.Value {
		s := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "F", Type: v.Type(), Tag: `json:"f"`}})).Elem()
		s.Field(0).Set(v)
		return s
	}
	outputs := map[string]any{
		"untagged":     namedParts{Inner: statsPoint{V: nan}},
		"tagged":       namedParts{In: statsPoint{V: nan}},
		"embedded":     namedParts{statsTag: statsTag{W: nan}},
		"int key":      namedParts{ByID: map[int]float64{7: nan}},
		"text key":     namedParts{ByText: map[textKey]float64{{"x", "y"}: nan}},
		"nested":       namedParts{Nested: map[string][]float64{"b": {1, nan}}},
		"unexported":   namedParts{hidden: statsPoint{V: nan}, In: statsPoint{V: nan}},
		"embedded 199": nest(reflect.ValueOf(statsPoint{V: nan}), 199, embedded),
		"embedded 200": nest(reflect.ValueOf(statsPoint{V: nan}), 200, embedded),
		"slice 200":    nest(nanV, 200, inSlice),
		"slice 201":    nest(nanV, 201, inSlice),
		"map 200":      nest(nanV, 200, inMap),
		"map 201":      nest(nanV, 201, inMap),
		"field 200":    nest(nanV, 200, inField),
		"field 201":    nest(nanV, 201, inField),
	}
	u := engine.NewUnit("paths")
	f := engine.Define[statsIn, any](u, "out", engine.Public())
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.Bind(f, func(_ *engine.Fx, in statsIn) (any, error) { return outputs[in.Case], nil }))
	if err != nil {
		t.Fatal(err)
	}
	deep := func(tok string, n int) string { return strings.TrimPrefix(strings.Repeat(tok, n), ".") }
	for _, c := range []struct{ input, path, message string }{
		{"untagged", "Inner.v", "output field Inner.v is NaN, which JSON cannot carry"},
		{"tagged", "in.v", "output field in.v is NaN, which JSON cannot carry"},
		{"embedded", "tagged.w", "output field tagged.w is NaN, which JSON cannot carry"},
		{"int key", "byId.7", "output field byId.7 is NaN, which JSON cannot carry"},
		{"text key", "byText.x/y", "output field byText.x/y is NaN, which JSON cannot carry"},
		{"nested", "nested.b[1]", "output field nested.b[1] is NaN, which JSON cannot carry"},
		{"unexported", "in.v", "output field in.v is NaN, which JSON cannot carry"},
		{"embedded 199", "v", "output field v is NaN, which JSON cannot carry"},
		{"embedded 200", "", "the output holds NaN, which JSON cannot carry"},
		{"slice 200", deep("[0]", 200), "output field " + deep("[0]", 200) + " is NaN, which JSON cannot carry"},
		{"slice 201", "", "the output holds NaN, which JSON cannot carry"},
		{"map 200", deep(".k", 200), "output field " + deep(".k", 200) + " is NaN, which JSON cannot carry"},
		{"map 201", "", "the output holds NaN, which JSON cannot carry"},
		{"field 200", deep(".f", 200), "output field " + deep(".f", 200) + " is NaN, which JSON cannot carry"},
		{"field 201", "", "the output holds NaN, which JSON cannot carry"},
	} {
		_, err := app.Invoke(context.Background(), "paths.out", nil, json.RawMessage(`{"case":"`+c.input+`"}`))
		var data struct{ Message, Path string }
		if e := engine.AsError(err); e == nil || e.Code != engine.CodeInternal || e.DecodeData(&data) != nil ||
			data.Path != c.path || data.Message != c.message {
			t.Errorf("%s: %v (data %+v), want InternalError at %q: %q", c.input, err, data, c.path, c.message)
		}
	}
}
