package journal

import (
	"strings"
	"unicode/utf8"
)

// unstorable reports whether id is text no run or stream can have been stored under: it
// holds a NUL byte or is not valid UTF-8. Postgres refuses such text in a query (SQLSTATE
// 22021), so the journal answers a lookup by one as the lookup of an unknown id, the same
// on every driver, without asking the database; ids the journal makes are UUIDs.
func unstorable(id string) bool {
	return strings.IndexByte(id, 0) >= 0 || !utf8.ValidString(id)
}
