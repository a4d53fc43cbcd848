package store

import (
	"testing"

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

// FuzzDecodeCursor checks that no cursor a caller sends can panic the decoder, and that
// anything accepted names a well-formed UUID.
func FuzzDecodeCursor(f *testing.F) {
	d := queryDigest(map[string]any{})
	f.Add(encodeCursor(uuid.Must(uuid.NewV7()).String(), d))
	f.Add("")
	f.Add("djEuMS4y")
	f.Add("' OR 1=1 --")
	f.Fuzz(func(t *testing.T, c string) {
		id, err := decodeCursor(c, d)
		if err != nil {
			return
		}
		if _, perr := uuid.Parse(id); perr != nil {
			t.Fatalf("accepted cursor %q with id %q", c, id)
		}
	})
}
