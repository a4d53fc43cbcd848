package console

import (
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// A cursor the console handed out reads back as it was; anything else a client sends is
// a validation error, never a panic.
func FuzzCursor(f *testing.F) {
	f.Add(encodeCursor(journal.Cursor{CreatedAt: time.Unix(1, 2), ID: "run-1", Key: "k"}))
	f.Add("")
	f.Add("e30")
	f.Add("!!")
	f.Add("eyJ0IjotMSwiaSI6IngifQ")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil || s == "" {
			return
		}
		if c.ID == "" || c.CreatedAt.UnixNano() <= 0 {
			t.Fatalf("decodeCursor(%q) = %+v with no error", s, c)
		}
		if back, err := decodeCursor(encodeCursor(c)); err != nil || back != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, back, err)
		}
	})
}
