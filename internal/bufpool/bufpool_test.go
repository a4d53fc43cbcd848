package bufpool

import "testing"

func TestPutEmptiesAndDropsHuge(t *testing.T) {
	b := Get()
	*b = append(*b, "frame"...)
	Put(b)
	if len(*b) != 0 {
		t.Fatalf("a buffer given back holds %d bytes, want none", len(*b))
	}
	huge := make([]byte, maxKept+1)
	h := &huge
	Put(h)
	if len(*h) != maxKept+1 {
		t.Fatal("a buffer above the cap was emptied, so it was kept")
	}
}
