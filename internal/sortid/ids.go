// Package sortid makes the identifiers the engine stores as primary keys: journal runs and
// agent runs (whose id is also their event log's stream id).
package sortid

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// New returns 32 hex digits: the current Unix time in milliseconds (48 bits, as in a
// UUIDv7) followed by 80 random bits. Ids made later sort after earlier ones, so a
// database inserts them at the right edge of its primary-key and (stream_id, seq)
// indexes: the writes of one group commit touch the same few pages instead of one page
// each, which on SQLite cuts the pages every commit writes to the WAL. The random part
// keeps ids unique across instances and not guessable from one another.
func New() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}
