package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
)

// DefaultSSEMaxLine is the longest line, and the most data in one frame, an
// [SSEReader] accepts unless told otherwise: 1 MiB.
const DefaultSSEMaxLine = 1 << 20

var (
	// ErrSSELineTooLong reports a line longer than the reader's limit. It stops the
	// reader: a peer that never sends a line break must not make it buffer forever.
	ErrSSELineTooLong = errors.New("httpx: SSE line exceeds the reader's limit")
	// ErrSSEFrameTooLarge reports a frame whose data lines together exceed the limit.
	ErrSSEFrameTooLarge = errors.New("httpx: SSE frame data exceeds the reader's limit")
	// ErrSSETruncated reports a stream that ended inside a frame: data had arrived but
	// the blank line that dispatches it had not. The frame is discarded, as the SSE
	// specification requires; the error wraps io.ErrUnexpectedEOF.
	ErrSSETruncated = fmt.Errorf("httpx: SSE stream ended inside a frame: %w", io.ErrUnexpectedEOF)
)

// SSEFrame is one dispatched server-sent event.
type SSEFrame struct {
	// ID is the value of this frame's own "id:" line and HasID says whether it had one
	// (an empty "id:" line gives HasID with ID ""). An id containing NUL is ignored, as
	// the specification requires. The id in force across frames, which the spec calls
	// the last event ID, is [SSEReader.LastEventID].
	ID    string
	HasID bool
	// Event is the "event:" field; "" means the default type, "message".
	Event string
	// Data is the frame's "data:" lines joined with LF.
	Data string
}

// SSEReader parses a text/event-stream body per the WHATWG specification: LF, CRLF and
// CR line endings, a leading BOM, comments, multi-line data, the one optional space after
// the colon, and "retry:". A frame is dispatched only at its terminating blank line; a
// frame cut off by the end of the stream is discarded and reported as
// [ErrSSETruncated], while a stream ending between frames ends with io.EOF.
// Not safe for concurrent use.
type SSEReader struct {
	src        io.Reader
	max        int
	buf        []byte
	start, end int
	srcErr     error
	skipLF     bool // the last line ended in CR: an LF right after it belongs to it
	first      bool // no line read yet: strip a BOM
	err        error

	data    []byte
	hasData bool
	event   string
	id      string
	hasID   bool
	lastID  string
	retry   time.Duration
	isRetry bool
}

// NewSSEReader reads frames from r with the [DefaultSSEMaxLine] limit.
func NewSSEReader(r io.Reader) *SSEReader { return NewSSEReaderSize(r, DefaultSSEMaxLine) }

// NewSSEReaderSize reads frames from r, refusing lines and frame data longer than
// maxLine bytes (values below 64 are raised to 64).
func NewSSEReaderSize(r io.Reader, maxLine int) *SSEReader {
	maxLine = max(maxLine, 64)
	return &SSEReader{src: r, max: maxLine, buf: make([]byte, min(4096, maxLine+2)), first: true}
}

// LastEventID is the id in force after the frames read so far: the value of the most
// recent "id:" field, which a reconnecting client sends as Last-Event-ID.
func (r *SSEReader) LastEventID() string { return r.lastID }

// Retry reports the reconnection delay from the most recent valid "retry:" field.
func (r *SSEReader) Retry() (time.Duration, bool) { return r.retry, r.isRetry }

// Next returns the next frame. At the end of the stream it returns io.EOF, or
// [ErrSSETruncated] if the stream stopped inside a frame; any error is final and is
// returned again by later calls.
func (r *SSEReader) Next() (SSEFrame, error) {
	if r.err != nil {
		return SSEFrame{}, r.err
	}
	for {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			return SSEFrame{}, err
		}
		if f, ok, err := r.processLine(line); err != nil {
			r.err = err
			return SSEFrame{}, err
		} else if ok {
			return f, nil
		}
	}
}

// All iterates over the frames until the stream ends. A clean end stops the iteration;
// any other error is yielded once, with a zero frame, as the last element.
func (r *SSEReader) All() iter.Seq2[SSEFrame, error] {
	return func(yield func(SSEFrame, error) bool) {
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(f, err) || err != nil {
				return
			}
		}
	}
}

// processLine applies one complete line and reports a dispatched frame.
func (r *SSEReader) processLine(line []byte) (SSEFrame, bool, error) {
	if r.first {
		r.first = false
		line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
	}
	if len(line) == 0 {
		return r.dispatch()
	}
	if line[0] == ':' {
		return SSEFrame{}, false, nil
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if len(r.data)+len(value)+1 > r.max+1 {
			return SSEFrame{}, false, ErrSSEFrameTooLarge
		}
		r.data = append(r.data, value...)
		r.data = append(r.data, '\n')
		r.hasData = true
	case "event":
		r.event = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id, r.hasID = string(value), true
			r.lastID = r.id
		}
	case "retry":
		if ms, ok := parseDigits(value); ok {
			r.retry, r.isRetry = time.Duration(ms)*time.Millisecond, true
		}
	}
	return SSEFrame{}, false, nil
}

// dispatch ends the frame at a blank line. Per the specification a frame without data
// is not dispatched, though its id still becomes the last event ID.
func (r *SSEReader) dispatch() (SSEFrame, bool, error) {
	f := SSEFrame{ID: r.id, HasID: r.hasID, Event: r.event}
	ok := r.hasData
	if ok {
		f.Data = string(r.data[:len(r.data)-1])
	}
	r.data, r.hasData, r.event, r.id, r.hasID = r.data[:0], false, "", "", false
	return f, ok, nil
}

// readLine returns the next line without its terminator; the slice is valid until the
// next call. At the end of input it reports io.EOF, or ErrSSETruncated when a frame
// was still open.
func (r *SSEReader) readLine() ([]byte, error) {
	scanned := 0 // bytes of buf[start:end] known to hold no line break
	for {
		if r.skipLF && r.start < r.end {
			r.skipLF = false
			if r.buf[r.start] == '\n' {
				r.start++
			}
		}
		seg := r.buf[r.start:r.end]
		if i := indexEOL(seg[scanned:]); i >= 0 {
			i += scanned
			if i > r.max {
				return nil, ErrSSELineTooLong
			}
			if seg[i] == '\r' {
				r.skipLF = true // do not wait for the next byte: a CR-only stream must not stall
			}
			r.start += i + 1
			return seg[:i], nil
		}
		scanned = len(seg)
		if len(seg) > r.max {
			return nil, ErrSSELineTooLong
		}
		if r.srcErr != nil {
			return nil, r.endOfInput(seg)
		}
		r.fill()
	}
}

// endOfInput decides how the stream ended given an unterminated last line.
func (r *SSEReader) endOfInput(partial []byte) error {
	if !errors.Is(r.srcErr, io.EOF) {
		return r.srcErr
	}
	if r.first {
		partial = bytes.TrimPrefix(partial, []byte("\xEF\xBB\xBF"))
	}
	if r.hasData || bytes.HasPrefix(partial, []byte("data")) &&
		(len(partial) == 4 || partial[4] == ':') {
		return ErrSSETruncated
	}
	return io.EOF
}

// fill reads more input, first making room by moving unread bytes to the front and
// growing the buffer up to the line limit.
func (r *SSEReader) fill() {
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	if r.end == len(r.buf) {
		grown := make([]byte, min(2*len(r.buf), r.max+2))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.srcErr = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.srcErr = io.ErrNoProgress
}

func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}

// parseDigits parses a "retry:" value, which the specification limits to ASCII digits.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 12 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
