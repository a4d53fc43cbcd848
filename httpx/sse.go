package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bbc28f59/engine/internal/bufpool"
)

// Defaults of [SSEOptions].
const (
	// DefaultSSEHeartbeat is how long a stream may stay silent before a ": ping" comment
	// keeps proxies and load balancers from closing it.
	DefaultSSEHeartbeat = 15 * time.Second
	// DefaultSSEFlushWindow bounds how long a frame may wait in the buffer while a burst
	// of frames is coalesced into one flush.
	DefaultSSEFlushWindow = 2 * time.Millisecond
)

// SSEContentType is the content type of every SSE response.
const SSEContentType = "text/event-stream"

var (
	// ErrSSEClosed is returned by writes on an [SSEWriter] after Close.
	ErrSSEClosed = errors.New("httpx: SSE writer is closed")
	// ErrSSEIDOrder is returned by [SSEWriter.WriteEvent] for an id not above the last
	// one sent: ids are row seqs, and a follower resuming after the last id it holds
	// would otherwise miss or repeat frames. Nothing is written and the stream goes on.
	ErrSSEIDOrder = errors.New("httpx: SSE event id does not increase")
)

// SSEOptions tunes an [SSEWriter]; the zero value gives the defaults.
type SSEOptions struct {
	// Heartbeat is the silence after which a ": ping" comment is sent; 0 means
	// DefaultSSEHeartbeat and a negative value turns heartbeats off.
	Heartbeat time.Duration
	// FlushWindow is the longest a written frame waits before it is flushed to the
	// client. A frame written after at least this long without a flush goes out at once;
	// frames that follow within the window share one flush. 0 means
	// DefaultSSEFlushWindow; a negative value flushes every frame.
	FlushWindow time.Duration

	// HoldHeaders leaves the status and headers to go out with the first frame instead
	// of flushing them at once: for a stream whose first frame is ready (a follower
	// resuming from stored rows), one write instead of two.
	HoldHeaders bool

	clock sseClock // nil means the real clock; tests set a fake one
}

// SSEWriter writes a text/event-stream response: LF line endings only, an optional
// "id:" line, the data as "data:" lines, and a blank line per frame. It flushes at once
// when the stream was idle and coalesces bursts into one flush per FlushWindow, so a
// token stream costs few syscalls without delaying the first token. It sends heartbeat
// comments while idle.
//
// The writer is safe for concurrent use. A write or flush error (the client went away)
// is kept: every later call returns it, and [SSEWriter.Err] reports it. Close must be
// called before the handler returns, because the flush and heartbeat timers write to
// the response; for the same reason, once wrapped, the response is written only through
// the SSEWriter.
type SSEWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	clock  sseClock
	window time.Duration
	beat   time.Duration

	frame      *[]byte   // where frames are built: from the shared pool, given back at each flush so a quiet stream holds none
	dirty      bool      // bytes written since the last flush
	lastFlush  time.Time // when bytes last went to the client: the flush window and heartbeats count from it
	flushTimer sseTimer  // nil until the first delayed flush
	flushArmed bool
	beatTimer  sseTimer
	noFlush    bool  // the ResponseWriter cannot flush; frames go out when it decides
	lastID     int64 // the last id sent, so ids stay strictly increasing
	closed     bool
	err        error
}

