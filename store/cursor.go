package store

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/google/uuid"
)

// A cursor is "v1.<last id>.<query digest>" in unpadded base64url. The digest binds it to
// the filters it was made for, so a cursor replayed on another query is refused instead
// of silently skipping rows; the id must be a UUID in its 36-character form. Forging one
// gains nothing: it only moves the start of the caller's own (tenant-scoped) list.
func encodeCursor(lastID, digest string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1." + lastID + "." + digest))
}

// cursorLen is the length of every cursor list hands out. Checking it first bounds the
// work a hostile cursor costs and refuses the ids [uuid.Parse] also takes in other forms
// (braced, "urn:uuid:", bare hex): no cursor is made with them, they compare as text
// with the stored ids, and a Postgres uuid column fails the query (a 500) on the urn form.
var cursorLen = len(encodeCursor("00000000-0000-0000-0000-000000000000", queryDigest(nil)))

func decodeCursor(c, digest string) (string, error) {
	bad := func(msg string) error {
		return engine.Invalid(engine.ValidationIssue{Path: "cursor", Message: msg})
	}
	if len(c) != cursorLen {
		return "", bad("malformed cursor")
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", bad("malformed cursor")
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return "", bad("malformed cursor")
	}
	if _, err := uuid.Parse(parts[1]); err != nil {
		return "", bad("malformed cursor")
	}
	if parts[2] != digest {
		return "", bad("the cursor belongs to a different query")
	}
	return parts[1], nil
}

// queryDigest fingerprints the filters (json.Marshal sorts map keys).
func queryDigest(filters map[string]any) string {
	b, _ := json.Marshal(filters)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
