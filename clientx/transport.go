package clientx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/httpx"
)

// MaxResponseBytes bounds a reply body the client reads; a larger one is a
// TransportError, so a misbehaving server cannot make the client buffer without end.
const MaxResponseBytes = 32 << 20

// Transport is the low-level HTTP layer the client is built on (the reference contract's
// createTransport): headers, bearer auth with one refresh on 401, a per-attempt
// timeout and retries with backoff. It knows nothing of envelopes, so it also serves
// routes that are not flows. It is safe for concurrent use.
type Transport struct {
	doer       Doer
	headers    http.Header
	headerFunc func(ctx context.Context) (http.Header, error)
	timeout    time.Duration
	retry      Retry
	auth       *Auth
	err        error
}

// NewTransport builds a transport. Route options are ignored. An invalid option does
// not panic: [Transport.Err] reports it and every request fails with TransportError.
func NewTransport(opts ...Option) *Transport {
	cfg, err := newConfig(opts)
	if err == nil && cfg.authFor != nil {
		err = errors.New("clientx: WithClientAuth needs a Client; use New, or WithAuth with a transport")
	}
	t := newTransport(cfg)
	t.err = err
	return t
}

func newTransport(cfg *config) *Transport {
	t := &Transport{doer: cfg.doer, headers: cfg.headers, headerFunc: cfg.headerFunc,
		timeout: cfg.timeout, retry: cfg.retry, auth: cfg.auth}
	if t.doer == nil {
		t.doer = defaultDoer
	}
	return t
}

// Err returns the option error the transport was built with, or nil.
func (t *Transport) Err() error { return t.err }

// defaultDoer is shared by every client without WithDoer so connections are pooled
// across clients to the same server.
var defaultDoer = &http.Client{Transport: defaultRoundTripper()}

func defaultRoundTripper() http.RoundTripper {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 64
	tr.IdleConnTimeout = 90 * time.Second
	return tr
}

// Do sends one logical request: method and absolute url, body (nil for none, sent as
// application/json otherwise). It returns the final attempt's status, headers and body,
// or a TransportError for network failure, timeout, cancellation or a bad option. Any
// HTTP status, 4xx and 5xx included, is a reply, not an error.
func (t *Transport) Do(ctx context.Context, method, url string, body []byte) (status int, header http.Header, respBody []byte, err *engine.Error) {
	r, e := t.do(ctx, request{method: method, url: url, body: body})
	if e != nil {
		return r.status, r.header, nil, e
	}
	defer r.release()
	return r.status, r.header, bytes.Clone(r.body.Bytes()), nil
}

// DoStream sends one logical request as [Transport.Do] does (headers, bearer auth with
// one refresh on a 401, the attempt timeout, retries), with header set on top of the
// transport's own headers and Accept text/event-stream unless a header names another,
// and hands back the response. A 2xx text/event-stream reply comes back with its body
// unread, for the caller to read and close: the timeout bounded only the wait for its
// headers, and a stream cut midway is not retried. Any other reply comes back read, its
// body in memory, for the caller to judge by its status. Network failure, timeout,
// cancellation and a bad option are a TransportError. It serves event streams that are
// not flow calls, such as the follow route of an agent run.
func (t *Transport) DoStream(ctx context.Context, method, url string, header http.Header, body []byte) (*http.Response, *engine.Error) {
	r, e := t.do(ctx, request{method: method, url: url, body: body, header: header, accept: httpx.SSEContentType, keepStream: true})
	if e != nil {
		return nil, e
	}
	if r.stream != nil {
		return r.stream, nil
	}
	b := bytes.Clone(r.body.Bytes())
	r.release()
	return &http.Response{StatusCode: r.status, Status: strconv.Itoa(r.status) + " " + http.StatusText(r.status),
		Header: r.header, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b))}, nil
}

