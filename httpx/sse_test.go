package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseRecorder is a ResponseWriter that remembers what had been flushed, so tests can
// tell buffered bytes from bytes the client could see.
type sseRecorder struct {
	mu       sync.Mutex
	header   http.Header
	status   int
	body     bytes.Buffer
	flushed  int // len(body) at the last flush
	flushes  int
	writeErr error // returned by Write once set
	flushErr error // returned by Flush once set
}

func newSSERecorder() *sseRecorder { return &sseRecorder{header: http.Header{}} }

func (r *sseRecorder) Header() http.Header { return r.header }

func (r *sseRecorder) WriteHeader(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = code
	}
}

func (r *sseRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.writeErr != nil {
		return 0, r.writeErr
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// FlushError is what http.ResponseController calls, so flush failures can be simulated.
func (r *sseRecorder) FlushError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flushErr != nil {
		return r.flushErr
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.flushes++
	r.flushed = r.body.Len()
	return nil
}

// visible is what a client would have received so far.
func (r *sseRecorder) visible() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()[:r.flushed]
}

func (r *sseRecorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.String()
}

// fakeClock runs timers only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	reads  int // calls to Now
}

type fakeTimer struct {
	c      *fakeClock
	at     time.Time
	f      func()
	active bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.now
}

// Reads returns how many times the clock was read.
func (c *fakeClock) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) sseTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f, active: true}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now.Add(d), true
	return was
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

// Advance moves time forward, firing due timers in order, each at its own instant. A
// timer that keeps re-arming itself for the same instant would make it spin, so it
// panics after a million firings: far more than any test makes.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for fired := 0; ; fired++ {
		if fired == 1_000_000 {
			panic("fakeClock: a timer keeps firing without time passing")
		}
		c.mu.Lock()
		var due []*fakeTimer
		for _, t := range c.timers {
			if t.active && !t.at.After(end) {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			c.now = end
			c.mu.Unlock()
			return
		}
		sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
		t := due[0]
		t.active = false
		c.now = t.at
		c.mu.Unlock()
		t.f()
	}
}

