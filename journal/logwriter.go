package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/bbc28f59/engine/internal/jsonx"
)

// LogOptions tune a [LogWriter]. Zero values take the spec's numbers. The intervals run
// on the wall clock, not on [Options.Now]: they pace storage, they decide nothing a run
// can observe.
type LogOptions struct {
	// FlushInterval seals a coalesced delta row this long after its first delta. Default 100ms.
	FlushInterval time.Duration
	// FlushBytes seals a coalesced delta row once its delta text reaches this size. Default 1 KiB.
	FlushBytes int
	// CommitInterval is the minimum time between the writer's timed commits. Default
	// 100ms. A timed commit joins the journal's batch, which stores every stream's rows
	// waiting in one commit per window, so commits do not grow with the number of
	// streams. Terminal events, Flush and Close commit at once.
	CommitInterval time.Duration
	// MaxRows is the row cap after which deltas are dropped. Default 5000.
	MaxRows int64
	// ReserveAhead is how many seqs past the last it handed out a writer reserves (see
	// [Stream.Reserved]): it may return seqs up to the stored reservation for live SSE
	// ids before it must store their rows or a new reservation. A commit raises the
	// reservation to ReserveAhead past the last seq once the stored one reaches less
	// than half of ReserveAhead past it, and otherwise keeps it. A writer that takes
	// over a stream after one that died continues past that one's reservation, so an id a
	// live client was sent never names another event. Default 64.
	ReserveAhead int64
	// Policy says which events are deltas, which end a run, and what marks truncation
	// (see [LogPolicy]). Default: the journal's ([Options.LogPolicy]).
	Policy *LogPolicy
}

func (o *LogOptions) defaults() {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.FlushBytes <= 0 {
		o.FlushBytes = 1024
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = 100 * time.Millisecond
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 5000
	}
	if o.ReserveAhead <= 0 {
		o.ReserveAhead = 64
	}
}

// LogWriter stores one live stream's events as the follow log, as its [LogPolicy] says.
// Structural events get a row each and their seq at once (for the live frame's id:);
// consecutive deltas of one type and key are coalesced into one row. The writer's timer
// hands its rows at most every CommitInterval to the journal's batch, which commits the
// rows of every live stream of the journal together (one transaction a window on the SQL
// drivers, [Driver.AppendBatch]), and seals a delta row once it is FlushInterval old, so
// a write never reads the clock; the writer keeps writing while its rows are in the
// batch. The policy's ending events, [LogWriter.Flush] and [LogWriter.Close] commit
// synchronously, after the rows in the batch. Past
// MaxRows deltas are dropped and the policy's truncation marker is stored once; seq
// never skips.
//
// On a durable run's stream, the rows queued when a step of the run ends are committed
// in the step's own write ([Run.Step]). A commit raises the stored reservation to
// [LogOptions.ReserveAhead] seqs past the last handed out once it runs low, and a seq
// past the stored reservation is returned only after a commit stored a new one: a
// writer that takes the stream over after this one died continues past every seq this
// one may have sent.
// Close and Finish store the exact last seq, so a run that parks and resumes keeps its
// seqs contiguous.
//
// A commit that fails while the database is away is tried again ([Options.WriteRetry]).
// A commit that fails for good is sticky: every later call returns the same error, since
// the seqs already handed out can no longer be honoured.
type LogWriter struct {
	j        *Journal
	streamID string
	run      *Run
	opts     LogOptions
	policy   *LogPolicy // opts.Policy, or the journal's
	ctx      context.Context
	opened   Stream   // the stream as it was when the writer opened it
	openLast int64    // its last stored seq then
	lastRow  EventRow // and that row, when the writer continued a stream

	mu         sync.Mutex
	seq        int64
	reserved   int64 // the reservation stored for the stream: seqs up to it may be handed out
	pending    *pendingDelta
	text       []byte // the pending row's delta text; reused while rows fill by size
	queue      []EventRow
	lastCommit time.Time // wall clock
	truncated  bool
	timer      *time.Timer
	inflight   bool      // rows handed to the journal's batch and not yet settled
	settled    sync.Cond // on mu: signalled when the rows in the batch are settled
	err        error
	closed     bool
	finished   bool  // the writer ended the stream
	tail       *tail // the stream's follow tail, which trusts this writer until it stops
	commits    int
	rows       int
}

