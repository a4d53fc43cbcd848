package store

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/google/uuid"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	id := uuid.Must(uuid.NewV7()).String()
	d := queryDigest(map[string]any{"title": "x"})
	got, err := decodeCursor(encodeCursor(id, d), d)
	if err != nil || got != id {
		t.Fatalf("round trip = %q %v", got, err)
	}
	if _, err := decodeCursor(encodeCursor(id, d), queryDigest(nil)); err == nil {
		t.Fatal("a cursor of another query was accepted")
	}
}

// Every cursor decodeCursor refuses is a ValidationError at "cursor", the kind a caller
// can act on; one of another query says so.
func TestDecodeCursorRefuses(t *testing.T) {
	t.Parallel()
	id := "01900000-0000-7000-8000-0000000000ab"
	d := queryDigest(map[string]any{})
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	good := encodeCursor(id, d)
	const malformed = "malformed cursor"
	cases := []struct{ name, cursor, msg string }{
		{"empty", "", malformed},
		{"not base64", strings.Repeat("%", len(good)), malformed},
		{"padded base64", base64.URLEncoding.EncodeToString([]byte("v1." + id + "." + d)), malformed},
		{"one character short", good[:len(good)-1], malformed},
		{"one character long", good + "A", malformed},
		{"overlong", strings.Repeat("A", 4096), malformed},
		{"wrong version", b64("v2." + id + "." + d), malformed},
		{"two parts", b64("v1." + id + strings.Repeat("x", len(d)+1)), malformed},
		{"two parts with the digest", b64("v1." + id + d + "x"), malformed},
		{"four parts", b64("v1." + id + "." + d[:5] + "." + d[6:]), malformed},
		{"id not a uuid", b64("v1." + strings.Repeat("g", 36) + "." + d), malformed},
		{"urn id", b64("v1.urn:uuid:" + id + "." + d), malformed},
		{"braced id", b64("v1.{" + id + "}." + d), malformed},
		{"other query", encodeCursor(id, queryDigest(nil)), "the cursor belongs to a different query"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.msg != malformed && len(tc.cursor) != len(good) {
				t.Fatalf("test premise: %q is not as long as a real cursor", tc.cursor)
			}
			got, err := decodeCursor(tc.cursor, d)
			var e *engine.Error
			if !errors.As(err, &e) || e.Code != engine.CodeValidation {
				t.Fatalf("decodeCursor = %q, %v; want a ValidationError", got, err)
			}
			if want := "invalid input: cursor: " + tc.msg; e.Message() != want {
				t.Fatalf("message %q, want %q", e.Message(), want)
			}
		})
	}
}

// FuzzDecodeCursor checks that no cursor a caller sends can panic the decoder, and that
// anything accepted is a cursor encodeCursor makes: a 36-character UUID and this query.
func FuzzDecodeCursor(f *testing.F) {
	d := queryDigest(map[string]any{})
	id := uuid.Must(uuid.NewV7()).String()
	f.Add(encodeCursor(id, d))
	f.Add("")
	f.Add("djEuMS4y")
	f.Add("' OR 1=1 --")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("v1." + id)))                            // two parts
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("v2." + id + "." + d)))                  // wrong version
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("v1.urn:uuid:" + id + "." + d)))         // urn id
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("v1.{" + id[:34] + "}." + d)))           // braced, 36 long
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("v1." + strings.ToUpper(id) + "." + d))) // upper case
	f.Fuzz(func(t *testing.T, c string) {
		got, err := decodeCursor(c, d)
		if err != nil {
			var e *engine.Error
			if !errors.As(err, &e) || e.Code != engine.CodeValidation {
				t.Fatalf("cursor %q refused with %v, want a ValidationError", c, err)
			}
			return
		}
		if _, perr := uuid.Parse(got); perr != nil || len(got) != 36 {
			t.Fatalf("accepted cursor %q with id %q", c, got)
		}
		if again, err := decodeCursor(encodeCursor(got, d), d); err != nil || again != got {
			t.Fatalf("the cursor of id %q does not round-trip: %q, %v", got, again, err)
		}
	})
}
