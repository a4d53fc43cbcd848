package journal

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrUnstorableID is the error of a write under an id that holds a NUL byte or is not
// valid UTF-8, text the SQL drivers cannot store ([ValidID] tells such ids beforehand).
var ErrUnstorableID = errors.New("journal: an id may not hold a NUL byte or invalid UTF-8")

// ValidID reports whether id is text the journal can store a run, stream or thread
// under: no NUL byte, valid UTF-8. Check ids a client chooses with it before they reach a
// write, to answer them as bad input.
func ValidID(id string) bool { return !unstorable(id) }

// unstorable reports whether id is text no run or stream can have been stored under: it
// holds a NUL byte or is not valid UTF-8. Postgres refuses such text in a query (SQLSTATE
// 22021), so the journal answers a lookup by one as the lookup of an unknown id, the same
// on every driver, without asking the database; ids the journal makes are UUIDs.
func unstorable(id string) bool {
	return strings.IndexByte(id, 0) >= 0 || !utf8.ValidString(id)
}