type pendingDelta struct {
	typ, id string
	dt      *DeltaType                 // the policy's type of the row
	fields  map[string]json.RawMessage // the first delta's members; nil when given by its fields
	since   time.Time                  // wall clock: the row is sealed FlushInterval after it
}

// LogStats counts what a writer committed (for benchmarks and metrics).
type LogStats struct {
	Rows    int // rows committed
	Commits int // commit round trips
}

// NewLogWriter opens a writer on an existing stream, continuing after its last seq (or
// after the reservation of a writer that did not close) so a resumed run extends the log.
// When the stream belongs to a durable run, run must be this instance's execution of it;
// every commit is fenced by its lease, so close the writer before [Run.Suspend],
// [Run.Complete] or [Run.Fail] release that lease.
func (j *Journal) NewLogWriter(ctx context.Context, streamID string, run *Run, opts LogOptions) (*LogWriter, error) {
	if err := opts.Policy.check(); err != nil {
		return nil, err
	}
	// A run resuming while the database is away waits for it, as its writes do, rather
	// than failing the run on a read.
	var s Stream
	var tail []EventRow
	err := j.persist(ctx, "open the log of stream "+streamID, func() (err error) {
		s, tail, err = readStreamEnd(ctx, j.d, streamID)
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	if err := writerMayOpen(s, run); err != nil {
		return nil, err
	}
	var last int64
	if len(tail) == 1 {
		last = tail[0].Seq
	}
	w, err := j.openLogWriter(ctx, s, run, last, false, opts)
	if err == nil && len(tail) == 1 {
		w.lastRow = tail[0]
	}
	return w, err
}

// CreateLog creates a stream and opens a writer on it: [Journal.CreateStream] then
// [Journal.NewLogWriter], except that a stream this call created is known to be empty,
// so the writer opens without reading it back, and it is created with the writer's
// first reservation. A stream that already exists (a resumed run's) is continued.
func (j *Journal) CreateLog(ctx context.Context, s Stream, run *Run, opts LogOptions) (*LogWriter, error) {
	if err := writerMayOpen(s, run); err != nil {
		return nil, err
	}
	if err := opts.Policy.check(); err != nil {
		return nil, err
	}
	opts.defaults()
	if s.ID == "" {
		return nil, errors.New("journal: stream needs an id")
	}
	s.Reserved = opts.ReserveAhead
	s, err := j.newStream(s)
	if err != nil {
		return nil, err
	}
	// A journal that commits creates the stream with the batch's next commit. A retried
	// create that meets its own earlier attempt finds the stream existing and continues
	// it, which is right either way.
	grouped := j.batch.group
	err = j.persist(ctx, "create stream "+s.ID, func() error {
		if !grouped {
			return j.d.CreateStream(ctx, s)
		}
		grouped = false // a retry writes alone
		return j.batch.now(FencedAppend{Append: Append{StreamID: s.ID, Reserve: s.Reserved}, Open: &s})
	}, nil)
	if errors.Is(err, ErrConflict) {
		return j.NewLogWriter(ctx, s.ID, run, opts)
	}
	if err != nil {
		return nil, err
	}
	return j.openLogWriter(ctx, s, run, 0, true, opts)
}

// writerMayOpen refuses a writer on a durable run's stream without that run's lease.
func writerMayOpen(s Stream, run *Run) error {
	if s.RunID != "" && (run == nil || run.ID != s.RunID) {
		return fmt.Errorf("journal: stream %s belongs to run %s: writer needs that run's lease", s.ID, s.RunID)
	}
	return nil
}

// openLogWriter opens a writer on stream s, whose last stored seq is last. fresh says
// the stream was created for this writer with reservation s.Reserved; otherwise the
// writer continues after the larger of last and the reservation another writer left.
func (j *Journal) openLogWriter(ctx context.Context, s Stream, run *Run, last int64, fresh bool, opts LogOptions) (*LogWriter, error) {
	opts.defaults()
	streamID := s.ID
	policy := opts.Policy
	if policy == nil {
		policy = j.logPolicy()
	}
	w := &LogWriter{j: j, streamID: streamID, run: run, opts: opts, policy: policy, ctx: context.WithoutCancel(ctx),
		opened: s, openLast: last, seq: last, reserved: last, lastCommit: time.Now()}
	w.settled.L = &w.mu
	if fresh {
		w.reserved = s.Reserved
	} else if s.Reserved > last {
		w.seq, w.reserved = s.Reserved, s.Reserved
	}
	w.tail = j.tails.open(s, w.seq, j.now(), w)
	if last >= opts.MaxRows {
		var rows []EventRow
		err := j.persist(ctx, "read the log of stream "+streamID, func() (err error) {
			rows, err = j.d.ReadEvents(ctx, streamID, opts.MaxRows-1, int(last-opts.MaxRows)+2)
			return err
		}, nil)
		if err != nil {
			j.tails.release(w.tail, w)
			return nil, err
		}
		marker := policy.truncated(opts.MaxRows)
		for _, r := range rows {
			if bytes.Equal(r.Event, marker) {
				w.truncated = true
			}
		}
	}
	j.batch.live.Add(1) // until stop
	if run != nil {
		run.attach(w)
	}
	return w, nil
}

// Opened returns the stream as the writer found it when it opened, and its last stored
// seq then: a resumed run reads what an earlier execution left.
func (w *LogWriter) Opened() (Stream, int64) { return w.opened, w.openLast }

// LastRow returns the stream's last stored row when the writer opened it, and false for
// an empty stream: a resumed run reads how an earlier execution ended.
func (w *LogWriter) LastRow() (EventRow, bool) { return w.lastRow, w.lastRow.Seq > 0 }

// Write takes one event, a JSON object whose string member "type" names its type. It
// returns the row seq for a structural event and 0 for a delta (deltas carry no id on
// the live stream).
func (w *LogWriter) Write(ctx context.Context, event json.RawMessage) (int64, error) {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(event, &probe); err != nil {
		return 0, fmt.Errorf("journal: log event is not a JSON object: %w", err)
	}
	if probe.Type == "" {
		return 0, errors.New(`journal: log event has no "type"`)
	}
	dt := w.policy.delta(probe.Type)
	if dt == nil {
		return w.write(probe.Type, nil, "", "", nil, event)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(event, &fields); err != nil {
		return 0, fmt.Errorf("journal: log event is not a JSON object: %w", err)
	}
	key, hasKey, err := stringMember(fields, dt.Key)
	if err != nil {
		return 0, fmt.Errorf("journal: log event %s: %w", probe.Type, err)
	}
	text, hasText, err := stringMember(fields, dt.Text)
	if err != nil {
		return 0, fmt.Errorf("journal: log event %s: %w", probe.Type, err)
	}
	if !hasKey || key == "" || !hasText {
		return w.write(probe.Type, nil, "", "", nil, event) // a delta of nothing: a row of its own
	}
	return w.write(probe.Type, dt, key, text, fields, event)
}

// stringMember decodes the string member name of an event; ok is false when it is
// absent or null.
func stringMember(fields map[string]json.RawMessage, name string) (s string, ok bool, err error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("member %q is not a string: %w", name, err)
	}
	return s, true, nil
}

// WriteTyped is [LogWriter.Write] for a structural (non-delta) event whose type the
// caller already has, so the event is stored without being parsed.
func (w *LogWriter) WriteTyped(ctx context.Context, typ string, event json.RawMessage) (int64, error) {
	if typ == "" || w.policy.delta(typ) != nil {
		return 0, fmt.Errorf("journal: WriteTyped: %q is not a structural event type", typ)
	}
	return w.write(typ, nil, "", "", nil, event)
}

// WriteDelta is [LogWriter.Write] for a delta event given by its fields: its type, its
// key and its text (see [DeltaType]). It is the hot path of a token stream, which then
// needs neither the encoded event nor a JSON parse. The row is encoded with the type,
// the key and the text in that order.
func (w *LogWriter) WriteDelta(ctx context.Context, typ, key, text string) (int64, error) {
	// Most deltas continue the pending row: append the text and go. The timer is already
	// armed for that row, and a row full by size is sealed into the queue it will commit.
	// The pending row's type is a delta type and its key is not empty, so no check is due.
	w.mu.Lock()
	if p := w.pending; p != nil && p.fields == nil && p.typ == typ && p.id == key && w.err == nil && !w.closed {
		w.text = append(w.text, text...)
		if len(w.text) >= w.opts.FlushBytes {
			w.seal()
		}
		w.mu.Unlock()
		return 0, nil
	}
	w.mu.Unlock()
	dt := w.policy.delta(typ)
	if dt == nil || key == "" {
		return 0, fmt.Errorf("journal: WriteDelta: %s with key %q is not a delta event", typ, key)
	}
	return w.write(typ, dt, key, text, nil, nil)
}

// write stores one event: a delta (dt set) of key is coalesced, anything else is a row of
// its own. A delta's fields are its members when it came whole through Write; nil says
// it came by its fields through WriteDelta, so its coalesced row is encoded directly
// instead of re-marshalling the event's members.
func (w *LogWriter) write(typ string, dt *DeltaType, id, delta string, fields map[string]json.RawMessage, event json.RawMessage) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, ErrClosed
	}
	var seq int64
	if dt != nil {
		w.addDelta(typ, dt, id, delta, fields)
	} else {
		w.seal()
		seq = w.enqueue(bytes.Clone(event))
	}
	if seq > w.reserved || dt == nil && w.policy.ends(typ) {
		// An ending event is stored at once; a seq past the stored reservation may be
		// sent only once a reservation covers it.
		w.seal()
		return seq, w.commit(w.reservation())
	}
	w.arm()
	return seq, nil
}