// NewSSEWriter sets the SSE response headers (Content-Type text/event-stream,
// Cache-Control no-cache, X-Accel-Buffering no so nginx does not buffer), sends them
// with status 200 unless the handler already wrote a status, and starts the heartbeat.
// Set any other header before calling it. A failure to send the headers is kept and
// returned by the first write.
func NewSSEWriter(w http.ResponseWriter, opts SSEOptions) *SSEWriter {
	s := &SSEWriter{
		w:      w,
		rc:     http.NewResponseController(w),
		clock:  opts.clock,
		window: opts.FlushWindow,
		beat:   opts.Heartbeat,
	}
	if s.clock == nil {
		s.clock = realClock{}
	}
	if s.window == 0 {
		s.window = DefaultSSEFlushWindow
	}
	if s.beat == 0 {
		s.beat = DefaultSSEHeartbeat
	}
	h := w.Header()
	h.Set("Content-Type", SSEContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")

	s.mu.Lock()
	defer s.mu.Unlock()
	if !opts.HoldHeaders {
		s.flushLocked(s.clock.Now()) // commits the status and headers so the client sees the stream open
	}
	s.lastFlush = time.Time{} // no frame went out yet: the first frame goes out at once
	if s.beat > 0 {
		s.beatTimer = s.clock.AfterFunc(s.beat, s.onHeartbeat)
	}
	return s
}

// WriteEvent writes one frame. An id above zero is sent as the frame's "id:" line (the
// stored row's seq) and must be above the previous one ([ErrSSEIDOrder]); 0 or a
// negative id sends none. data is normally one JSON value and
// becomes one "data:" line; data holding line breaks (LF, CRLF or CR) is split into
// several "data:" lines, which a reader joins back with LF. data is copied, so the
// caller may reuse its buffer (agui.AppendJSON into one slice per stream, for instance).
func (s *SSEWriter) WriteEvent(id int64, data []byte) error {
	return s.WriteEventFunc(id, func(dst []byte) []byte { return append(dst, data...) })
}

// WriteEventFunc is [SSEWriter.WriteEvent] for data that appendData appends straight into
// the frame being written, so an event encoded per token needs no buffer of its own.
// appendData must only append to dst and return the result; it runs under the writer's
// lock and must not call the writer. Line breaks in what it appends are split into
// several "data:" lines, as WriteEvent does.
func (s *SSEWriter) WriteEventFunc(id int64, appendData func(dst []byte) []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if id > 0 {
		if id <= s.lastID {
			return fmt.Errorf("%w: %d after %d", ErrSSEIDOrder, id, s.lastID)
		}
		s.lastID = id
	}
	*s.scratch() = appendSSEFrame((*s.frame)[:0], id, appendData)
	return s.emit(*s.frame, false)
}

// WriteDone writes the "data: [DONE]" frame that ends a run stream and flushes it at
// once. It does not close the writer.
func (s *SSEWriter) WriteDone() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	*s.scratch() = append((*s.frame)[:0], "data: [DONE]\n\n"...)
	return s.emit(*s.frame, true)
}

// Comment writes a comment, which readers ignore; text with line breaks becomes several
// comment lines. It follows the same flush policy as events.
func (s *SSEWriter) Comment(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	*s.scratch() = appendSSELines((*s.frame)[:0], ": ", []byte(text))
	return s.emit(*s.frame, false)
}

// Flush sends everything written so far to the client now.
func (s *SSEWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if s.dirty {
		s.flushLocked(s.clock.Now())
	}
	return s.err
}

// Close stops the timers and flushes what is buffered. It returns the first write or
// flush error of the stream, if any. Calling it again is harmless.
func (s *SSEWriter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.err
	}
	s.closed = true
	if s.flushTimer != nil {
		s.flushTimer.Stop()
	}
	if s.beatTimer != nil {
		s.beatTimer.Stop()
	}
	if s.dirty && s.err == nil {
		s.flushLocked(s.clock.Now())
	}
	s.release()
	return s.err
}

// Err reports the first write or flush error, typically the client disconnecting.
func (s *SSEWriter) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *SSEWriter) usable() error {
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return ErrSSEClosed
	}
	return nil
}

// scratch returns the buffer frames are built in, taking one from the shared pool when
// the writer holds none. s.mu must be held.
func (s *SSEWriter) scratch() *[]byte {
	if s.frame == nil {
		s.frame = bufpool.Get()
	}
	return s.frame
}

