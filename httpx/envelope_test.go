package httpx_test

import (
	"encoding/json"
	"testing"

	"github.com/bbc28f59/engine/httpx"
)

func TestAppendEnvelope(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		data    string
		code    string
		errData string
		meta    string
		want    string
	}{
		{name: "success", data: `{"a":1}`,
			want: `{"data":{"a":1},"error":null}`},
		{name: "success without data", want: `{"data":null,"error":null}`},
		{name: "success with meta", data: `[1]`, meta: `{"nextCursor":"c"}`,
			want: `{"data":[1],"error":null,"meta":{"nextCursor":"c"}}`},
		{name: "failure", code: "NotFound", errData: `{"message":"gone"}`,
			want: `{"data":null,"error":{"code":"NotFound","data":{"message":"gone"}}}`},
		{name: "failure without data", code: "Unauthorized",
			want: `{"data":null,"error":{"code":"Unauthorized","data":{}}}`},
		{name: "failure drops data and meta", data: `{"a":1}`, code: "Conflict", meta: `{"m":1}`,
			want: `{"data":null,"error":{"code":"Conflict","data":{}}}`},
		{name: "code is escaped", code: `a"b<`,
			want: `{"data":null,"error":{"code":"a\"b\u003c","data":{}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := httpx.AppendEnvelope([]byte("prefix:"), raw(tc.data), tc.code, raw(tc.errData), raw(tc.meta))
			if want := "prefix:" + tc.want + "\n"; string(got) != want {
				t.Fatalf("wrote %s, want %s", got, want)
			}
			var env httpx.Envelope
			if err := json.Unmarshal(got[len("prefix:"):], &env); err != nil {
				t.Fatalf("not an envelope: %v", err)
			}
			if (env.Error != nil) != (tc.code != "") {
				t.Fatalf("error = %+v for code %q", env.Error, tc.code)
			}
		})
	}
}

// raw is nil for "", as a caller passes no part at all.
func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}