// addDelta coalesces a delta into the pending row, or starts one, honouring the row cap.
func (w *LogWriter) addDelta(typ string, dt *DeltaType, id, delta string, fields map[string]json.RawMessage) {
	if w.truncated {
		return
	}
	if w.pending != nil && (w.pending.typ != typ || w.pending.id != id) {
		w.seal()
	}
	if w.pending == nil {
		if w.seq >= w.opts.MaxRows {
			w.truncated = true
			w.enqueue(w.policy.truncated(w.opts.MaxRows))
			if o, ok := TracerOf(w.ctx).(TruncationObserver); ok {
				o.LogTruncated(w.ctx, w.streamID, w.opts.MaxRows)
			}
			return
		}
		w.pending = &pendingDelta{typ: typ, id: id, dt: dt, fields: fields, since: time.Now()}
		if w.text == nil {
			w.text = make([]byte, 0, w.opts.FlushBytes+64)
		}
	}
	w.text = append(w.text, delta...)
	if len(w.text) >= w.opts.FlushBytes {
		w.seal()
	}
}

// seal turns the pending delta row into a queued row with the next seq. The row is
// encoded straight from the text buffer, which is then reused for the next row.
func (w *LogWriter) seal() {
	p := w.pending
	if p == nil {
		return
	}
	w.pending = nil
	text := w.text
	w.text = w.text[:0]
	if p.fields == nil {
		// A delta given by its fields: encode the row directly, type first like the live event.
		b := make([]byte, 0, len(p.typ)+len(p.dt.Key)+len(p.dt.Text)+len(p.id)+len(text)+len(text)/8+64)
		w.enqueue(p.dt.appendRow(b, p.id, text))
		return
	}
	p.fields[p.dt.Text] = jsonx.AppendBytes(nil, text)
	b, err := json.Marshal(p.fields)
	if err != nil { // unreachable: fields came from valid JSON
		w.err = err
		return
	}
	w.enqueue(b)
}

