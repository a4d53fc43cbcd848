package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
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
