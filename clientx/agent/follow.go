package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
)

// FollowOptions configure [Follow]. The zero value follows from the start with up to
// [DefaultMaxReconnects] reconnects in a row. Headers, the bearer token and the HTTP
// client are the [clientx.Client]'s.
type FollowOptions struct {
	// LastEventID resumes after this seq: the stream starts with the row after it.
	LastEventID int64
	// MaxReconnects bounds the reconnects in a row that bring no new frame; the count
	// starts again after every frame. 0 means [DefaultMaxReconnects]; negative means
	// never reconnect.
	MaxReconnects int
	// Backoff is the wait before the first reconnect, doubled after each fruitless one up
	// to [MaxFollowBackoff]. 0 means [DefaultFollowBackoff].
	Backoff time.Duration
	// FromNow makes [FollowThread] join the thread where it is, not from its first run;
	// LastEventID, when set, wins. Follow ignores it.
	FromNow bool
}

// Defaults of [FollowOptions].
const (
	DefaultMaxReconnects = 5
	DefaultFollowBackoff = 100 * time.Millisecond
	MaxFollowBackoff     = 5 * time.Second
)

// FollowURL returns the follow route of the agent run runID (the runId of its events)
// on the app served at baseURL.
func FollowURL(baseURL, runID string) string {
	return strings.TrimRight(baseURL, "/") + "/agent/runs/" + url.PathEscape(runID) + "/events"
}

// Follow reads the stored event log of the agent run runID (the runId of its events)
// from the follow route of the app c talks to (GET /agent/runs/:runId/events, see
// [FollowURL]): every event once, in seq order, through approval interrupts and the
// resumed runs after them, until the server ends the stream after the run's end. Each
// connection is one request of c's transport, as [Stream], [Approve] and [Deny] make
// theirs: c's headers, its bearer token with one refresh on a 401, its Doer, its timeout
// for the wait for the response headers (not for the stream, which stays open while the
// run is parked: bound it with ctx, and give c no Doer that times out whole responses,
// such as an http.Client with a Timeout) and its retries.
//
// When the connection drops (a network error, or the body ending while the last event
// is not the end of the run) Follow waits, reconnects with Last-Event-ID set to the last
// seq it yielded and goes on, so the caller sees no gap and no duplicate. A reply that
// is not an event stream (401, 404, ...) ends the sequence with a [*ResponseError]; 5xx
// replies are retried like dropped connections. When the reconnects run out, or ctx
// ends, the sequence ends with an error. A frame that cannot be decoded is yielded as an
// error and following goes on.
func Follow(ctx context.Context, c *clientx.Client, runID string, opts FollowOptions) iter.Seq2[Frame, error] {
	return follow(ctx, c, "run "+runID, func(base string) string { return FollowURL(base, runID) }, opts, false)
}

// follow reads the event stream at the URL of c's base URL that at returns (what names
// it in errors); thread streams never end by themselves.
func follow(ctx context.Context, c *clientx.Client, what string, at func(base string) string, opts FollowOptions, thread bool) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		if c == nil {
			yield(Frame{}, clientError(engine.CodeValidation, "following: nil client"))
			return
		}
		if err := c.Transport().Err(); err != nil {
			yield(Frame{}, fmt.Errorf("agent: following %s: invalid client option: %w", what, err))
			return
		}
		f := follower{ctx: ctx, t: c.Transport(), url: at(c.BaseURL()), opts: opts, last: opts.LastEventID, thread: thread}
		if f.opts.MaxReconnects == 0 {
			f.opts.MaxReconnects = DefaultMaxReconnects
		}
		if f.opts.Backoff <= 0 {
			f.opts.Backoff = DefaultFollowBackoff
		}
		f.run(yield)
	}
}

type follower struct {
	ctx  context.Context
	t    *clientx.Transport
	url  string
	opts FollowOptions
	last int64 // the seq of the last frame yielded
	// ended is true when the last event yielded ends the whole run: no resumed run
	// follows it in the log.
	ended bool
	// thread: the stream of a whole thread, which never ends by itself.
	thread bool
}