// release gives the frame buffer back to the pool. s.mu must be held.
func (s *SSEWriter) release() {
	if s.frame != nil {
		bufpool.Put(s.frame)
		s.frame = nil
	}
}

// emit writes frame (built in s.frame) and applies the flush policy: flush now when
// forced or when the stream has not flushed for a whole window, otherwise make sure a
// timer will. A frame written while the timer is armed goes out with it, so a burst
// reads the clock once per window rather than once per frame.
func (s *SSEWriter) emit(frame []byte, force bool) error {
	if _, err := s.w.Write(frame); err != nil {
		s.err = err
		return err
	}
	s.dirty = true
	if s.flushArmed && !force {
		return s.err
	}
	now := s.clock.Now()
	if force || s.window < 0 || now.Sub(s.lastFlush) >= s.window {
		s.flushLocked(now)
		return s.err
	}
	s.flushArmed = true
	if s.flushTimer == nil {
		s.flushTimer = s.clock.AfterFunc(s.window, s.onFlushTimer)
	} else {
		s.flushTimer.Reset(s.window)
	}
	return s.err
}

// flushLocked sends what is buffered and gives the frame buffer back: a burst of frames
// within one flush window builds them all in one buffer, and a stream that waits between
// frames holds none.
func (s *SSEWriter) flushLocked(now time.Time) {
	s.dirty = false
	s.lastFlush = now
	s.release()
	if s.noFlush || s.err != nil {
		return
	}
	if err := s.rc.Flush(); err != nil {
		if errors.Is(err, http.ErrNotSupported) {
			s.noFlush = true
			return
		}
		s.err = err
	}
}

func (s *SSEWriter) onFlushTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushArmed = false
	if s.closed || s.err != nil || !s.dirty {
		return
	}
	s.flushLocked(s.clock.Now())
}

// onHeartbeat pings when nothing has gone to the client for a whole interval and re-arms
// itself for the end of the current silence, so busy streams never reset a timer. The
// silence counts from the last flush: what a proxy sees. Bytes written and not flushed
// yet are on their way within the flush window, so they do not call for a ping.
func (s *SSEWriter) onHeartbeat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.err != nil {
		return
	}
	now := s.clock.Now()
	next := s.beat
	switch idle := now.Sub(s.lastFlush); {
	case idle < s.beat:
		next = s.beat - idle
	case !s.dirty:
		if _, err := io.WriteString(s.w, ": ping\n\n"); err != nil {
			s.err = err
			return
		}
		s.flushLocked(now)
		if s.err != nil {
			return
		}
	}
	s.beatTimer.Reset(next)
}

// appendSSEFrame appends one complete frame to dst, its data appended by appendData.
// Data holding line breaks, rare for JSON, is moved out and written again as lines.
func appendSSEFrame(dst []byte, id int64, appendData func([]byte) []byte) []byte {
	if id > 0 {
		dst = append(dst, "id: "...)
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, '\n')
	}
	head := len(dst)
	dst = append(dst, "data: "...)
	start := len(dst)
	dst = appendData(dst)
	data := dst[start:]
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		return append(dst, '\n', '\n')
	}
	return appendSSELines(dst[:head], "data: ", bytes.Clone(data))
}

// appendSSELines writes text as prefixed lines, splitting at LF, CRLF and CR, then the
// blank line that ends the frame.
func appendSSELines(dst []byte, prefix string, text []byte) []byte {
	for {
		i := bytes.IndexAny(text, "\r\n")
		dst = append(dst, prefix...)
		if i < 0 {
			dst = append(dst, text...)
			dst = append(dst, '\n')
			break
		}
		dst = append(dst, text[:i]...)
		dst = append(dst, '\n')
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return append(dst, '\n')
}

// sseClock is the writer's view of time, replaced by a fake in tests so the flush and
// heartbeat policy is tested without sleeping.
type sseClock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) sseTimer
}

type sseTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) sseTimer { return time.AfterFunc(d, f) }
