package journal

import (
	"testing"
	"time"
)

// The follow tail says "nothing yet" past its last row only while the writer that holds
// the stream still does and no write of the stream is under way; nested writes keep the
// stream marked until the last ends, and a follower waiting on the mark is released then.
func TestTailHoldAndStoringMarks(t *testing.T) {
	ts := newTails(1<<20, time.Minute, time.Hour)
	now := time.Now()
	st := Stream{ID: "s", CreatedAt: now}
	w1, w2 := &LogWriter{}, &LogWriter{}
	tl := ts.open(st, 0, now, w1)
	ts.add("s", []EventRow{{Seq: 1, Event: []byte(`{}`)}}, now)
	if _, rows, ok := ts.read("s", 1, 10, now); !ok || len(rows) != 0 {
		t.Fatalf("held and up to date: ok %v, %d rows; want the tail to answer nothing yet", ok, len(rows))
	}

	ids := []string{"s"}
	ts.begin(ids)
	ts.begin(ids) // a writer's commit around the batch's flush
	wait := ts.stored("s")
	if _, _, ok := ts.read("s", 1, 10, now); ok {
		t.Fatal("a write under way: the tail answered a read past its last row")
	}
	ts.end(ids)
	select {
	case <-wait:
		t.Fatal("the inner write's end released a follower while the outer write goes on")
	default:
	}
	ts.end(ids)
	select {
	case <-wait:
	default:
		t.Fatal("the last write's end did not release the follower waiting on it")
	}
	if ts.stored("s") != nil {
		t.Fatal("no write under way, yet stored gives a channel")
	}

	// A second writer continues the same tail; the first one's late release leaves it held.
	if ts.open(st, 1, now, w2) != tl {
		t.Fatal("a writer continuing where the tail ends got a new tail")
	}
	ts.release(tl, w1)
	if _, _, ok := ts.read("s", 1, 10, now); !ok {
		t.Fatal("an earlier writer's release ended the hold of the writer that holds the stream now")
	}
	ts.release(tl, w2)
	if _, _, ok := ts.read("s", 1, 10, now); ok {
		t.Fatal("released: the tail still answered a read past its last row of an unfinished stream")
	}
}
