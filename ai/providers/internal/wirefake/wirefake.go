// Package wirefake is the part the providers' wire fakes (openaitest, anthropictest) share:
// an httptest server that records requests, picks a scripted turn by the number of
// assistant messages (or by a function), paces frames, notices clients that go away, and
// streams the frames a vendor-specific encoder produced.
package wirefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Vendor is what differs between fakes: where they listen, how a request is read, and how
// a turn is encoded.
type Vendor[Req, Turn any] struct {
	// Name prefixes the fake's own error messages ("openaitest").
	Name string
	// Path is the one route served (POST).
	Path string
	// ContentType is the stream's content type.
	ContentType string
	// Received fills a decoded request's raw body and header fields.
	Received func(req *Req, body []byte, header http.Header)
	// Assistants counts the assistant messages of a request: turn n answers n of them.
	Assistants func(Req) int
	// Failure returns an HTTP status and message to answer instead of a stream (0: stream).
	Failure func(Turn) (status int, message string)
	// Check, when set, refuses a request the vendor's API would refuse: an HTTP status
	// (400) and message, or 0 to answer it.
	Check func(Req) (status int, message string)
	// Delay is waited before every frame.
	Delay func(Turn) time.Duration
	// Frames encodes the turn answering req, which holds n assistant messages.
	Frames func(t Turn, req Req, n int) [][]byte
	// WriteError answers a failure in the vendor's error format.
	WriteError func(w http.ResponseWriter, status int, msg string)
}

// Server is a running fake. It is safe for concurrent requests.
type Server[Req, Turn any] struct {
	vendor       Vendor[Req, Turn]
	srv          *httptest.Server
	turns        []Turn
	pick         func(Req) Turn
	disconnected chan struct{}

	mu       sync.Mutex
	requests []Req
}

// New starts a fake answering from turns (by assistant message count) or, when pick is
// not nil, with the turn pick returns.
func New[Req, Turn any](v Vendor[Req, Turn], turns []Turn, pick func(Req) Turn) *Server[Req, Turn] {
	s := &Server[Req, Turn]{vendor: v, turns: turns, pick: pick, disconnected: make(chan struct{}, 64)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the server's root URL.
func (s *Server[Req, Turn]) BaseURL() string { return s.srv.URL }

// Close shuts the server down, waiting for in-flight requests.
func (s *Server[Req, Turn]) Close() { s.srv.Close() }

// Requests returns the requests received so far, in arrival order.
func (s *Server[Req, Turn]) Requests() []Req {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Req(nil), s.requests...)
}

// RequestCount is the number of requests received so far.
func (s *Server[Req, Turn]) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Disconnected receives one value each time a client went away before its stream was
// complete: the proof that a cancelled context really cancelled the HTTP request. It
// buffers 64 notices; more are dropped.
func (s *Server[Req, Turn]) Disconnected() <-chan struct{} { return s.disconnected }

func (s *Server[Req, Turn]) serve(w http.ResponseWriter, r *http.Request) {
	v := s.vendor
	if r.Method != http.MethodPost || r.URL.Path != v.Path {
		v.WriteError(w, http.StatusNotFound, v.Name+": no route "+r.Method+" "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req Req
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		v.WriteError(w, http.StatusBadRequest, v.Name+": bad request body: "+err.Error())
		return
	}
	v.Received(&req, body, r.Header.Clone())
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if v.Check != nil {
		if status, msg := v.Check(req); status != 0 {
			v.WriteError(w, status, msg)
			return
		}
	}

	n := v.Assistants(req)
	var turn Turn
	switch {
	case s.pick != nil:
		turn = s.pick(req)
	case n < len(s.turns):
		turn = s.turns[n]
	default:
		v.WriteError(w, http.StatusInternalServerError,
			fmt.Sprintf("%s: no turn %d: the script has %d turns", v.Name, n+1, len(s.turns)))
		return
	}
	if status, msg := v.Failure(turn); status != 0 {
		v.WriteError(w, status, msg)
		return
	}
	w.Header().Set("Content-Type", v.ContentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	delay := v.Delay(turn)
	for _, frame := range v.Frames(turn, req, n) {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-r.Context().Done():
				t.Stop()
				s.noteDisconnect()
				return
			case <-t.C:
			}
		}
		if _, err := w.Write(frame); err != nil {
			s.noteDisconnect()
			return
		}
		http.NewResponseController(w).Flush()
	}
}

func (s *Server[Req, Turn]) noteDisconnect() {
	select {
	case s.disconnected <- struct{}{}:
	default:
	}
}

// SplitArgs cuts JSON text into pieces of up to 8 bytes, as models stream a tool call's
// arguments a few tokens at a time.
func SplitArgs(s string) []string {
	var out []string
	for len(s) > 8 {
		out = append(out, s[:8])
		s = s[8:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
