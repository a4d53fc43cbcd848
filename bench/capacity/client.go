package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/httpx"
)

// How a client knows when each token was due.
const (
	// ScheduleStamp reads each token's scheduled time from the token itself: the tokens
	// of the capacity [Model] (and of the raw baseline) carry it. Client and server must
	// share a clock (one machine).
	ScheduleStamp = "stamp"
	// SchedulePace takes the first token's arrival as on time and the i-th as due 1/Rate
	// later each: for an app whose model is not the capacity model. Each token frame
	// counts as one token, and jitter in the model's own pace reads as delay.
	SchedulePace = "pace"
)

// Endpoint is a streaming route to load, of any app: the capacity benchmark's own target
// servers, or yours.
type Endpoint struct {
	// URL is the streaming route, called with POST.
	URL string
	// Body is the request body. {{message}} is replaced by the conversation's [Pace] as a
	// JSON string, {{conversation}} by a number unique to the conversation. Default
	// {"message":{{message}}}.
	Body string
	// Header is sent with every request (a bearer token, for instance).
	Header http.Header
	// Schedule is [ScheduleStamp] (default) or [SchedulePace].
	Schedule string
	// TokenFrame marks a token's frame: a frame whose data contains it carries tokens in
	// its "delta". Default "TEXT_MESSAGE_CONTENT" (AG-UI).
	TokenFrame string
	// APIBase is where the approval and follow routes of the app are
	// (/agent/approvals/approve, /agent/runs/{runId}/events). Default: URL's origin.
	APIBase string
}

func (e *Endpoint) defaults() error {
	if e.URL == "" {
		return errors.New("capacity: the endpoint needs a URL")
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("capacity: endpoint URL %q is not an http(s) URL", e.URL)
	}
	if e.Body == "" {
		e.Body = `{"message":{{message}}}`
	}
	if e.Schedule == "" {
		e.Schedule = ScheduleStamp
	}
	if e.Schedule != ScheduleStamp && e.Schedule != SchedulePace {
		return fmt.Errorf("capacity: schedule %q: want %s or %s", e.Schedule, ScheduleStamp, SchedulePace)
	}
	if e.TokenFrame == "" {
		e.TokenFrame = string(agui.TypeTextMessageContent)
	}
	if e.APIBase == "" {
		e.APIBase = u.Scheme + "://" + u.Host
	}
	return nil
}

// body is the request body of one conversation.
func (e *Endpoint) body(p Pace, conversation int64) []byte {
	msg, _ := json.Marshal(p)
	quoted, _ := json.Marshal(string(msg))
	b := strings.ReplaceAll(e.Body, "{{message}}", string(quoted))
	return []byte(strings.ReplaceAll(b, "{{conversation}}", strconv.FormatInt(conversation, 10)))
}

// sample holds what a client saw between two reads of it (see [client.take]).
type sample struct {
	live, follow  []int32 // token delays in µs: on the live stream, and read back by a follower after an approval
	starts        []int32 // request sent → first frame, µs
	tokens        int64
	conversations int64 // conversations that ended in this sample
	approvals     int64
	errors        int64
	errorText     []string // the first few
}

func (s *sample) merge(o *sample) {
	s.live = append(s.live, o.live...)
	s.follow = append(s.follow, o.follow...)
	s.starts = append(s.starts, o.starts...)
	s.tokens += o.tokens
	s.conversations += o.conversations
	s.approvals += o.approvals
	s.errors += o.errors
	for _, t := range o.errorText {
		if len(s.errorText) < 5 {
			s.errorText = append(s.errorText, t)
		}
	}
}

// recorder is one conversation loop's sample, behind a lock the loop and the ramp's
// reader share (uncontended but for the reader's two visits a level).
type recorder struct {
	mu sync.Mutex
	s  sample
}

func (r *recorder) take() sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	r.s = sample{}
	return s
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.errors++
	if len(r.s.errorText) < 5 {
		r.s.errorText = append(r.s.errorText, err.Error())
	}
}

// client runs conversations against an endpoint.
type client struct {
	ep     Endpoint
	http   *http.Client
	api    *clientx.Client // the approval and follow routes, with the endpoint's headers
	stamps bool
}

func newClient(ep Endpoint) (*client, error) {
	if err := ep.defaults(); err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{
		MaxIdleConns: 1 << 14, MaxIdleConnsPerHost: 1 << 14, IdleConnTimeout: time.Minute,
		ResponseHeaderTimeout: time.Minute, DisableCompression: true,
	}}
	api, err := clientx.New(ep.APIBase, clientx.WithDoer(hc), clientx.WithHeaders(ep.Header), clientx.WithTimeout(time.Minute))
	if err != nil {
		return nil, err
	}
	return &client{ep: ep, http: hc, api: api, stamps: ep.Schedule == ScheduleStamp}, nil
}

func (c *client) close() { c.http.CloseIdleConnections() }

