package agentbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/httpx"
)

// Target is what a stream request goes to.
type Target string

// The stream targets: the raw SSE handler (the baseline) and the agent flows. Unlogged
// is the plain agent flow in an app without a journal, so its runs keep no event log:
// beside Agent it shows what the log costs, in the same process and the same round.
const (
	Raw      Target = "raw"
	Unlogged Target = "agent-unlogged"
	Agent    Target = "agent"
	Durable  Target = "agent-durable"
	// App is an app of yours ([Options.App]), measured against Raw replaying its frames.
	App Target = "app"
)

// Targets lists every target in the order tables show them.
var Targets = []Target{Raw, Unlogged, Agent, Durable}

// Logged reports whether the target's runs store an event log in the journal.
func (t Target) Logged() bool { return t == Agent || t == Durable }

func (t Target) streamPath() string {
	switch t {
	case Unlogged:
		return unloggedPrefix + "/agentbench/stream"
	case Agent:
		return "/agentbench/stream"
	case Durable:
		return "/agentbench/stream-durable"
	}
	return "/raw/stream"
}

func (t Target) idlePath() string {
	switch t {
	case Unlogged:
		return unloggedPrefix + "/agentbench/idle"
	case Agent:
		return "/agentbench/idle"
	case Durable:
		return "/agentbench/idle-durable"
	}
	return "/raw/idle"
}

// frame is one event of a transcript: its id (0 for none) and its data. paced marks the
// frames the scripted provider waits before (a delta, and the text's end, which follows
// the turn's final chunk), so a paced baseline waits as long as a paced run.
type frame struct {
	id    int64
	data  []byte
	paced bool
}

type transcript []frame

// Local reports whether the target is served by the harness's own process, so its CPU,
// allocations and socket writes are counted in it.
func (t Target) Local() bool { return t != App }

// capture records the frames of one real streamed run and of an idle run's opening, which
// the raw handlers replay: the baseline writes the same bytes, the same number of times.
func (e *Env) capture(ctx context.Context) error {
	res, err := e.readStream(ctx, Agent, true)
	if err != nil {
		return fmt.Errorf("agentbench: capturing a run: %w", err)
	}
	e.raw = res.frames
	var idle transcript
	for _, ev := range []agui.Event{agui.RunStarted{ThreadID: res.RunID, RunID: res.RunID}, agui.StepStarted{StepName: "step-1"}} {
		b, err := agui.AppendJSON(nil, ev)
		if err != nil {
			return err
		}
		idle = append(idle, frame{id: int64(len(idle) + 1), data: b})
	}
	e.idle = idle
	return nil
}

// FramesPerRun is the number of SSE frames one streamed run sends, [DONE] included.
func (e *Env) FramesPerRun() int { return len(e.raw) + 1 }

// serveRawStream is the baseline: the captured frames through the same SSE writer the
// engine uses, with nothing else — no agent loop, no encoding, no journal.
func (e *Env) serveRawStream(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{})
	defer sse.Close()
	for _, f := range e.raw {
		if e.pace > 0 && f.paced {
			if !sleep(r.Context(), e.pace) {
				return
			}
		}
		if err := sse.WriteEvent(f.id, f.data); err != nil {
			return
		}
	}
	_ = sse.WriteDone()
}

// serveRawIdle is the idle baseline: the frames an idle agent run sends, then nothing
// until the client leaves.
func (e *Env) serveRawIdle(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{})
	defer sse.Close()
	for _, f := range e.idle {
		if err := sse.WriteEvent(f.id, f.data); err != nil {
			return
		}
	}
	<-r.Context().Done()
}

// StreamResult is what the client saw of one stream.
type StreamResult struct {
	RunID      string        // the agent run id (the stream id of its event log)
	Frames     int           // frames read, [DONE] included
	FirstFrame time.Duration // from sending the request to reading the first frame
	LastID     int64         // the last frame id seen
	frames     transcript
}

// Batch is one round: n concurrent streams of one target.
type Batch struct {
	Target  Target
	Streams int
	Frames  int
	Elapsed time.Duration
	First   []time.Duration // time to first frame of each stream
	RunIDs  []string
}

// FramesPerSecond is the batch's delivered frame rate.
func (b Batch) FramesPerSecond() float64 { return float64(b.Frames) / b.Elapsed.Seconds() }

// RunBatch streams n runs of t concurrently and returns when all have ended. Every stream
// must deliver the full transcript, so a faster baseline cannot be a truncated one.
func (e *Env) RunBatch(ctx context.Context, t Target, n int) (Batch, error) {
	if n <= 0 {
		return Batch{}, errors.New("agentbench: a batch needs at least one stream")
	}
	b := Batch{Target: t, Streams: n, First: make([]time.Duration, n), RunIDs: make([]string, n)}
	frames := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			res, err := e.readStream(ctx, t, false)
			frames[i], b.First[i], b.RunIDs[i], errs[i] = res.Frames, res.FirstFrame, res.RunID, err
		})
	}
	wg.Wait()
	b.Elapsed = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return b, err
	}
	want := e.FramesPerRun()
	for _, f := range frames {
		if f != want && (t != App || f == 0) { // an app's streams may differ in length; none may be empty
			return b, fmt.Errorf("agentbench: %s stream delivered %d frames, want %d", t, f, want)
		}
		b.Frames += f
	}
	return b, nil
}

