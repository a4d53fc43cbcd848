package journal_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// countingReads is a driver that counts the stream reads reaching it.
type countingReads struct {
	journal.Driver
	mu    sync.Mutex
	reads int
}

func (c *countingReads) ReadStream(ctx context.Context, id string, after int64, limit int) (journal.Stream, []journal.EventRow, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.Driver.ReadStream(ctx, id, after, limit)
}

func (c *countingReads) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// clock is a settable [journal.Options.Now].
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func rowsOf(from, to int64) []journal.EventRow {
	var out []journal.EventRow
	for s := from; s <= to; s++ {
		out = append(out, journal.EventRow{Seq: s, Event: json.RawMessage(`{"n":` + strconv.FormatInt(s, 10) + `}`)})
	}
	return out
}

// twoInstances is instance A writing and instance B following on one database; reads
// counts B's database reads.
func twoInstances(t *testing.T, clk *clock) (a, b *journal.Journal, reads *countingReads) {
	t.Helper()
	d := memory.New()
	a, err := journal.New(d, journal.Options{TailBytes: -1, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	reads = &countingReads{Driver: d}
	b, err = journal.New(reads, journal.Options{TailBytes: 1 << 20, TailTTL: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return a, b, reads
}

// read reads s on j after after and checks it got exactly the seqs from..to and the
// finished mark, with or without a database read as fromDB says.
func read(t *testing.T, j *journal.Journal, reads *countingReads, after int64, limit int, from, to int64, finished, fromDB bool) {
	t.Helper()
	before := reads.count()
	st, rows, err := j.ReadStream(t.Context(), "s", after, limit)
	if err != nil {
		t.Fatal(err)
	}
	if got := reads.count() - before; got != map[bool]int{true: 1, false: 0}[fromDB] {
		t.Errorf("read after %d: %d database reads, want database read %v", after, got, fromDB)
	}
	if (st.FinishedAt != nil) != finished {
		t.Errorf("read after %d: finished %v, want %v", after, st.FinishedAt != nil, finished)
	}
	if st.ID != "s" {
		t.Errorf("read after %d: stream %q", after, st.ID)
	}
	want := rowsOf(from, to)
	if len(rows) != len(want) {
		t.Fatalf("read after %d: %d rows, want seqs %d..%d", after, len(rows), from, to)
	}
	for i, r := range rows {
		if r.Seq != want[i].Seq || string(r.Event) != string(want[i].Event) {
			t.Fatalf("read after %d: row %d is %d %s, want %d %s", after, i, r.Seq, r.Event, want[i].Seq, want[i].Event)
		}
	}
}

// An instance that reads rows another instance committed keeps them: the next follower
// of the stream there (a client resuming) reads them from memory, gap-free, and reads
// the database for anything the rows it read do not prove.
func TestTailRemembersRowsAnotherInstanceCommitted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	a, b, reads := twoInstances(t, clk)
	if err := a.CreateStream(ctx, journal.Stream{ID: "s", Flow: "f", PrincipalID: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, "s", nil, rowsOf(1, 3)...); err != nil {
		t.Fatal(err)
	}
	read(t, b, reads, 0, 10, 1, 3, false, true) // first read: the database
	// A full page from memory; a short one of an unfinished stream asks the database,
	// where newer rows may be.
	read(t, b, reads, 1, 2, 2, 3, false, false)
	read(t, b, reads, 0, 2, 1, 2, false, false)
	read(t, b, reads, 1, 10, 2, 3, false, true)
	// Past the rows read, on an unfinished stream: only the database knows.
	read(t, b, reads, 3, 10, 0, -1, false, true)
	if err := a.AppendEvents(ctx, "s", nil, rowsOf(4, 5)...); err != nil {
		t.Fatal(err)
	}
	// A poll from the start sees the rows committed since.
	read(t, b, reads, 0, 10, 1, 5, false, true)
	read(t, b, reads, 3, 10, 4, 5, false, true)
	read(t, b, reads, 0, 5, 1, 5, false, false) // continued, not restarted
	if err := a.FinishStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	// The stream finished on A: B's memory still says unfinished, so B asks the
	// database past its rows and learns the end there.
	read(t, b, reads, 5, 10, 0, -1, true, true)
	read(t, b, reads, 2, 3, 3, 5, false, false)
}

func TestTailRemembersAFinishedStreamOnlyWithItsEnd(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	a, b, reads := twoInstances(t, clk)
	if err := a.CreateStream(ctx, journal.Stream{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, "s", nil, rowsOf(1, 5)...); err != nil {
		t.Fatal(err)
	}
	if err := a.FinishStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	// A full batch of a finished stream does not prove the end: not kept.
	read(t, b, reads, 0, 3, 1, 3, true, true)
	read(t, b, reads, 0, 3, 1, 3, true, true)
	// A short batch reaches the end: kept, end included.
	read(t, b, reads, 1, 10, 2, 5, true, true)
	read(t, b, reads, 3, 10, 4, 5, true, false)
	read(t, b, reads, 5, 10, 0, -1, true, false)
	read(t, b, reads, 0, 10, 1, 5, true, true) // before the rows kept
	// Kept TailTTL after the finish, as the writer's tail is, then read again.
	clk.add(time.Minute)
	read(t, b, reads, 3, 10, 4, 5, true, true)
	read(t, b, reads, 3, 10, 4, 5, true, true) // finished over TailTTL ago: not kept
}

// Seqs skip where a writer took over from one that died: an instance keeps the rows
// after the skip, and reads the database for anything before them.
func TestTailRemembersRowsAfterASkip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	a, b, reads := twoInstances(t, clk)
	if err := a.CreateStream(ctx, journal.Stream{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	// The first writer stored 1..3 and may have handed out up to 6; the next one goes on at 7.
	if err := a.Driver().AppendEvents(ctx, nil, journal.Append{StreamID: "s", Rows: rowsOf(1, 3), Reserve: 6}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, "s", nil, rowsOf(7, 9)...); err != nil {
		t.Fatal(err)
	}
	if err := a.FinishStream(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	st, rows, err := b.ReadStream(ctx, "s", 0, 10)
	if err != nil || st.FinishedAt == nil || len(rows) != 6 || rows[3].Seq != 7 {
		t.Fatalf("first read: %+v %v %v", st, rows, err)
	}
	read(t, b, reads, 6, 10, 7, 9, true, false)
	read(t, b, reads, 7, 10, 8, 9, true, false)
	read(t, b, reads, 4, 10, 7, 9, true, true) // in the skip: the database
	before := reads.count()
	if _, rows, err := b.ReadStream(ctx, "s", 2, 10); err != nil || len(rows) != 4 || rows[0].Seq != 3 || rows[1].Seq != 7 || reads.count() != before+1 {
		t.Fatalf("read after 2 (before the rows kept): %v %v, %d database reads", rows, err, reads.count()-before)
	}
}

// Whatever an instance read before, every read it answers is what the database would
// answer, or a prefix of it that ends unfinished (the follower then reads on): never a
// row missed, a row of another seq, or an end the database does not hold. A writes
// streams in random steps (appends, a writer's skip, the end) while B reads them at
// random positions with random limits.
func TestTailReadsAnswerAsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	a, b, _ := twoInstances(t, clk)
	d := a.Driver()
	rng := rand.New(rand.NewPCG(1, 2))
	for s := range 40 {
		id := "s" + strconv.Itoa(s)
		if err := a.CreateStream(ctx, journal.Stream{ID: id}); err != nil {
			t.Fatal(err)
		}
		last, finished := int64(0), false
		for range 60 {
			switch k := rng.IntN(10); {
			case k < 4 && !finished:
				n := int64(1 + rng.IntN(4))
				from := last + 1
				if rng.IntN(6) == 0 { // a writer that took over skips what the last one reserved
					if err := d.AppendEvents(ctx, nil, journal.Append{StreamID: id, Reserve: last + 3}); err != nil {
						t.Fatal(err)
					}
					from = last + 4
				}
				rows := rowsOf(from, from+n-1)
				if err := a.AppendEvents(ctx, id, nil, rows...); err != nil {
					t.Fatal(err)
				}
				last = from + n - 1
			case k == 4 && !finished && rng.IntN(4) == 0:
				if err := a.FinishStream(ctx, id); err != nil {
					t.Fatal(err)
				}
				finished = true
			default:
				after, limit := rng.Int64N(last+2), 1+rng.IntN(8)
				st, got, err := b.ReadStream(ctx, id, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				dst, want, err := d.ReadStream(ctx, id, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) > len(want) {
					t.Fatalf("%s after %d limit %d: %d rows, the database has %d", id, after, limit, len(got), len(want))
				}
				for i := range got {
					if got[i].Seq != want[i].Seq || string(got[i].Event) != string(want[i].Event) {
						t.Fatalf("%s after %d: row %d is %d, the database's %d", id, after, i, got[i].Seq, want[i].Seq)
					}
				}
				if st.FinishedAt != nil && (dst.FinishedAt == nil || len(got) != len(want)) {
					t.Fatalf("%s after %d limit %d: finished with %d rows; the database: finished %v, %d rows",
						id, after, limit, len(got), dst.FinishedAt != nil, len(want))
				}
				if st.FinishedAt == nil && len(got) < len(want) && len(got) == 0 {
					t.Fatalf("%s after %d: no rows and not finished, the database has %d", id, after, len(want))
				}
			}
			clk.add(time.Second)
		}
	}
}
