package store

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// A limit is a whole number from 1 to MaxLimit however it was decoded: float64 from
// JSON, json.Number from a decoder using UseNumber, int from Go.
func TestAsLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   any
		want int // 0: refused
	}{
		{"zero", float64(0), 0},
		{"one", float64(1), 1},
		{"max", float64(MaxLimit), MaxLimit},
		{"over max", float64(MaxLimit + 1), 0},
		{"just over max", MaxLimit + 0.5, 0},
		{"negative", float64(-1), 0},
		{"fraction", 2.5, 0},
		{"just under one", 0.999, 0},
		{"huge", 1e300, 0},
		{"infinity", math.Inf(1), 0},
		{"NaN", math.NaN(), 0},
		{"number", json.Number("7"), 7},
		{"number at max", json.Number("100"), MaxLimit},
		{"number over max", json.Number("101"), 0},
		{"number zero", json.Number("0"), 0},
		{"number with exponent", json.Number("1e2"), MaxLimit},
		{"number fraction", json.Number("1.5"), 0},
		{"not a number", json.Number("x"), 0},
		{"int", 1, 1},
		{"int zero", 0, 0},
		{"int64 at max", int64(MaxLimit), MaxLimit},
		{"int64 over max", int64(MaxLimit + 1), 0},
		{"huge int64", int64(math.MaxInt64), 0},
		{"string", "5", 0},
		{"bool", true, 0},
		{"nil", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := asLimit(tc.in)
			if ok != (tc.want != 0) || got != tc.want {
				t.Fatalf("asLimit(%#v) = %d, %v; want %d", tc.in, got, ok, tc.want)
			}
		})
	}
}

// badText finds a NUL byte or invalid UTF-8 wherever a decoded value or a Go caller's
// value holds it, and passes any other text.
func TestBadText(t *testing.T) {
	t.Parallel()
	type inner struct {
		Name string
		note string
	}
	type hiddenFirst struct {
		note string
		Name string
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"plain é 😀", ""},
		{"a\x00", "must not contain a NUL character"},
		{"a\xff", "must be valid UTF-8"},
		{[]any{"ok", map[string]any{"k": "a\x00"}}, "must not contain a NUL character"},
		{map[string]any{"a\xff": 1}, "must be valid UTF-8"},
		{[]string{"ok", "\xed\xa0\x80"}, "must be valid UTF-8"},
		{[]byte("\x00\xff"), ""},
		{inner{Name: "x\x00"}, "must not contain a NUL character"},
		{inner{note: "x\x00"}, ""},
		{hiddenFirst{note: "ok", Name: "x\x00"}, "must not contain a NUL character"},
		{&inner{Name: "ok"}, ""},
		{(*inner)(nil), ""},
		{42.0, ""},
		{nil, ""},
	} {
		if got := badText(reflect.ValueOf(tc.v)); got != tc.want {
			t.Errorf("badText(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