// enqueue assigns the next seq to an event and queues it for the next commit.
func (w *LogWriter) enqueue(ev json.RawMessage) int64 {
	w.seq++
	w.queue = append(w.queue, EventRow{Seq: w.seq, Event: ev})
	return w.seq
}

// commit writes the queued rows in one transaction, with reserve as the stream's new
// reservation, and retries while the database is away.
func (w *LogWriter) commit(reserve int64) error {
	w.drain()
	if w.err != nil {
		return w.err
	}
	if len(w.queue) == 0 && reserve >= w.reserved {
		// Nothing to store and nothing to give back. A reservation is raised only with
		// rows: raised alone, it would move away from a writer that continues past a dead
		// one's reservation before storing its first row, whose rows then never fit.
		return nil
	}
	a := Append{StreamID: w.streamID, Rows: w.queue, Reserve: reserve}
	w.queue = nil
	w.lastCommit = time.Now()
	ids := w.storing(a)
	w.j.tails.begin(ids)
	defer w.j.tails.end(ids)
	// A journal that commits stores them with the batch's next commit, asked for at once.
	grouped, tailed := w.j.batch.group, false
	err := w.j.persist(w.ctx, "log rows of stream "+w.streamID, func() error {
		if grouped {
			grouped = false // a retry writes alone
			err := w.j.appendGrouped(w.run, a)
			tailed = err == nil
			return err
		}
		return w.j.appendEvents(w.ctx, w.run, a)
	}, func(err error) bool { return errors.Is(err, ErrSeqExists) && w.j.landed(w.ctx, a.StreamID, a.Rows) })
	if err != nil {
		return w.failed(err)
	}
	if tailed {
		w.counted(a)
	} else {
		w.committed(a)
	}
	return nil
}

