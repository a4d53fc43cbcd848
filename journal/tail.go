package journal

import (
	"slices"
	"sync"
	"time"
)

// Tail defaults; see [Options.TailBytes] and [Options.TailTTL].
const (
	defaultTailBytes = 16 << 20
	defaultTailTTL   = time.Minute
)

// tails keeps, for the streams this instance writes, the rows it committed, and for
// streams other instances write, the rows it read ([tails.remember]), so a follower on
// this instance reads them without a database round trip. A tail only ever holds rows
// already committed by the driver, contiguous by seq, and the stream record they belong
// to; anything it cannot answer exactly goes to the driver:
//
//   - a read starting before the tail's first row (an earlier execution's rows, or rows
//     trimmed to the budget);
//   - a read past the tail's last row of a stream not finished here, unless a writer of
//     this instance holds the stream and no write of its rows is under way: otherwise
//     another instance may have taken the run over and appended since;
//   - a stream unfinished for half of UnfinishedMaxAge, which retention may close soon.
//
// A finish only completes a tail that ends at the stored last row ([Journal.FinishStream]
// checks): the stream may have been finished elsewhere after rows this tail lacks.
//
// Finished streams are immutable until retention deletes them, and a tail lives at most
// ttl after its last append or finish, which [New] keeps below half the retention windows,
// so it never serves a stream another instance's retention pass has removed.
type tails struct {
	max    int           // byte budget; 0 disables
	ttl    time.Duration // lifetime after the last append or finish
	maxAge time.Duration // [Options.UnfinishedMaxAge]

	mu    sync.Mutex
	size  int
	m     map[string]*tail
	swept time.Time
	// storing maps the streams whose rows a write under way stores (the log batch's
	// flush, a step's write, a writer's commit) to those writes, whose rows reach the
	// tails once the last ends: the driver wakes followers at the commit, before that,
	// and a follower woken then waits for the tail ([Journal.ReadStream]) instead of
	// reading the rows back from the database.
	storing map[string]storing
}

type tail struct {
	st      Stream
	next    int64      // the seq after the last committed one
	rows    []EventRow // contiguous, ending at next-1
	size    int
	touched time.Time
	// remembered: the rows came from a read of what another instance wrote
	// ([tails.remember]), so newer rows may be in the database and not here.
	remembered bool
	// holder is the [LogWriter] of this instance that holds the stream (see
	// [tails.open]), or nil. Every row it stores reaches the tail, and each of its writes
	// is marked in storing from before its commit until its rows are here, so with no
	// write marked the tail knows every committed row and answers a read past its last
	// one with nothing.
	holder *LogWriter
}

func newTails(max int, ttl, maxAge time.Duration) *tails {
	return &tails{max: max, ttl: ttl, maxAge: maxAge, m: map[string]*tail{}}
}

// rowSize is what a row costs the budget: its bytes and its slot.
func rowSize(r EventRow) int { return len(r.Event) + 32 }

