package engine_test

import (
	"testing"

	"github.com/bbc28f59/engine"
)

type decoded struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
	Tags  []struct {
		Name string `json:"name"`
	} `json:"tags"`
}

// TestDecoderChecksAsAFlowInput checks that a Decoder reports every issue of a value,
// each on its path, as a flow's input is checked, and decodes a good value.
func TestDecoderChecksAsAFlowInput(t *testing.T) {
	t.Parallel()
	d, err := engine.NewDecoder[decoded]()
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Schema(); s.Type != "object" || len(s.Required) != 3 {
		t.Errorf("schema %+v, want the inferred object schema with its three fields required", s)
	}
	v, err := d.Decode([]byte(`{"city":"Oslo","tempC":-3.5,"tags":[{"name":"cold"}]}`))
	if err != nil || v.City != "Oslo" || v.TempC != -3.5 || len(v.Tags) != 1 {
		t.Fatalf("Decode: %+v, %v", v, err)
	}
	_, err = d.Decode([]byte(`{"city":7,"tags":[{"name":1}]}`))
	e := engine.AsError(err)
	if e == nil || e.Code != engine.CodeValidation {
		t.Fatalf("Decode of a bad value: %v, want a ValidationError", err)
	}
	data := e.Data.(engine.ValidationData)
	var paths []string
	for _, is := range data.Issues {
		paths = append(paths, is.Path)
	}
	want := []string{"city", "tags[0].name", "tempC"}
	if len(paths) != len(want) {
		t.Fatalf("issues %+v, want one at each of %v", data.Issues, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Errorf("issue %d at %q, want %q (%+v)", i, paths[i], want[i], data.Issues)
		}
	}
}