// reservation is the reservation a commit stores: the stored one while it still reaches
// half of ReserveAhead past the last seq handed out, else ReserveAhead past it. Raised
// in steps, it stays the same through most commits, and the SQL drivers update a
// stream's record only when it changes (a reply of a few hundred tokens never does).
func (w *LogWriter) reservation() int64 {
	if w.reserved >= w.seq+w.opts.ReserveAhead/2 {
		return w.reserved
	}
	return w.seq + w.opts.ReserveAhead
}

// submit hands the queued rows to the journal's batch, with reserve as the stream's new
// reservation; the batch commits them with every other stream's in its window and
// settles the writer ([LogWriter.settleBatch]).
func (w *LogWriter) submit(reserve int64) {
	f, err := fenceOf(w.run)
	if err != nil {
		w.failed(err)
		return
	}
	a := Append{StreamID: w.streamID, Rows: w.queue, Reserve: reserve}
	w.queue = nil
	w.inflight = true
	w.lastCommit = time.Now()
	w.j.batch.add(w, FencedAppend{Fence: f, Append: a})
}

// drain waits until the rows handed to the batch are settled, asking the batch to go
// at once: what is stored next must come after them. w.mu must be held.
func (w *LogWriter) drain() {
	for w.inflight {
		w.j.batch.kick()
		w.settled.Wait()
	}
}

// settleBatch records the outcome of the writer's rows in the batch.
func (w *LogWriter) settleBatch(a Append, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight = false
	w.settled.Broadcast()
	if err != nil {
		w.failed(err)
		return
	}
	w.committed(a)
	w.arm()
}