// request is one logical request: what the transport sends on every attempt.
type request struct {
	method, url string
	body        []byte      // nil for none
	header      http.Header // set on top of the transport's headers; nil for none
	// accept is the Accept header sent when the caller's headers set none; "" means
	// application/json.
	accept string
	// keepStream leaves a 2xx text/event-stream reply unread, in reply.stream: a flow
	// call does not buffer a whole agent run, and a stream is not cut by the attempt
	// timeout once its headers have arrived.
	keepStream bool
}

// reply is a response: read, with its body from a pool that release gives back, or
// (keepStream) an event stream whose body is still unread.
type reply struct {
	status int
	header http.Header
	body   *bytes.Buffer
	stream *http.Response
}

func (r *reply) release() {
	if r.stream != nil {
		_ = r.stream.Body.Close()
		r.stream = nil
	}
	if r.body != nil && r.body.Cap() <= 64<<10 {
		r.body.Reset()
		bufPool.Put(r.body)
	}
	r.body = nil
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

type refreshingKey struct{}

// SkipRefresh returns a context whose calls never run [Auth].Refresh on a 401. The
// transport passes it to Refresh itself, so a refresh that calls a flow through the same
// client cannot start another; code that refreshes on its own initiative (a session's
// explicit Refresh) uses it for the same reason.
func SkipRefresh(ctx context.Context) context.Context {
	return context.WithValue(ctx, refreshingKey{}, true)
}

// errAttemptTimeout is the cause of an attempt's context when WithTimeout fires, which
// tells a timeout apart from the caller's own deadline.
var errAttemptTimeout = errors.New("clientx: attempt timed out")

func (t *Transport) do(ctx context.Context, req request) (reply, *engine.Error) {
	if t.err != nil {
		return reply{}, transportError("invalid client option: "+t.err.Error(), 0)
	}
	if ctx == nil {
		return reply{}, transportError("nil context", 0)
	}
	refreshed := ctx.Value(refreshingKey{}) != nil
	delay := t.retry.Delay
	for retries := 0; ; {
		r, e := t.attempt(ctx, req)
		switch {
		case e != nil && (ctx.Err() != nil || !e.retryable):
			return reply{}, e.err
		case e != nil, r.status >= 500:
			if retries >= t.retry.Retries {
				if e != nil {
					return reply{}, e.err
				}
				return r, nil
			}
			r.release()
			if err := sleep(ctx, delay); err != nil {
				return reply{}, transportError("request canceled: "+err.Error(), 0)
			}
			retries++
			delay = time.Duration(float64(delay) * t.retry.Backoff)
		case r.status == http.StatusUnauthorized && !refreshed && t.auth != nil && t.auth.Refresh != nil:
			refreshed = true
			if err := t.auth.Refresh(SkipRefresh(ctx)); err != nil {
				// The refresh failed: the 401 stands and the caller sees it as it came.
				return r, nil
			}
			r.release()
		default:
			return r, nil
		}
	}
}

// attemptError is a failed attempt: the TransportError to report and whether a retry
// may help.
type attemptError struct {
	err       *engine.Error
	retryable bool
}

func (t *Transport) attempt(ctx context.Context, rq request) (reply, *attemptError) {
	// The attempt timeout is a timer, not a deadline, so that it can be stopped once an
	// event stream's headers have arrived: it bounds the wait for a reply, not a stream.
	actx, done := ctx, func() {}
	var timer *time.Timer
	if t.timeout > 0 {
		var cancel context.CancelCauseFunc
		actx, cancel = context.WithCancelCause(ctx)
		timer = time.AfterFunc(t.timeout, func() { cancel(errAttemptTimeout) })
		done = func() {
			timer.Stop()
			cancel(nil)
		}
	}
	var rd io.Reader
	if rq.body != nil {
		rd = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(actx, rq.method, rq.url, rd)
	if err != nil {
		done()
		return reply{}, &attemptError{err: transportError("bad request: "+err.Error(), 0)}
	}
	if err := t.setHeaders(actx, req, rq.body != nil, rq.accept, rq.header); err != nil {
		done()
		return reply{}, &attemptError{err: transportError(err.Error(), 0)}
	}
	resp, err := t.doer.Do(req)
	if err != nil {
		defer done()
		return reply{}, t.failure(ctx, actx, err, 0)
	}
	if rq.keepStream && isEventStream(resp) {
		if timer != nil {
			if !timer.Stop() {
				// The timeout fired as the headers arrived: the stream is cancelled already.
				_ = resp.Body.Close()
				defer done()
				return reply{}, t.failure(ctx, actx, context.Cause(actx), resp.StatusCode)
			}
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: done}
		}
		return reply{status: resp.StatusCode, header: resp.Header, stream: resp}, nil
	}
	defer done()
	defer resp.Body.Close()
	buf := bufPool.Get().(*bytes.Buffer)
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, MaxResponseBytes+1))
	r := reply{status: resp.StatusCode, header: resp.Header, body: buf}
	if err != nil {
		r.release()
		return reply{}, t.failure(ctx, actx, err, resp.StatusCode)
	}
	if n > MaxResponseBytes {
		r.release()
		return reply{}, &attemptError{err: transportError(fmt.Sprintf("response body exceeds %d bytes", MaxResponseBytes), resp.StatusCode)}
	}
	return r, nil
}