// readStream posts one stream request and reads it to its end with the SSE reader.
func (e *Env) readStream(ctx context.Context, t Target, keep bool) (StreamResult, error) {
	start := time.Now()
	var resp *http.Response
	var err error
	if t == App {
		resp, err = e.postApp(ctx)
	} else {
		resp, err = e.post(ctx, t.streamPath(), `{"message":"go"}`)
	}
	if err != nil {
		return StreamResult{}, err
	}
	defer resp.Body.Close()
	return readFrames(resp.Body, start, keep)
}

func (e *Env) post(ctx context.Context, path, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return e.do(req)
}

// postApp posts the app's body to its streaming route with its headers.
func (e *Env) postApp(ctx context.Context) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.app.URL, strings.NewReader(e.app.Body))
	if err != nil {
		return nil, err
	}
	for k, vs := range e.app.Header {
		req.Header[k] = vs
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", httpx.SSEContentType)
	return e.do(req)
}

// do sends req and turns any status but 200 into an error carrying the body.
func (e *Env) do(req *http.Request) (*http.Response, error) {
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		return nil, fmt.Errorf("agentbench: %s %s: HTTP %d: %s", req.Method, req.URL.Path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp, nil
}

// readFrames reads an event stream to its end; the run id comes from RUN_STARTED.
func readFrames(body io.Reader, start time.Time, keep bool) (StreamResult, error) {
	var res StreamResult
	rd := httpx.NewSSEReader(body)
	for {
		f, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, err
		}
		res.Frames++
		if res.Frames == 1 {
			res.FirstFrame = time.Since(start)
		}
		if f.HasID {
			id, err := strconv.ParseInt(f.ID, 10, 64)
			if err != nil {
				return res, fmt.Errorf("agentbench: frame id %q: %w", f.ID, err)
			}
			res.LastID = id
		}
		if f.Data == "[DONE]" {
			continue
		}
		if res.RunID == "" {
			var ev struct {
				Type  string `json:"type"`
				RunID string `json:"runId"`
			}
			if err := json.Unmarshal([]byte(f.Data), &ev); err == nil && ev.Type == string(agui.TypeRunStarted) {
				res.RunID = ev.RunID
			}
		}
		if keep {
			var id int64
			if f.HasID {
				id = res.LastID
			}
			paced := strings.Contains(f.Data, `"type":"TEXT_MESSAGE_CONTENT"`) || strings.Contains(f.Data, `"type":"TEXT_MESSAGE_END"`)
			res.frames = append(res.frames, frame{id: id, data: []byte(f.Data), paced: paced})
		}
	}
	if res.Frames == 0 {
		return res, errors.New("agentbench: empty event stream")
	}
	return res, nil
}

// LogRows reads the stored event log of each run after a batch: all rows, and the rows
// holding text deltas (coalesced TEXT_MESSAGE_CONTENT).
func (e *Env) LogRows(ctx context.Context, runIDs []string) (rows, deltaRows int, err error) {
	d := e.Journal.Driver()
	for _, id := range runIDs {
		if id == "" {
			return 0, 0, errors.New("agentbench: a stream had no RUN_STARTED run id")
		}
		evs, err := d.ReadEvents(ctx, id, 0, 1_000_000)
		if err != nil {
			return 0, 0, fmt.Errorf("agentbench: reading the log of %s: %w", id, err)
		}
		rows += len(evs)
		for _, r := range evs {
			if bytes.Contains(r.Event, []byte(`"type":"TEXT_MESSAGE_CONTENT"`)) {
				deltaRows++
			}
		}
	}
	return rows, deltaRows, nil
}

// sleep waits d unless ctx ends first, and reports whether it waited the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ServeInProcess runs one stream request of t through its handler with no network in
// between: the response goes to a writer that discards it (and flushes for free). It is
// the handler's own cost per run, without the loopback, the client and the shared
// machine's scheduling, which move the throughput figures by ±15 %.
func (e *Env) ServeInProcess(t Target) {
	r := httptest.NewRequest(http.MethodPost, t.streamPath(), strings.NewReader(`{"message":"go"}`))
	r.Header.Set("Content-Type", "application/json")
	w := discardWriter{h: http.Header{}}
	if t == Raw {
		e.serveRawStream(w, r)
		return
	}
	e.mux.ServeHTTP(w, r)
}

// discardWriter is an http.ResponseWriter and http.Flusher that keeps nothing.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}
func (d discardWriter) Flush()                      {}
