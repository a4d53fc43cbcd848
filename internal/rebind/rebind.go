// Package rebind rewrites the ? placeholders of a SQL statement to Postgres's $1, $2…,
// for the module's benchmarks and harnesses that write statements by hand for both
// SQLite and Postgres (the journal's own store leaves this to its SQL library).
package rebind

import (
	"strconv"
	"strings"
)

// Dollar returns query with its n-th ? replaced by $n. It does not look inside string
// literals: the statements it serves carry their values as arguments.
func Dollar(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