// commitAlone stores rows the batch could not, because the database was away, on
// their own, trying again as every write does, and settles the writer.
func (w *LogWriter) commitAlone(a Append, first error) {
	err := w.j.persist(w.ctx, "log rows of stream "+w.streamID, func() error {
		if first != nil {
			err := first // the batch's attempt counts as the first
			first = nil
			return err
		}
		return w.j.appendEvents(w.ctx, w.run, a)
	}, func(err error) bool { return errors.Is(err, ErrSeqExists) && w.j.landed(w.ctx, a.StreamID, a.Rows) })
	w.settleBatch(a, err)
}

// storing is the stream of a write of a, to mark as being stored while its rows go to
// the follow tail (see [tails.begin]); none when a has no rows.
func (w *LogWriter) storing(a Append) []string {
	if len(a.Rows) == 0 {
		return nil
	}
	return []string{w.streamID}
}

// committed records a stored append.
func (w *LogWriter) committed(a Append) {
	if len(a.Rows) > 0 {
		w.j.tails.add(w.streamID, a.Rows, w.j.now())
	}
	w.counted(a)
}

// counted records a stored append whose rows are already in the follow tail.
func (w *LogWriter) counted(a Append) {
	w.reserved = a.Reserve
	if len(a.Rows) > 0 {
		w.commits++
		w.rows += len(a.Rows)
	}
}

// stage holds the writer for a step's write ([Run.Step]) and gives the rows queued, the
// pending delta row sealed, with a new reservation; false (and the writer not held)
// when there is nothing to store. [LogWriter.settle] must follow a true.
func (w *LogWriter) stage() (Append, bool) {
	w.mu.Lock()
	w.drain()
	if w.closed || w.err != nil {
		w.mu.Unlock()
		return Append{}, false
	}
	w.seal()
	if len(w.queue) == 0 {
		w.mu.Unlock()
		return Append{}, false
	}
	return Append{StreamID: w.streamID, Rows: w.queue, Reserve: w.reservation()}, true
}

// settle ends a stage with the outcome of the step's write and lets the writer go.
func (w *LogWriter) settle(a Append, err error) {
	defer w.mu.Unlock()
	if err != nil {
		w.queue = nil
		w.failed(err)
		return
	}
	w.queue = nil
	w.lastCommit = time.Now()
	w.committed(a)
}

// arm starts the timer when something waits to be stored and no timer is running: the
// only clock read on the write path, at most once per commit.
func (w *LogWriter) arm() {
	if w.timer != nil || w.closed || (w.pending == nil && (len(w.queue) == 0 || w.inflight)) {
		return
	}
	w.timer = time.AfterFunc(w.due(time.Now()), w.tick)
}

// due is how long until the next thing to do: seal the pending row when it is
// FlushInterval old, commit the queue when CommitInterval has passed since the last commit.
func (w *LogWriter) due(now time.Time) time.Duration {
	next := time.Duration(math.MaxInt64)
	if w.pending != nil {
		next = w.pending.since.Add(w.opts.FlushInterval).Sub(now)
	}
	if len(w.queue) > 0 && !w.inflight {
		next = min(next, w.lastCommit.Add(w.opts.CommitInterval).Sub(now))
	}
	return max(next, 0)
}

// tick is the timer: it seals a pending row that is old enough, commits once the commit
// interval allows, and re-arms while anything is left.
func (w *LogWriter) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = nil
	if w.closed || w.err != nil {
		return
	}
	now := time.Now()
	if w.pending != nil && now.Sub(w.pending.since) >= w.opts.FlushInterval {
		w.seal()
		// A row sealed by age means the deltas come slowly: a stream that waits for its
		// model or a tool does not keep the text buffer meanwhile.
		w.text = nil
	}
	if len(w.queue) > 0 && !w.inflight && now.Sub(w.lastCommit) >= w.opts.CommitInterval {
		if w.submit(w.reservation()); w.err != nil {
			return
		}
	}
	w.arm()
}

