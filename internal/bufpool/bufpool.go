// Package bufpool shares byte buffers between the places that build a frame or a reply,
// write it and are done with it, so a buffer is held only while something is being
// written: an open stream waiting between events holds none.
package bufpool

import "sync"

// maxKept is the largest buffer kept for reuse: a rare huge one is left to the collector
// rather than held by the pool.
const maxKept = 64 << 10

var pool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Get returns an empty buffer. Give it back with [Put] once nothing refers to its bytes.
func Get() *[]byte { return pool.Get().(*[]byte) }

// Put gives a buffer from [Get] back for reuse.
func Put(b *[]byte) {
	if cap(*b) > maxKept {
		return
	}
	*b = (*b)[:0]
	pool.Put(b)
}
