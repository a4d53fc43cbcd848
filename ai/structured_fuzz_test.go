package ai

import (
	"encoding/json"
	"testing"
)

type fuzzWeather struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
	Tags  []struct {
		Name string `json:"name"`
	} `json:"tags"`
}

// FuzzStructuredReply feeds a model's reply (text from outside the server) to the
// structured-output decoder: it never panics, and a reply it accepts decodes into the
// type again and is accepted again (the value recorded in the journal replays).
func FuzzStructuredReply(f *testing.F) {
	for _, seed := range []string{
		`{"city":"Oslo","tempC":-3.5,"tags":[]}`,
		"```json\n{\"city\":\"Oslo\",\"tempC\":1,\"tags\":[{\"name\":\"x\"}]}\n```",
		`{"city":7}`, `not json`, "```", "", `{"value":[1]}`, `[{"city":"a"}]`,
		`{"city":"a","tempC":1e400,"tags":null}`,
	} {
		f.Add(seed)
	}
	obj, err := structuredFor[fuzzWeather]("weather")
	if err != nil {
		f.Fatal(err)
	}
	list, err := structuredFor[[]string]("list")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		for _, st := range []*structured{obj, list} {
			value, issues := st.decode([]byte(reply))
			if issues != nil {
				if value != nil || len(issues) == 0 {
					t.Fatalf("decode(%q) = %s with issues %q", reply, value, issues)
				}
				continue
			}
			if !json.Valid(value) {
				t.Fatalf("decode(%q) accepted, value %q is not JSON", reply, value)
			}
			again := value
			if st.wrapped {
				again, _ = json.Marshal(map[string]json.RawMessage{"value": value})
			}
			if v2, is2 := st.decode(again); is2 != nil || string(v2) != string(value) {
				t.Fatalf("the accepted value %s does not decode again: %s %q", value, v2, is2)
			}
		}
	})
}
