package engine

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"
)

// The HTTP edge: what an app does before any flow runs, so that hostile or broken
// requests cost little and end cleanly.
//
//   - A body whose Content-Length is over the limit ([WithMaxBodyBytes]) is refused with
//     PayloadTooLarge (413) before a byte of it is read; a body that grows over the
//     limit while read is refused the same way.
//   - A body must arrive within the body deadline ([WithBodyTimeout], 30 s by default,
//     set on the connection through [http.ResponseController]); one that does not is
//     answered RequestTimeout (408) and the connection is closed.
//   - Writes from other sites are refused: a request with a method other than GET, HEAD
//     or OPTIONS that a browser marks as cross-site (Sec-Fetch-Site), or whose Origin is
//     neither the request's host nor a trusted origin, is Forbidden (403,
//     {gate: "origin", reason}) and runs nothing ([http.CrossOriginProtection];
//     [WithTrustedOrigins], [WithCrossOriginProtection]). Clients that are not browsers
//     send neither header and pass.
//   - [NewServer] is the http.Server setup we recommend around an app.

// DefaultBodyTimeout is how long a request body may take to arrive.
const DefaultBodyTimeout = 30 * time.Second

// WithBodyTimeout sets how long a request's body may take to arrive, counted from when
// the flow starts reading it; a body still incomplete then is answered RequestTimeout
// (408) and its connection closed. 0 keeps the default (30 s); a negative value turns the
// deadline off (the server's ReadTimeout, if any, still applies).
func WithBodyTimeout(d time.Duration) Option {
	return optionFunc(func(a *App) error {
		if d == 0 {
			d = DefaultBodyTimeout
		}
		a.bodyTimeout = d
		return nil
	})
}

// WithTrustedOrigins lets pages served from the given origins ("https://app.example.com",
// scheme and host, and port when not the default) write to the app from the browser: an
// app whose frontend is served from another origin than its API lists that origin here.
// Same-origin requests and clients that are not browsers need nothing.
func WithTrustedOrigins(origins ...string) Option {
	return optionFunc(func(a *App) error {
		if a.cop == nil {
			return errors.New("engine: WithTrustedOrigins: cross-origin protection is off (WithCrossOriginProtection(nil))")
		}
		for _, o := range origins {
			if err := a.cop.AddTrustedOrigin(o); err != nil {
				return fmt.Errorf("engine: WithTrustedOrigins: %w", err)
			}
		}
		return nil
	})
}

// WithCrossOriginProtection replaces the app's cross-origin protection with c (for
// example one with insecure bypass patterns for a webhook); nil turns it off, for an app
// served only to clients that are not browsers. Its deny handler is replaced by the
// envelope's Forbidden answer.
func WithCrossOriginProtection(c *http.CrossOriginProtection) Option {
	return optionFunc(func(a *App) error {
		a.cop = c
		return nil
	})
}

// checkOrigin refuses a cross-origin write; it reports whether the request may go on.
func (a *App) checkOrigin(w http.ResponseWriter, r *http.Request) bool {
	if a.cop == nil {
		return true
	}
	err := a.cop.Check(r)
	if err == nil {
		return true
	}
	a.writeError(w, r, nil, Forbidden("origin", err.Error()+"; a page on another origin must be listed with engine.WithTrustedOrigins"))
	return false
}

// bodyDeadline sets the deadline by which r's body must have arrived and returns what
// clears it, or nil when there is nothing to clear: a request without a body, or a
// connection that does not support deadlines. (Not a function that clears it: a closure
// would cost every call with a body two allocations.)
func (a *App) bodyDeadline(w http.ResponseWriter, r *http.Request) readDeadliner {
	if a.bodyTimeout <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	d, ok := w.(readDeadliner) // net/http's own writer
	if !ok {
		d = http.NewResponseController(w) // one that unwraps a middleware's writer
	}
	if d.SetReadDeadline(time.Now().Add(a.bodyTimeout)) != nil {
		return nil
	}
	return d
}

type readDeadliner interface{ SetReadDeadline(time.Time) error }

// bodyError turns a failed body read into the envelope's error.
func (a *App) bodyError(w http.ResponseWriter, err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return a.tooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The connection cannot be read any more: close it after the answer.
		w.Header().Set("Connection", "close")
		return NewError(CodeRequestTimeout, map[string]any{
			"message": fmt.Sprintf("the request body did not arrive within %s", a.bodyTimeout)})
	}
	return Invalid(ValidationIssue{Message: "reading request body: " + err.Error()})
}

func (a *App) tooLarge() *Error {
	return NewError(CodePayloadTooLarge, map[string]any{
		"message": fmt.Sprintf("request body exceeds %d bytes", a.maxBody), "limit": a.maxBody})
}

// NewServer returns the http.Server we recommend around an app's handler: request
// headers must arrive within 5 s and stay under 64 KiB, and idle keep-alive connections
// close after 2 minutes. It sets no ReadTimeout or WriteTimeout: a request body has its
// own deadline ([WithBodyTimeout]) and an agent's event stream may last as long as its
// run. Set Addr (and TLS) yourself, or change any field.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}