// Flush seals the pending delta row and commits everything queued, synchronously.
func (w *LogWriter) Flush(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.seal()
	return w.commit(w.reservation())
}

// Close flushes and stops the writer. It does not finish the stream: a parked run's
// stream continues when the run resumes; use [LogWriter.Finish] or [LogWriter.WriteEnd]
// when the run ends. The reservation it stores is exactly the last seq it handed out, so
// the next writer continues right after it.
func (w *LogWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.seal()
	err := w.commit(w.seq)
	w.stop()
	return err
}

// WriteEnd writes the stream's last event, of one of the policy's ending types
// ([LogPolicy.Ends]), and ends the stream with it as [LogWriter.Finish] does: one write
// stores the event, every row still queued, and the stream's end. It returns the event's
// seq; the writer is closed after.
func (w *LogWriter) WriteEnd(ctx context.Context, typ string, event json.RawMessage) (int64, error) {
	if !w.policy.ends(typ) {
		return 0, fmt.Errorf("journal: WriteEnd: %q does not end a run", typ)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	w.seal()
	seq := w.enqueue(bytes.Clone(event))
	return seq, w.finish()
}

// Finish ends the stream: it seals the pending delta row and, in one write, stores every
// queued row and marks the stream finished (fenced by the run's lease for a durable
// run), then closes the writer. After a failed commit the stream is still finished,
// without the rows that could not be stored, so followers do not wait for rows that
// will never come; the commit's error is returned. Calling it again returns the first
// call's result.
func (w *LogWriter) Finish(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		if w.finished || w.err != nil {
			return w.err
		}
		return ErrClosed
	}
	w.seal()
	return w.finish()
}

// finish stores the queue and ends the stream in one write, and closes the writer.
func (w *LogWriter) finish() error {
	w.drain()
	rows := w.queue
	if w.err != nil {
		rows = nil // their seqs cannot be honoured any more
	}
	w.queue = nil
	w.stop()
	// With rows, on a journal that commits, the end joins the batch's next commit.
	grouped := w.j.batch.group && len(rows) > 0
	err := w.j.persist(w.ctx, "end of stream "+w.streamID, func() error {
		if grouped {
			grouped = false // a retry writes alone
			return w.j.finishGrouped(w.streamID, w.run, rows)
		}
		return w.j.finishStream(w.ctx, w.streamID, w.run, rows...)
	},
		func(err error) bool {
			st, gerr := w.j.d.GetStream(w.ctx, w.streamID)
			return errors.Is(err, ErrSeqExists) && gerr == nil && st.FinishedAt != nil && w.j.landed(w.ctx, w.streamID, rows)
		})
	if err != nil {
		return w.failed(err)
	}
	w.finished = true
	if len(rows) > 0 {
		w.commits++
		w.rows += len(rows)
	}
	return w.err
}

// failed records the writer's first failure to store its rows and returns it. The
// follow tail stops trusting this writer to have stored every row: a lost lease means
// another instance may continue the stream.
func (w *LogWriter) failed(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("journal: log writer for stream %s: %w", w.streamID, err)
	}
	w.j.tails.release(w.tail, w)
	return w.err
}

// stop closes the writer, stops its timer and takes it off its run.
func (w *LogWriter) stop() {
	w.closed = true
	w.j.tails.release(w.tail, w)
	w.j.batch.live.Add(-1)
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if w.run != nil {
		w.run.detach(w)
	}
}

// StreamID returns the id of the stream the writer appends to.
func (w *LogWriter) StreamID() string { return w.streamID }

// LastSeq returns the last seq handed out (committed or queued).
func (w *LogWriter) LastSeq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// Stats reports committed rows and commits so far.
func (w *LogWriter) Stats() LogStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return LogStats{Rows: w.rows, Commits: w.commits}
}