// isEventStream reports whether resp is a 2xx text/event-stream reply.
func isEventStream(resp *http.Response) bool {
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return false
	}
	// Checked without mime.ParseMediaType, which allocates on every JSON reply.
	ct, n := resp.Header.Get("Content-Type"), len(httpx.SSEContentType)
	if len(ct) < n || !strings.EqualFold(ct[:n], httpx.SSEContentType) {
		return false
	}
	rest := strings.TrimLeft(ct[n:], " \t")
	return rest == "" || rest[0] == ';'
}

// cancelOnClose ends a kept stream's attempt context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
	once   sync.Once
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.cancel)
	return err
}

// failure classifies a failed attempt: the caller's cancellation is final, an attempt
// timeout and a network failure may be retried.
func (t *Transport) failure(ctx, actx context.Context, err error, status int) *attemptError {
	if ctx.Err() != nil {
		return &attemptError{err: transportError("request canceled: "+context.Cause(ctx).Error(), status)}
	}
	if context.Cause(actx) == errAttemptTimeout {
		return &attemptError{err: transportError("request timed out after "+t.timeout.String(), status), retryable: true}
	}
	var ne net.Error
	msg := "network failure: " + err.Error()
	if errors.As(err, &ne) && ne.Timeout() {
		msg = "network timeout: " + err.Error()
	}
	return &attemptError{err: transportError(msg, status), retryable: true}
}

func (t *Transport) setHeaders(ctx context.Context, req *http.Request, hasBody bool, accept string, reqHeader http.Header) error {
	h := req.Header
	for k, vs := range t.headers {
		h[k] = append([]string(nil), vs...)
	}
	if t.headerFunc != nil {
		extra, err := t.headerFunc(ctx)
		if err != nil {
			return fmt.Errorf("header function: %w", err)
		}
		for k, vs := range extra {
			h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
	for k, vs := range reqHeader {
		h[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if t.auth != nil && t.auth.GetToken != nil {
		tok, err := t.auth.GetToken(ctx)
		if err != nil {
			return fmt.Errorf("auth token: %w", err)
		}
		if tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
	}
	if hasBody {
		h.Set("Content-Type", "application/json")
	}
	if h.Get("Accept") == "" {
		if accept == "" {
			accept = httpx.ContentTypeJSON
		}
		h.Set("Accept", accept)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// transportError builds the client-only TransportError: data.message, and data.status
// when there was an HTTP status.
func transportError(msg string, status int) *engine.Error {
	b, _ := json.Marshal(msg)
	data := make([]byte, 0, len(b)+32)
	data = append(data, `{"message":`...)
	data = append(data, b...)
	if status != 0 {
		data = append(data, `,"status":`...)
		data = strconv.AppendInt(data, int64(status), 10)
	}
	data = append(data, '}')
	return &engine.Error{Code: engine.CodeTransportError, Data: json.RawMessage(data), Status: status}
}