// open starts (or restarts) the tail of a stream that writer w continues after seq last,
// held by w until [tails.release], and returns it (nil when tails are off).
func (ts *tails) open(st Stream, last int64, now time.Time, w *LogWriter) *tail {
	if ts.max <= 0 {
		return nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.sweep(now)
	if t := ts.m[st.ID]; t != nil && t.next == last+1 {
		// The writer found the stream ending where the tail does: the tail is complete,
		// even one read from another instance's rows.
		t.touched, t.holder, t.remembered = now, w, false
		return t
	}
	ts.dropLocked(st.ID)
	t := &tail{st: st, next: last + 1, touched: now, holder: w}
	ts.m[st.ID] = t
	return t
}

// release records that writer w holds the stream of tail t no more: it stopped, or
// failed, or its run lost the lease, and another instance may continue the stream. A
// later writer that holds the same tail keeps it.
func (ts *tails) release(t *tail, w *LogWriter) {
	if t == nil {
		return
	}
	ts.mu.Lock()
	if t.holder == w {
		t.holder = nil
	}
	ts.mu.Unlock()
}

// add records rows the driver committed to a stream. Rows that do not continue the tail
// restart it at their first seq.
func (ts *tails) add(id string, rows []EventRow, now time.Time) { ts.commit(id, rows, -1, now) }

// commit records, under one lock, rows the driver committed to a stream and, when last
// is not negative, that the same write finished the stream with last as its last stored
// row. A follower woken by that write then never reads the rows from
// the tail without the end they were committed with, which would leave it waiting for
// a wake-up that already came.
func (ts *tails) commit(id string, rows []EventRow, last int64, now time.Time) {
	if ts.max <= 0 {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(rows) > 0 {
		ts.addLocked(id, rows, now)
	}
	if last >= 0 {
		ts.finishLocked(id, last, now)
	}
}

func (ts *tails) addLocked(id string, rows []EventRow, now time.Time) {
	t := ts.m[id]
	if t == nil {
		return
	}
	if rows[0].Seq != t.next {
		ts.size -= t.size
		t.rows, t.size = nil, 0
	}
	n := sizeOf(rows)
	t.rows = append(t.rows, rows...)
	t.size += n
	ts.size += n
	t.next = rows[len(rows)-1].Seq + 1
	t.touched = now
	ts.trim(t)
	ts.sweep(now)
}

func sizeOf(rows []EventRow) int {
	n := 0
	for _, r := range rows {
		n += rowSize(r)
	}
	return n
}

// finishLocked records that a stream is finished and that its last stored row is last.
// A tail ending there is complete; one that does not (another instance appended and
// finished, and this call found the stream already finished) is dropped.
func (ts *tails) finishLocked(id string, last int64, at time.Time) {
	t := ts.m[id]
	switch {
	case t == nil:
	case t.next != last+1:
		ts.dropLocked(id)
	case t.st.FinishedAt == nil:
		t.st.FinishedAt = &at
		t.touched = at
	}
}

// remember keeps rows another instance committed, as a driver read returned them with
// st, so the next follower of the stream on this instance (the same client resuming, a
// second viewer) reads them from memory. limit is the limit of the read. It keeps only what
// the read proves: rows consecutive by seq, and the stream's end only when the read saw
// the stream finished and returned fewer than limit rows (so nothing follows them).
// A tail it starts lives ttl from the stream's finish, or from now while the stream is
// unfinished, so it expires as a writer's tail would, before retention may delete the
// rows. A tail this instance already holds is only continued, never restarted: its
// writer owns it.
func (ts *tails) remember(st Stream, rows []EventRow, limit int, now time.Time) {
	if ts.max <= 0 {
		return
	}
	// Seqs skip where a writer took over from one that died; the rows after the last
	// skip are the ones a tail can hold.
	all := len(rows)
	rows = rows[contiguousFrom(rows):]
	if len(rows) == 0 {
		return
	}
	touched := now
	if st.FinishedAt != nil {
		if all >= limit {
			// Rows may follow these: the tail must not answer past its last row with
			// the finished record.
			return
		}
		if st.FinishedAt.Before(now) {
			touched = *st.FinishedAt
		}
	}
	if now.Sub(touched) >= ts.ttl || (st.FinishedAt == nil && now.Sub(st.CreatedAt) >= ts.maxAge/2) {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.m[st.ID]
	switch {
	case t == nil:
		ts.sweep(now)
		rec := st
		rec.FinishedAt = nil
		t = &tail{st: rec, next: rows[0].Seq, touched: touched, remembered: true}
		ts.m[st.ID] = t
	case t.next != rows[0].Seq || t.st.FinishedAt != nil:
		return
	}
	ts.addLocked(st.ID, slices.Clip(rows), touched)
	if st.FinishedAt != nil && ts.m[st.ID] == t && t.next == rows[len(rows)-1].Seq+1 {
		at := *st.FinishedAt
		t.st.FinishedAt = &at
	}
}

// contiguousFrom is the index where the last run of consecutive seqs of rows starts.
func contiguousFrom(rows []EventRow) int {
	for i := len(rows) - 1; i > 0; i-- {
		if rows[i].Seq != rows[i-1].Seq+1 {
			return i
		}
	}
	return 0
}

// begin records that a write stores rows of the streams ids; end(ids), once their rows
// are in the tails, releases the followers waiting ([tails.stored]). Writes of one
// stream may nest (a writer's commit that goes through the log batch's flush): the
// stream counts as being stored until the last of them ends.
func (ts *tails) begin(ids []string) {
	if ts.max <= 0 || len(ids) == 0 {
		return
	}
	ts.mu.Lock()
	if ts.storing == nil {
		ts.storing = make(map[string]storing, len(ids))
	}
	for _, id := range ids {
		s := ts.storing[id]
		s.n++
		ts.storing[id] = s
	}
	ts.mu.Unlock()
}

func (ts *tails) end(ids []string) {
	if ts.max <= 0 || len(ids) == 0 {
		return
	}
	ts.mu.Lock()
	for _, id := range ids {
		s := ts.storing[id]
		if s.n > 1 {
			s.n--
			ts.storing[id] = s
			continue
		}
		delete(ts.storing, id)
		if s.ch != nil {
			close(s.ch)
		}
	}
	ts.mu.Unlock()
}

// storing is a stream's writes under way, and the channel closed when the last of them
// ends, made when a follower first waits for it.
type storing struct {
	n  int
	ch chan struct{}
}

// stored returns a channel closed once no write under way stores rows of stream id any
// more (they are in its tail), or nil when none does.
func (ts *tails) stored(id string) <-chan struct{} {
	if ts.max <= 0 {
		return nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s, ok := ts.storing[id]
	if !ok {
		return nil
	}
	if s.ch == nil {
		s.ch = make(chan struct{})
		ts.storing[id] = s
	}
	return s.ch
}

// drop forgets a stream (retention closed or deleted it).
func (ts *tails) drop(id string) {
	if ts.max <= 0 {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.dropLocked(id)
}

func (ts *tails) dropLocked(id string) {
	if t := ts.m[id]; t != nil {
		ts.size -= t.size
		delete(ts.m, id)
	}
}

// read answers a driver ReadStream from the tail when it can answer exactly; ok false
// sends the caller to the driver.
func (ts *tails) read(id string, after int64, limit int, now time.Time) (st Stream, rows []EventRow, ok bool) {
	if ts.max <= 0 {
		return Stream{}, nil, false
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.m[id]
	if t == nil || now.Sub(t.touched) >= ts.ttl {
		return Stream{}, nil, false
	}
	if t.st.FinishedAt == nil && now.Sub(t.st.CreatedAt) >= ts.maxAge/2 {
		// Retention on any instance may soon close this stream and drop its rows.
		return Stream{}, nil, false
	}
	first := t.next - int64(len(t.rows))
	switch {
	case after+1 < first:
		return Stream{}, nil, false
	case after+1 >= t.next:
		// Nothing here after after: an end only when the stream finished here, and
		// nothing yet while this instance's writer holds the stream and none of its
		// writes is under way (one is: its rows may be committed and not here yet).
		if t.st.FinishedAt != nil {
			return t.st, nil, after+1 == t.next
		}
		_, busy := ts.storing[id]
		return t.st, nil, t.holder != nil && !busy
	}
	i := int(after + 1 - first)
	j := min(len(t.rows), i+limit)
	if t.remembered && t.st.FinishedAt == nil && j-i < limit {
		// A short page from rows another instance wrote: newer rows may have been
		// committed since they were read, and a reader that asks again from the same
		// place (a poll from the start) must see them.
		return Stream{}, nil, false
	}
	// Capacity capped: a caller's append cannot write into the tail.
	return t.st, t.rows[i:j:j], true
}

// trim keeps one tail within an eighth of the budget by dropping its oldest half, then
// the whole set within the budget: over it, the least recently touched tails go until
// an eighth of the budget is free, so one sort serves many appends.
func (ts *tails) trim(t *tail) {
	if t.size > ts.max/8 {
		cut := len(t.rows) / 2
		n := sizeOf(t.rows[:cut])
		t.rows = append([]EventRow(nil), t.rows[cut:]...)
		t.size -= n
		ts.size -= n
	}
	if ts.size <= ts.max {
		return
	}
	ids := make([]string, 0, len(ts.m))
	for id := range ts.m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return ts.m[a].touched.Compare(ts.m[b].touched) })
	for _, id := range ids {
		if ts.size <= ts.max-ts.max/8 {
			break
		}
		ts.dropLocked(id)
	}
}

// sweep drops expired tails, at most once per half ttl.
func (ts *tails) sweep(now time.Time) {
	if now.Sub(ts.swept) < ts.ttl/2 {
		return
	}
	ts.swept = now
	for id, t := range ts.m {
		if now.Sub(t.touched) >= ts.ttl {
			ts.dropLocked(id)
		}
	}
}
