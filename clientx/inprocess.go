package clientx

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// InProcess returns a [Doer] that serves each request through h in memory, with no
// listener, so an app can be tested (or embedded) end to end without a port. The
// response is returned as soon as the handler writes its header, and its body streams
// through a pipe, so server-sent events arrive as they are flushed. The request's
// context reaches the handler: a timeout or cancellation aborts it as over a network.
func InProcess(h http.Handler) Doer {
	return inProcess{h: h}
}

type inProcess struct{ h http.Handler }

func (d inProcess) Do(req *http.Request) (*http.Response, error) {
	if d.h == nil {
		return nil, errors.New("clientx: InProcess: nil handler")
	}
	ctx := req.Context()
	in := req.Clone(ctx)
	if in.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{}), req: req}
	go func() {
		defer func() {
			if v := recover(); v != nil {
				err := fmt.Errorf("clientx: InProcess: handler panicked: %v", v)
				w.fail(err)
				return
			}
			w.finish()
		}()
		d.h.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		_ = pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	if w.err != nil {
		_ = pr.Close()
		return nil, w.err
	}
	body := io.ReadCloser(pr)
	if req.Method == http.MethodHead {
		_ = pr.Close()
		body = http.NoBody
	}
	return w.resp(body), nil
}

// pipeWriter is the in-memory ResponseWriter: the header is handed over on the first
// write, flush or return of the handler, the body through the pipe.
type pipeWriter struct {
	mu     sync.Mutex
	header http.Header
	sent   http.Header
	status int
	wrote  bool
	pw     *io.PipeWriter
	ready  chan struct{}
	err    error
	req    *http.Request
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(code)
}

func (w *pipeWriter) writeHeaderLocked(code int) {
	if w.wrote {
		return
	}
	if code < 100 || code > 999 {
		code = http.StatusInternalServerError
	}
	if code >= 100 && code < 200 {
		return // informational replies are not surfaced
	}
	w.wrote = true
	w.status = code
	w.sent = w.header.Clone()
	close(w.ready)
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.wrote {
		if w.header.Get("Content-Type") == "" && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.writeHeaderLocked(http.StatusOK)
	}
	w.mu.Unlock()
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	return w.pw.Write(p)
}

// Flush sends the header; written bytes are already on their way through the pipe.
func (w *pipeWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeaderLocked(http.StatusOK)
}

func (w *pipeWriter) finish() {
	w.mu.Lock()
	w.writeHeaderLocked(http.StatusOK)
	w.mu.Unlock()
	_ = w.pw.Close()
}

func (w *pipeWriter) fail(err error) {
	w.mu.Lock()
	if !w.wrote {
		w.err = err
		w.wrote = true
		close(w.ready)
	}
	w.mu.Unlock()
	_ = w.pw.CloseWithError(err)
}

func (w *pipeWriter) resp(body io.ReadCloser) *http.Response {
	return &http.Response{
		Status:     strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode: w.status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        w.sent,
		Body:          body,
		ContentLength: -1,
		Request:       w.req,
	}
}
