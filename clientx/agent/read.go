// Package agent holds the client helpers for agent runs: calling a flow that streams
// its run ([Stream]), reading AG-UI event streams ([ReadFrames]), deciding approvals
// ([Approve], [Deny]) and following a run's stored log ([Follow]).
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strconv"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/httpx"
)

// The names under which readers present the engine's subagent CUSTOM events, which
// travel as agui.CustomSubagentStarted and its siblings.
const (
	SubagentStarted  = "subagent.started"
	SubagentFinished = "subagent.finished"
	SubagentError    = "subagent.error"
)

var clientCustomNames = map[string]string{
	agui.CustomSubagentStarted:  SubagentStarted,
	agui.CustomSubagentFinished: SubagentFinished,
	agui.CustomSubagentError:    SubagentError,
}

// Frame is one agent event with the SSE id it arrived under. Stored rows carry their
// seq as the id; a follower resumes after the last one it holds.
type Frame struct {
	Event agui.Event
	// ID is the frame's "id:" line as sent, "" when it had none.
	ID string
	// Seq is ID as a positive integer, or 0 when the frame had no integer id.
	Seq int64
}

// ReadFrames reads an agent event stream body. Frames with no event object (no "type"
// member, or JSON that is not an object) and the "data: [DONE]" frame are skipped;
// CUSTOM events named engine.subagent.started, .finished or .error are renamed to
// [SubagentStarted], [SubagentFinished] and [SubagentError]. A frame whose data cannot
// be decoded is yielded as an error with its ID and Seq, and reading goes on, so a
// caller may skip it. The sequence ends when the body ends; a body cut inside a frame
// or a failed read yields one final error. The caller still owns body.
func ReadFrames(body io.Reader) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		r := httpx.NewSSEReader(body)
		for {
			sf, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(Frame{}, fmt.Errorf("agent: reading the event stream: %w", err))
				return
			}
			if sf.Data == "[DONE]" {
				continue
			}
			f := Frame{ID: sf.ID}
			if sf.HasID {
				if n, err := strconv.ParseInt(sf.ID, 10, 64); err == nil && n > 0 {
					f.Seq = n
				}
			}
			ev, err := agui.Decode([]byte(sf.Data))
			if errors.Is(err, agui.ErrNoType) {
				continue
			}
			if err != nil {
				if !yield(f, fmt.Errorf("agent: frame %q: %w", sf.ID, err)) {
					return
				}
				continue
			}
			if c, ok := ev.(agui.Custom); ok {
				if name, ok := clientCustomNames[c.Name]; ok {
					c.Name = name
					ev = c
				}
			}
			f.Event = ev
			if !yield(f, nil) {
				return
			}
		}
	}
}

// ReadAgentEvents is [ReadFrames] without the ids: the Go form of the reference contract's
// readAgentEvents.
func ReadAgentEvents(body io.Reader) iter.Seq2[agui.Event, error] {
	return func(yield func(agui.Event, error) bool) {
		for f, err := range ReadFrames(body) {
			if !yield(f.Event, err) {
				return
			}
		}
	}
}

// ReadAgentEventsResponse reads the events of an agent stream response, such as the
// reply to the POST that started a run. A non-2xx status, or a 2xx reply that is not
// text/event-stream, yields a single [*ResponseError]. The response body is closed when
// the iteration ends, including when the loop breaks early; a sequence never ranged
// over leaves it open.
func ReadAgentEventsResponse(resp *http.Response) iter.Seq2[agui.Event, error] {
	return func(yield func(agui.Event, error) bool) {
		defer resp.Body.Close()
		if err := CheckResponse(resp); err != nil {
			yield(nil, err)
			return
		}
		for ev, err := range ReadAgentEvents(resp.Body) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// ReadAgentEventsURL GETs url (a follow route, for instance) with Accept
// text/event-stream and reads its events as [ReadAgentEventsResponse] does. client nil
// means http.DefaultClient. The request is made when the iteration starts and ctx bounds
// the whole stream: cancelling it ends the sequence with the context's error.
func ReadAgentEventsURL(ctx context.Context, url string, client *http.Client) iter.Seq2[agui.Event, error] {
	return func(yield func(agui.Event, error) bool) {
		doer := client
		if doer == nil {
			doer = http.DefaultClient
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			yield(nil, fmt.Errorf("agent: %w", err))
			return
		}
		req.Header.Set("Accept", httpx.SSEContentType)
		resp, err := doer.Do(req)
		if err != nil {
			yield(nil, fmt.Errorf("agent: %w", err))
			return
		}
		for ev, err := range ReadAgentEventsResponse(resp) {
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("agent: %w (%w)", ctx.Err(), err)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// maxErrorBody bounds how much of a failed reply is kept.
const maxErrorBody = 64 << 10

// ResponseError is a reply that is not an event stream: a non-2xx status, or a 2xx
// with another content type. Envelope is the decoded {data, error} body when there was
// one (a gate denial, a NotFound…), else nil, and Body the first 64 KiB of the body.
type ResponseError struct {
	StatusCode  int
	ContentType string
	Envelope    *httpx.Envelope
	Body        []byte
}

// Error names the status and, when the body was an envelope, its error code.
func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("agent: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Envelope != nil && e.Envelope.Error != nil {
		msg += ": " + e.Envelope.Error.Code
	} else if e.StatusCode >= 200 && e.StatusCode < 300 {
		msg += ": reply is " + strconv.Quote(e.ContentType) + ", not an event stream"
	}
	return msg
}

// CheckResponse returns nil when resp is a 2xx text/event-stream (or a 2xx without a
// content type). Otherwise it reads up to 64 KiB of the body into a [*ResponseError],
// decoding the envelope if the body is one; the caller still closes the body.
func CheckResponse(resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if ct == "" {
			return nil
		}
		if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == httpx.SSEContentType {
			return nil
		}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &ResponseError{StatusCode: resp.StatusCode, ContentType: ct, Body: body}
	e.Envelope = decodeEnvelope(body)
	return e
}

// decodeEnvelope returns the body as an envelope when it is a JSON object with an
// "error" member, the one member every envelope has.
func decodeEnvelope(body []byte) *httpx.Envelope {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil
	}
	if _, ok := members["error"]; !ok {
		return nil
	}
	var env httpx.Envelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return &env
}
