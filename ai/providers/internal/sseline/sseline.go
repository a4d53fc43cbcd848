// Package sseline bounds the lines of a model server's response body. The provider SDKs
// read a stream line by line and hold a whole line before they decode it (up to 32 MiB,
// growing their buffer by doubling), so one event of a huge reply costs several times
// its size before ai's reply bound (ai.MaxReplyBytes) sees a byte of it. A body read
// through [Limit] fails instead as soon as a line grows past the bound.
package sseline

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// DefaultMax is the longest line a provider reads unless told otherwise: 4 MiB, room for
// an event carrying ai.DefaultMaxReplyBytes of text even with every byte escaped in JSON.
const DefaultMax = 4 << 20

// TooLongError is the read error of a line longer than the bound.
type TooLongError struct{ Max int }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("the model server sent a line longer than %d bytes (the provider's MaxEventBytes)", e.Max)
}

// Limit returns body read so that a line (bytes up to a '\n') longer than max bytes is
// a *TooLongError; max <= 0 means [DefaultMax].
func Limit(body io.ReadCloser, max int) io.ReadCloser {
	if max <= 0 {
		max = DefaultMax
	}
	return &reader{rc: body, max: max}
}

type reader struct {
	rc   io.ReadCloser
	max  int
	line int // bytes of the current line read so far
	err  error
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.rc.Read(p)
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			r.line += len(rest)
			break
		}
		if r.line+i > r.max {
			r.line += i
			break
		}
		r.line = 0
		rest = rest[i+1:]
	}
	if r.line > r.max {
		r.err = &TooLongError{Max: r.max}
		return 0, r.err
	}
	return n, err
}

func (r *reader) Close() error { return r.rc.Close() }

// Middleware is the SDK middleware that reads every response body through [Limit].
func Middleware(max int) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil && res.Body != nil {
			res.Body = Limit(res.Body, max)
		}
		return res, err
	}
}
