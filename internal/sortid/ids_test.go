package sortid

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

var shape = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestNewIsUniqueAndOrderedByTime(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := range 10000 {
		if i%1000 == 0 {
			time.Sleep(2 * time.Millisecond) // ids made a millisecond apart sort in order
		}
		id := New()
		if !shape.MatchString(id) {
			t.Fatalf("id %q: want 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if i%1000 == 0 && prev != "" {
			if id[:12] <= prev[:12] {
				t.Fatalf("id %q made after %q sorts before it", id, prev)
			}
		}
		prev = id
	}
}

func TestNewStartsWithTheTimeInMilliseconds(t *testing.T) {
	before := time.Now().UnixMilli()
	id := New()
	after := time.Now().UnixMilli()
	ms, err := strconv.ParseInt(id[:12], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if ms < before || ms > after {
		t.Fatalf("id %q carries %d ms, want between %d and %d", id, ms, before, after)
	}
}
