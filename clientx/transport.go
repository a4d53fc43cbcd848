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
	"sync"
	"time"

	"github.com/bbc28f59/engine"
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
	r, e := t.do(ctx, method, url, body)
	if e != nil {
		return r.status, r.header, nil, e
	}
	defer r.release()
	return r.status, r.header, bytes.Clone(r.body.Bytes()), nil
}

// reply is a read response; body comes from a pool and goes back with release.
type reply struct {
	status int
	header http.Header
	body   *bytes.Buffer
}

func (r *reply) release() {
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

func (t *Transport) do(ctx context.Context, method, url string, body []byte) (reply, *engine.Error) {
	if t.err != nil {
		return reply{}, transportError("invalid client option: "+t.err.Error(), 0)
	}
	if ctx == nil {
		return reply{}, transportError("nil context", 0)
	}
	refreshed := ctx.Value(refreshingKey{}) != nil
	delay := t.retry.Delay
	for retries := 0; ; {
		r, e := t.attempt(ctx, method, url, body)
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

func (t *Transport) attempt(ctx context.Context, method, url string, body []byte) (reply, *attemptError) {
	actx := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(ctx, t.timeout, errAttemptTimeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, url, rd)
	if err != nil {
		return reply{}, &attemptError{err: transportError("bad request: "+err.Error(), 0)}
	}
	if err := t.setHeaders(actx, req, body != nil); err != nil {
		return reply{}, &attemptError{err: transportError(err.Error(), 0)}
	}
	resp, err := t.doer.Do(req)
	if err != nil {
		return reply{}, t.failure(ctx, actx, err, 0)
	}
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

func (t *Transport) setHeaders(ctx context.Context, req *http.Request, hasBody bool) error {
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
		h.Set("Accept", "application/json")
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