// converse runs one conversation to its end: the stream, and when it ends parked on an
// approval, the approval and a follow of the resumed run from the last id seen, as a
// client would. It records every token's delay in rec and checks that every token of
// the pace arrived.
func (c *client) converse(ctx context.Context, p Pace, conversation int64, rec *recorder) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ep.URL, bytes.NewReader(c.ep.body(p, conversation)))
	if err != nil {
		return err
	}
	req.Header = c.ep.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", httpx.SSEContentType)
	sent := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := agent.CheckResponse(resp); err != nil {
		return err
	}
	st := streamState{c: c, p: p, rec: rec}
	rd := httpx.NewSSEReader(resp.Body)
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		now := time.Now()
		if st.frames == 0 {
			rec.mu.Lock()
			rec.s.starts = append(rec.s.starts, micros(now.Sub(sent)))
			rec.mu.Unlock()
		}
		st.frames++
		if f.HasID {
			st.lastID, _ = strconv.ParseInt(f.ID, 10, 64)
		}
		if err := st.frame(f.Data, now); err != nil {
			return err
		}
	}
	if st.interrupt != "" {
		if err := agent.Approve(ctx, c.api, st.interrupt, nil); err != nil {
			return err
		}
		rec.mu.Lock()
		rec.s.approvals++
		rec.mu.Unlock()
		if err := c.follow(ctx, &st); err != nil {
			return err
		}
	}
	if !st.finished {
		return fmt.Errorf("capacity: the stream ended after %d frames without RUN_FINISHED", st.frames)
	}
	if c.stamps && st.tokens != p.TotalTokens() {
		return fmt.Errorf("capacity: %d tokens arrived, the pace has %d", st.tokens, p.TotalTokens())
	}
	if !c.stamps && st.tokens == 0 {
		return errors.New("capacity: the conversation streamed no token frame")
	}
	rec.mu.Lock()
	rec.s.conversations++
	rec.mu.Unlock()
	return nil
}

// follow reads the resumed run from its follow route after the last id the stream had.
func (c *client) follow(ctx context.Context, st *streamState) error {
	if st.runID == "" {
		return errors.New("capacity: a parked run without a RUN_STARTED run id")
	}
	st.finished, st.paceStart = false, time.Time{}
	for fr, err := range agent.Follow(ctx, c.api, st.runID, agent.FollowOptions{LastEventID: st.lastID}) {
		if err != nil {
			return err
		}
		now := time.Now()
		switch ev := fr.Event.(type) {
		case agui.TextMessageContent:
			err = st.tokenFrame(ev.Delta, now, true)
		case agui.RunError:
			err = fmt.Errorf("capacity: the resumed run failed: %s", ev.Message)
		case agui.RunFinished:
			if ev.Outcome != nil && len(ev.Outcome.Interrupts) > 0 {
				err = errors.New("capacity: the resumed run parked again")
			}
			st.finished = true
		}
		if err != nil {
			return err
		}
		if st.finished {
			break
		}
	}
	return nil
}

// streamState is what a conversation's reader keeps between frames.
type streamState struct {
	c         *client
	p         Pace
	rec       *recorder
	frames    int
	tokens    int
	lastID    int64
	runID     string
	interrupt string
	finished  bool
	paceStart time.Time // SchedulePace: the first token's arrival on this stream
}

// frame reads one frame of the live stream: tokens are timed, the run's id, end and
// interrupt kept.
func (st *streamState) frame(data string, now time.Time) error {
	switch {
	case strings.Contains(data, st.c.ep.TokenFrame):
		return st.tokenFrame(stringField(data, "delta"), now, false)
	case strings.Contains(data, `"RUN_STARTED"`) && st.runID == "":
		st.runID = stringField(data, "runId")
	case strings.Contains(data, `"RUN_ERROR"`):
		return fmt.Errorf("capacity: the run failed: %.200s", data)
	case strings.Contains(data, `"RUN_FINISHED"`):
		var ev struct {
			Outcome *struct {
				Interrupts []struct {
					ID string `json:"id"`
				} `json:"interrupts"`
			} `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("capacity: RUN_FINISHED: %w", err)
		}
		if ev.Outcome != nil && len(ev.Outcome.Interrupts) > 0 {
			st.interrupt = ev.Outcome.Interrupts[0].ID
			return nil
		}
		st.finished = true
	case data == "[DONE]":
	}
	return nil
}

// tokenFrame times the tokens of one delta; followed tells a follower's from the live stream's.
func (st *streamState) tokenFrame(delta string, now time.Time, followed bool) error {
	at := now.UnixMicro()
	rec := st.rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	delays := &rec.s.live
	if followed {
		delays = &rec.s.follow
	}
	if st.c.stamps {
		n, err := tokenTimes(delta, func(due int64) {
			*delays = append(*delays, clamp32(at-due))
		})
		st.tokens += n
		rec.s.tokens += int64(n)
		return err
	}
	if st.paceStart.IsZero() {
		st.paceStart = now
	}
	due := st.paceStart.Add(time.Duration(float64(st.tokens) * float64(time.Second) / st.p.Rate))
	*delays = append(*delays, micros(now.Sub(due)))
	st.tokens++
	rec.s.tokens++
	return nil
}

// stringField returns the value of the first "name":"..." in a JSON text, unescaped only
// as far as token text and ids need (they hold no escapes).
func stringField(data, name string) string {
	key := `"` + name + `":"`
	i := strings.Index(data, key)
	if i < 0 {
		return ""
	}
	rest := data[i+len(key):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

func micros(d time.Duration) int32 { return clamp32(d.Microseconds()) }

func clamp32(v int64) int32 { return int32(max(min(v, 1<<31-1), -(1 << 31))) }