// errStop means the caller stopped ranging.
var errStop = errors.New("stop")

// run connects and reconnects until the run's end, a final error, or the caller stops.
// Reconnects that bring no frame back off (doubling up to MaxFollowBackoff) and are
// bounded by MaxReconnects; any frame resets both.
func (f *follower) run(yield func(Frame, error) bool) {
	fails := 0
	delay := f.opts.Backoff
	for connects := 0; ; connects++ {
		got, err := f.connect(yield)
		switch {
		case errors.Is(err, errStop):
			return
		case err == nil && !f.thread && (f.ended || (connects > 0 && got == 0)):
			// The server ended the stream after the run's end, or a reconnect found the
			// stream over with nothing more to send.
			return
		}
		var re *ResponseError
		if errors.As(err, &re) && re.StatusCode < 500 {
			yield(Frame{}, err)
			return
		}
		if f.ctx.Err() != nil {
			yield(Frame{}, fmt.Errorf("agent: following %s: %w", f.url, f.ctx.Err()))
			return
		}
		if got > 0 {
			fails, delay = 0, f.opts.Backoff
		}
		if fails >= f.opts.MaxReconnects {
			if err == nil {
				err = errors.New("the stream ended before the run did")
			}
			yield(Frame{}, fmt.Errorf("agent: following %s: giving up after %d reconnects: %w", f.url, fails, err))
			return
		}
		fails++
		t := time.NewTimer(delay)
		select {
		case <-f.ctx.Done():
			t.Stop()
			yield(Frame{}, fmt.Errorf("agent: following %s: %w", f.url, f.ctx.Err()))
			return
		case <-t.C:
		}
		delay = min(delay*2, MaxFollowBackoff)
	}
}

// connect makes one request and yields its new frames. It returns how many it yielded
// and nil when the body ended cleanly, or the error that ended the connection.
func (f *follower) connect(yield func(Frame, error) bool) (int, error) {
	resp, err := f.request()
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := CheckResponse(resp); err != nil {
		return 0, err
	}
	got := 0
	for fr, err := range ReadFrames(resp.Body) {
		if err != nil && fr.ID == "" && fr.Seq == 0 {
			return got, err // a read failure: reconnect
		}
		if fr.Seq > 0 && fr.Seq <= f.last {
			continue // a server that ignored Last-Event-ID: never yield twice
		}
		if fr.Seq > 0 {
			f.last = fr.Seq
		}
		got++
		if err == nil {
			f.ended = endsRun(fr.Event)
		}
		if !yield(fr, err) {
			return got, errStop
		}
	}
	return got, nil
}

// request sends one GET through the client's transport, with Last-Event-ID when
// resuming; a failure to get any reply is a TransportError, which reconnecting may cure.
func (f *follower) request() (*http.Response, error) {
	var h http.Header
	if f.last > 0 {
		h = http.Header{"Last-Event-ID": {strconv.FormatInt(f.last, 10)}}
	}
	resp, e := f.t.DoStream(f.ctx, http.MethodGet, f.url, h, nil)
	if e != nil {
		return nil, e
	}
	return resp, nil
}

// endsRun reports whether ev ends the whole run: a RUN_FINISHED that is not an approval
// interrupt, or a RUN_ERROR other than WorkerLost (after which the run resumes on
// another worker).
func endsRun(ev agui.Event) bool {
	switch e := ev.(type) {
	case agui.RunFinished:
		return e.Outcome == nil || e.Outcome.Type != agui.OutcomeInterrupt
	case agui.RunError:
		return e.Code != codeWorkerLost
	}
	return false
}

// codeWorkerLost is the RUN_ERROR code the engine logs when a worker died mid-run and
// another resumes it (ai.CodeWorkerLost; not imported, to keep the ai package out of
// client binaries).
const codeWorkerLost = "WorkerLost"