// fireStopped runs the functions of the stopped timers, as a real timer that fired just
// before it was stopped would.
func (c *fakeClock) fireStopped() {
	c.mu.Lock()
	var fs []func()
	for _, t := range c.timers {
		if !t.active {
			fs = append(fs, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

func newTestSSEWriter(t *testing.T, opts SSEOptions) (*SSEWriter, *sseRecorder, *fakeClock) {
	t.Helper()
	rec := newSSERecorder()
	clock := newFakeClock()
	opts.clock = clock
	w := NewSSEWriter(rec, opts)
	t.Cleanup(func() { _ = w.Close() })
	return w, rec, clock
}

func TestSSEWriterHeaders(t *testing.T) {
	t.Parallel()
	_, rec, _ := newTestSSEWriter(t, SSEOptions{})
	for k, want := range map[string]string{
		"Content-Type":      "text/event-stream",
		"Cache-Control":     "no-cache",
		"X-Accel-Buffering": "no",
	} {
		if got := rec.header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if rec.status != http.StatusOK || rec.flushes != 1 {
		t.Fatalf("status %d after %d flushes; the constructor must commit a 200", rec.status, rec.flushes)
	}
}

func TestSSEWriterFrameBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		write func(w *SSEWriter) error
		want  string
	}{
		{"id and json", func(w *SSEWriter) error { return w.WriteEvent(7, []byte(`{"type":"RUN_STARTED"}`)) },
			"id: 7\ndata: {\"type\":\"RUN_STARTED\"}\n\n"},
		{"zero id sends none", func(w *SSEWriter) error { return w.WriteEvent(0, []byte(`{}`)) },
			"data: {}\n\n"},
		{"negative id sends none", func(w *SSEWriter) error { return w.WriteEvent(-1, []byte(`"x"`)) },
			"data: \"x\"\n\n"},
		{"empty data", func(w *SSEWriter) error { return w.WriteEvent(1, nil) },
			"id: 1\ndata: \n\n"},
		{"LF splits", func(w *SSEWriter) error { return w.WriteEvent(2, []byte("a\nb")) },
			"id: 2\ndata: a\ndata: b\n\n"},
		{"CRLF and CR split, never sent", func(w *SSEWriter) error { return w.WriteEvent(0, []byte("a\r\nb\rc")) },
			"data: a\ndata: b\ndata: c\n\n"},
		{"trailing newline keeps an empty line", func(w *SSEWriter) error { return w.WriteEvent(0, []byte("a\n")) },
			"data: a\ndata: \n\n"},
		{"bare CR splits", func(w *SSEWriter) error { return w.WriteEvent(0, []byte("a\rid: 9")) },
			"data: a\ndata: id: 9\n\n"},
		{"leading bare CR splits", func(w *SSEWriter) error { return w.WriteEvent(0, []byte("\rretry: 1")) },
			"data: \ndata: retry: 1\n\n"},
		{"done", func(w *SSEWriter) error { return w.WriteDone() },
			"data: [DONE]\n\n"},
		{"comment", func(w *SSEWriter) error { return w.Comment("keep\nalive") },
			": keep\n: alive\n\n"},
		{"large id", func(w *SSEWriter) error { return w.WriteEvent(9007199254740993, []byte(`1`)) },
			"id: 9007199254740993\ndata: 1\n\n"},
		{"func appends in place", func(w *SSEWriter) error {
			return w.WriteEventFunc(3, func(b []byte) []byte { return append(b, `{"a":1}`...) })
		}, "id: 3\ndata: {\"a\":1}\n\n"},
		{"func line breaks split", func(w *SSEWriter) error {
			return w.WriteEventFunc(4, func(b []byte) []byte { return append(b, "a\r\nb\nc\r"...) })
		}, "id: 4\ndata: a\ndata: b\ndata: c\ndata: \n\n"},
		{"func bare CR splits", func(w *SSEWriter) error {
			return w.WriteEventFunc(5, func(b []byte) []byte { return append(b, "a\rb"...) })
		}, "id: 5\ndata: a\ndata: b\n\n"},
		{"comment bare CR splits", func(w *SSEWriter) error { return w.Comment("a\rdata: b") },
			": a\n: data: b\n\n"},
		{"func past the buffer", func(w *SSEWriter) error {
			return w.WriteEventFunc(0, func(b []byte) []byte { return append(b, strings.Repeat("x", 5000)+"\ny"...) })
		}, "data: " + strings.Repeat("x", 5000) + "\ndata: y\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, rec, _ := newTestSSEWriter(t, SSEOptions{})
			if err := tc.write(w); err != nil {
				t.Fatalf("write: %v", err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := rec.visible(); got != tc.want {
				t.Fatalf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSSEWriterCoalescesBursts(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{FlushWindow: 4 * time.Millisecond})
	frame := func(id int64) string { return "id: " + string(rune('0'+id)) + "\ndata: {}\n\n" }

	// An idle stream flushes the first frame at once.
	if err := w.WriteEvent(1, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := rec.visible(); got != frame(1) {
		t.Fatalf("after the first frame the client saw %q", got)
	}
	// Frames right behind it wait for the window and then share one flush.
	flushes := rec.flushes
	for id := int64(2); id <= 4; id++ {
		if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.visible(); got != frame(1) {
		t.Fatalf("burst flushed early: client saw %q", got)
	}
	clock.Advance(3 * time.Millisecond)
	if rec.flushes != flushes {
		t.Fatalf("flushed before the window ended")
	}
	clock.Advance(time.Millisecond)
	if got, want := rec.visible(), frame(1)+frame(2)+frame(3)+frame(4); got != want {
		t.Fatalf("after the window the client saw %q, want %q", got, want)
	}
	if rec.flushes != flushes+1 {
		t.Fatalf("the burst took %d flushes, want 1", rec.flushes-flushes)
	}
	// Once a whole window passes without a flush, exactly, the next frame goes out at
	// once again.
	clock.Advance(4 * time.Millisecond)
	if err := w.WriteEvent(5, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := rec.visible(); got != rec.all() {
		t.Fatalf("frame after idle not flushed at once: visible %q of %q", got, rec.all())
	}
}

// A burst builds its frames in one buffer from the shared pool, and the writer gives it
// back when the burst is flushed: a stream waiting for its next frame holds none.
func TestSSEWriterHoldsAFrameBufferOnlyUntilTheFlush(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{FlushWindow: 4 * time.Millisecond})
	holds := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.frame != nil
	}
	if err := w.WriteEvent(1, []byte(`{}`)); err != nil { // flushed at once
		t.Fatal(err)
	}
	if holds() {
		t.Fatal("the writer kept its frame buffer after a flush")
	}
	if err := w.WriteEvent(2, []byte(`{}`)); err != nil { // waits for the window
		t.Fatal(err)
	}
	if !holds() {
		t.Fatal("a frame waiting for the window has no buffer to be built in")
	}
	held := w.frame
	if err := w.WriteEvent(3, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if w.frame != held {
		t.Fatal("a frame in the same window took another buffer")
	}
	clock.Advance(4 * time.Millisecond)
	if holds() {
		t.Fatal("the writer kept its frame buffer after the window's flush")
	}
	if got, want := rec.visible(), "id: 1\ndata: {}\n\nid: 2\ndata: {}\n\nid: 3\ndata: {\"a\":1}\n\n"; got != want {
		t.Fatalf("client saw %q, want %q", got, want)
	}
	if err := w.Comment("ping"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if holds() {
		t.Fatal("a closed writer kept its frame buffer")
	}
}

// A token stream writes frames far faster than the flush window, and on some machines a
// clock read costs as much as framing an event: frames written while a flush is armed
// leave the clock alone.
func TestSSEWriterBurstReadsTheClockOncePerWindow(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{FlushWindow: 4 * time.Millisecond})
	for round := range 3 {
		before := clock.Reads()
		for id := int64(1); id <= 100; id++ {
			if err := w.WriteEvent(int64(round)*100+id, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		// The stream starts idle, so its first frame flushes at once and the second arms
		// the timer; later rounds start right after the timer's flush, so their first frame
		// arms it. Each of those reads the clock once; the other frames do not.
		want := 1
		if round == 0 {
			want = 2
		}
		if n := clock.Reads() - before; n != want {
			t.Fatalf("round %d: 100 frames read the clock %d times, want %d", round, n, want)
		}
		clock.Advance(4 * time.Millisecond)
		if rec.visible() != rec.all() {
			t.Fatalf("round %d: the burst's tail was not flushed by the window's timer", round)
		}
	}
}

// Silence is what the client sees: bytes written and waiting for the window's flush are
// on their way, so the heartbeat does not ping over them, and it counts from that flush.
func TestSSEWriterHeartbeatCountsFromTheLastFlush(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{Heartbeat: 15 * time.Second, FlushWindow: 20 * time.Second})
	one, two := "id: 1\ndata: {}\n\n", "id: 2\ndata: {}\n\n"
	if err := w.WriteEvent(1, []byte(`{}`)); err != nil { // idle: flushed at once
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if err := w.WriteEvent(2, []byte(`{}`)); err != nil { // waits for the window, until 21 s
		t.Fatal(err)
	}
	clock.Advance(14 * time.Second) // 15 s since the last flush, but frame 2 is pending
	if got := rec.all(); got != one+two {
		t.Fatalf("pinged over a pending frame: wrote %q", got)
	}
	clock.Advance(6 * time.Second) // 21 s: the window flushes frame 2
	if got := rec.visible(); got != one+two {
		t.Fatalf("client saw %q after the window", got)
	}
	clock.Advance(14 * time.Second) // 35 s: 14 s after that flush
	if got := rec.all(); got != one+two {
		t.Fatalf("pinged 14 s after a flush: wrote %q", got)
	}
	clock.Advance(time.Second) // 36 s: 15 s of silence
	if got := rec.visible(); got != one+two+": ping\n\n" {
		t.Fatalf("client saw %q, want a ping after 15 s of silence", got)
	}
}

func TestSSEWriterNeverLosesTheTail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		finish func(w *SSEWriter) error
		want   string
	}{
		{"Close flushes", func(w *SSEWriter) error { return w.Close() }, ""},
		{"Flush flushes", func(w *SSEWriter) error { return w.Flush() }, ""},
		{"WriteDone flushes", func(w *SSEWriter) error { return w.WriteDone() }, "data: [DONE]\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, rec, _ := newTestSSEWriter(t, SSEOptions{})
			for id := int64(1); id <= 3; id++ {
				if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
			if rec.visible() == rec.all() {
				t.Fatal("test premise: the tail should still be buffered")
			}
			if err := tc.finish(w); err != nil {
				t.Fatal(err)
			}
			want := "id: 1\ndata: {}\n\nid: 2\ndata: {}\n\nid: 3\ndata: {}\n\n" + tc.want
			if got := rec.visible(); got != want {
				t.Fatalf("client saw %q, want %q", got, want)
			}
		})
	}
}

// A flush goes out only for bytes not flushed yet: the window's timer after an explicit
// Flush, a second Flush and Close on a clean stream leave the connection alone.
func TestSSEWriterFlushesOnlyWhatIsPending(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{FlushWindow: 4 * time.Millisecond})
	for id := int64(1); id <= 2; id++ { // the first goes out at once, the second waits
		if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if rec.visible() != rec.all() {
		t.Fatal("Flush left bytes behind")
	}
	flushes := rec.flushes
	clock.Advance(4 * time.Millisecond)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rec.flushes != flushes {
		t.Fatalf("%d flushes with nothing pending", rec.flushes-flushes)
	}
}

func TestSSEWriterNegativeWindowFlushesEveryFrame(t *testing.T) {
	t.Parallel()
	w, rec, _ := newTestSSEWriter(t, SSEOptions{FlushWindow: -1})
	for id := int64(1); id <= 3; id++ {
		if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if rec.visible() != rec.all() {
			t.Fatalf("frame %d was not flushed", id)
		}
	}
	if rec.flushes != 4 { // headers + 3 frames
		t.Fatalf("flushes = %d, want 4", rec.flushes)
	}
}

func TestSSEWriterHeartbeatOnlyWhenIdle(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{Heartbeat: 15 * time.Second})
	clock.Advance(10 * time.Second)
	if err := w.WriteEvent(1, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second) // 15 s since start, 5 s since the frame: no ping
	if got, want := rec.visible(), "id: 1\ndata: {}\n\n"; got != want {
		t.Fatalf("client saw %q, want %q", got, want)
	}
	clock.Advance(10 * time.Second) // 15 s of silence
	if got, want := rec.visible(), "id: 1\ndata: {}\n\n: ping\n\n"; got != want {
		t.Fatalf("client saw %q, want %q", got, want)
	}
	clock.Advance(15 * time.Second)
	if got, want := rec.visible(), "id: 1\ndata: {}\n\n: ping\n\n: ping\n\n"; got != want {
		t.Fatalf("client saw %q, want %q", got, want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if got := rec.all(); got != "id: 1\ndata: {}\n\n: ping\n\n: ping\n\n" {
		t.Fatalf("wrote after Close: %q", got)
	}
}

// The zero SSEOptions mean the documented defaults: a frame written within
// DefaultSSEFlushWindow of a flush waits for the window, and DefaultSSEHeartbeat of
// silence brings a ping.
func TestSSEWriterDefaults(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{})
	one, two := "id: 1\ndata: {}\n\n", "id: 2\ndata: {}\n\n"
	for id := int64(1); id <= 2; id++ {
		if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(DefaultSSEFlushWindow - time.Nanosecond)
	if got := rec.visible(); got != one {
		t.Fatalf("client saw %q before the default window passed", got)
	}
	clock.Advance(time.Nanosecond)
	if got := rec.visible(); got != one+two {
		t.Fatalf("client saw %q once the default window passed", got)
	}
	clock.Advance(DefaultSSEHeartbeat - time.Nanosecond)
	if got := rec.all(); got != one+two {
		t.Fatalf("pinged before the default heartbeat: %q", got)
	}
	clock.Advance(time.Nanosecond)
	if got := rec.visible(); got != one+two+": ping\n\n" {
		t.Fatalf("client saw %q, want a ping after the default heartbeat", got)
	}
}

func TestSSEWriterHeartbeatOff(t *testing.T) {
	t.Parallel()
	_, rec, clock := newTestSSEWriter(t, SSEOptions{Heartbeat: -1})
	clock.Advance(time.Hour)
	if got := rec.all(); got != "" {
		t.Fatalf("wrote %q with heartbeats off", got)
	}
}

func TestSSEWriterClientGone(t *testing.T) {
	t.Parallel()
	gone := errors.New("connection reset by peer")
	cases := []struct {
		name    string
		breakIt func(r *sseRecorder)
	}{
		{"write fails", func(r *sseRecorder) { r.writeErr = gone }},
		{"flush fails", func(r *sseRecorder) { r.flushErr = gone }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, rec, clock := newTestSSEWriter(t, SSEOptions{})
			rec.mu.Lock()
			tc.breakIt(rec)
			rec.mu.Unlock()
			if err := w.WriteEvent(1, []byte(`{}`)); !errors.Is(err, gone) {
				t.Fatalf("WriteEvent error = %v, want %v", err, gone)
			}
			if err := w.Err(); !errors.Is(err, gone) {
				t.Fatalf("Err() = %v", err)
			}
			sent := rec.all()
			clock.Advance(time.Hour)
			if got := rec.all(); got != sent {
				t.Fatalf("timers wrote %q to a broken stream", strings.TrimPrefix(got, sent))
			}
			for _, call := range []func() error{
				func() error { return w.WriteEvent(2, []byte(`{}`)) },
				w.WriteDone, w.Flush, func() error { return w.Comment("x") }, w.Close,
			} {
				if err := call(); !errors.Is(err, gone) {
					t.Fatalf("later call error = %v, want %v", err, gone)
				}
			}
		})
	}
}

func TestSSEWriterTimerFailureIsKept(t *testing.T) {
	t.Parallel()
	gone := errors.New("broken pipe")
	w, rec, clock := newTestSSEWriter(t, SSEOptions{})
	_ = w.WriteEvent(1, []byte(`{}`))
	_ = w.WriteEvent(2, []byte(`{}`)) // buffered behind the window
	rec.mu.Lock()
	rec.flushErr = gone
	rec.mu.Unlock()
	clock.Advance(time.Second)
	if err := w.Err(); !errors.Is(err, gone) {
		t.Fatalf("Err() after a failed timer flush = %v", err)
	}
}

func TestSSEWriterIDsMustIncrease(t *testing.T) {
	t.Parallel()
	w, rec, _ := newTestSSEWriter(t, SSEOptions{})
	steps := []struct {
		id      int64
		wantErr bool
	}{{5, false}, {0, false}, {5, true}, {4, true}, {-1, false}, {6, false}}
	for _, st := range steps {
		err := w.WriteEvent(st.id, []byte(`{}`))
		if got := errors.Is(err, ErrSSEIDOrder); got != st.wantErr {
			t.Fatalf("WriteEvent(%d) error = %v, want ErrSSEIDOrder: %v", st.id, err, st.wantErr)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("an id-order error must not break the stream: %v", err)
	}
	want := "id: 5\ndata: {}\n\ndata: {}\n\ndata: {}\n\nid: 6\ndata: {}\n\n"
	if got := rec.all(); got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

func TestSSEWriterClosed(t *testing.T) {
	t.Parallel()
	w, _, _ := newTestSSEWriter(t, SSEOptions{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvent(1, []byte(`{}`)); !errors.Is(err, ErrSSEClosed) {
		t.Fatalf("WriteEvent after Close = %v, want ErrSSEClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// A real timer can fire just as Close runs and then wait for the lock: when it gets it,
// the stream is closed and the timer must leave the response alone.
func TestSSEWriterTimersFiringAfterClose(t *testing.T) {
	t.Parallel()
	w, rec, clock := newTestSSEWriter(t, SSEOptions{Heartbeat: 15 * time.Second})
	for id := int64(1); id <= 2; id++ { // the second arms the flush timer
		if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sent, flushes := rec.all(), rec.flushes
	clock.Advance(time.Hour) // the timers are stopped: nothing fires
	clock.fireStopped()      // as if both had fired just before Close stopped them
	if got := rec.all(); got != sent || rec.flushes != flushes {
		t.Fatalf("timers wrote %q and flushed %d times after Close", strings.TrimPrefix(got, sent), rec.flushes-flushes)
	}
}

// plainWriter cannot flush, like a middleware wrapper that hides http.Flusher.
type plainWriter struct {
	h    http.Header
	body bytes.Buffer
}

func (p *plainWriter) Header() http.Header         { return p.h }
func (p *plainWriter) Write(b []byte) (int, error) { return p.body.Write(b) }
func (p *plainWriter) WriteHeader(int)             {}

// refusingWriter says at every flush that it cannot flush, as a wrapper around a writer
// without http.Flusher does, and counts how often it was asked.
type refusingWriter struct {
	plainWriter
	asked int
}

func (r *refusingWriter) FlushError() error {
	r.asked++
	return fmt.Errorf("wrapped: %w", http.ErrNotSupported)
}

func TestSSEWriterWithoutFlusher(t *testing.T) {
	t.Parallel()
	pw := &plainWriter{h: http.Header{}}
	w := NewSSEWriter(pw, SSEOptions{clock: newFakeClock()})
	if err := w.WriteEvent(1, []byte(`{}`)); err != nil {
		t.Fatalf("WriteEvent on a writer that cannot flush: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := pw.body.String(); got != "id: 1\ndata: {}\n\n" {
		t.Fatalf("wrote %q", got)
	}
}

// Once a writer says it cannot flush, the stream stops asking.
func TestSSEWriterAsksOnceWhetherItCanFlush(t *testing.T) {
	t.Parallel()
	rw := &refusingWriter{plainWriter: plainWriter{h: http.Header{}}}
	w := NewSSEWriter(rw, SSEOptions{clock: newFakeClock(), FlushWindow: -1})
	for id := int64(1); id <= 3; id++ {
		if err := w.WriteEvent(id, []byte(`{}`)); err != nil {
			t.Fatalf("WriteEvent on a writer that cannot flush: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if rw.asked != 1 {
		t.Fatalf("asked the writer to flush %d times, want once", rw.asked)
	}
}
