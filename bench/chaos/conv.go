package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbc28f59/engine/httpx"
)

// frame is one event a client was shown, with the id it came under (0: none).
type frame struct {
	id   int64
	data string
	typ  string
}

// conversation is one user's chat through the whole cycle: the live stream of POST
// /chat, then follows resumed by Last-Event-ID on whichever instance is up, approving the
// transfer when the interrupt shows, until the run's final RUN_FINISHED.
type conversation struct {
	h     *harness
	cycle int
	n     int
	to    string
	ask   string

	mu        sync.Mutex
	streamID  string
	frames    []frame
	lastID    int64
	resumedAt int64 // the Last-Event-ID of the first follow; -1 before one
	approving map[string]bool
	final     string // "completed", or what else ended the run
	reposts   int
	problems  []string
}

func newConversation(h *harness, cycle, n int) *conversation {
	c := &conversation{h: h, cycle: cycle, n: n, resumedAt: -1, approving: map[string]bool{}}
	c.to = fmt.Sprintf("c%d-%d", cycle, n)
	c.ask = fmt.Sprintf("transfer %d to %s", 101+n, c.to)
	switch n % 3 {
	case 1:
		c.ask += " and check the weather"
	case 2:
		c.ask += " after checking the weather"
	}
	return c
}

func (c *conversation) problem(format string, args ...any) {
	c.mu.Lock()
	c.problems = append(c.problems, fmt.Sprintf("%s: ", c.to)+fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

func (c *conversation) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.final != ""
}

// run drives the conversation until its run ends or ctx does.
func (c *conversation) run(ctx context.Context) {
	c.post(ctx)
	for ctx.Err() == nil && !c.ended() {
		c.mu.Lock()
		id := c.streamID
		c.mu.Unlock()
		if id == "" {
			if !c.find(ctx) {
				sleep(ctx, 100*time.Millisecond)
			}
			continue
		}
		if !c.follow(ctx) {
			sleep(ctx, 50*time.Millisecond)
		}
	}
	if !c.ended() {
		c.problem("the run did not end within the cycle's time (stream %q, %d frames seen)", c.streamID, len(c.frames))
	}
}

// post starts the chat on a live instance and reads its live stream to its end.
func (c *conversation) post(ctx context.Context) {
	for ctx.Err() == nil {
		in := c.h.live()
		if in == nil {
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		base, _ := in.base()
		body, _ := json.Marshal(map[string]string{"message": c.ask})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.h.token())
		res, err := c.h.client.Do(req)
		if err != nil {
			return // the instance died: the request may have begun the run (find looks)
		}
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode >= 500 {
				sleep(ctx, 50*time.Millisecond)
				continue
			}
			c.problem("POST /chat: %d %s", res.StatusCode, b)
			c.mu.Lock()
			c.final = fmt.Sprintf("refused: %d", res.StatusCode)
			c.mu.Unlock()
			return
		}
		c.read(res.Body, false)
		res.Body.Close()
		return
	}
}

// find looks the run's stream up in the database when the live stream died before it
// named the run. When no run was begun for the chat, the chat is posted again.
func (c *conversation) find(ctx context.Context) bool {
	runID := c.h.runOf(ctx, c.to)
	if runID == "" {
		// A commit the dead instance sent just before it died may land a moment later.
		sleep(ctx, 500*time.Millisecond)
		runID = c.h.runOf(ctx, c.to)
	}
	if runID == "" {
		c.mu.Lock()
		c.reposts++
		c.mu.Unlock()
		c.post(ctx)
		return true
	}
	if id := c.h.streamOf(ctx, runID); id != "" {
		c.mu.Lock()
		if c.streamID == "" {
			c.streamID = id
		}
		c.mu.Unlock()
		return true
	}
	return false // begun, and its agent has not opened its log yet: a takeover will
}

// follow reads the run's log from the last id seen, on a live instance, until the
// stream ends or the connection drops. It reports whether it got through to a stream.
func (c *conversation) follow(ctx context.Context) bool {
	in := c.h.live()
	if in == nil {
		return false
	}
	base, _ := in.base()
	c.mu.Lock()
	id, last := c.streamID, c.lastID
	if c.resumedAt < 0 {
		c.resumedAt = last
	}
	c.mu.Unlock()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/agent/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+c.h.token())
	if last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	}
	res, err := c.h.client.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode < 500 && res.StatusCode != http.StatusNotFound {
			c.problem("follow: %d %s", res.StatusCode, b)
		}
		return false
	}
	c.read(res.Body, true)
	return true
}

// read records the frames of a live or followed stream and acts on them.
func (c *conversation) read(body io.Reader, followed bool) {
	r := httpx.NewSSEReader(body)
	for {
		sf, err := r.Next()
		if err != nil {
			return
		}
		if sf.Data == "" || sf.Data == "[DONE]" {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			RunID   string `json:"runId"`
			Code    string `json:"code"`
			Message string `json:"message"`
			Outcome *struct {
				Interrupts []struct {
					ID string `json:"id"`
				} `json:"interrupts"`
			} `json:"outcome"`
			Result *struct {
				StopReason string `json:"stopReason"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(sf.Data), &ev); err != nil {
			c.problem("a frame that is not JSON: %q", sf.Data)
			continue
		}
		f := frame{data: sf.Data, typ: ev.Type}
		if sf.HasID {
			f.id, _ = strconv.ParseInt(sf.ID, 10, 64)
		}
		c.mu.Lock()
		if f.id > 0 {
			if f.id <= c.lastID {
				c.problems = append(c.problems, fmt.Sprintf("%s: id %d after %d: a repeated or reordered row", c.to, f.id, c.lastID))
			}
			c.lastID = f.id
		} else if followed {
			c.problems = append(c.problems, fmt.Sprintf("%s: a followed frame without id: %s", c.to, sf.Data))
		}
		c.frames = append(c.frames, f)
		if ev.Type == "RUN_STARTED" && c.streamID == "" {
			c.streamID = ev.RunID
		}
		var approve []string
		switch {
		case ev.Type == "RUN_FINISHED" && ev.Outcome != nil:
			for _, it := range ev.Outcome.Interrupts {
				if !c.approving[it.ID] {
					c.approving[it.ID] = true
					approve = append(approve, it.ID)
				}
			}
		case ev.Type == "RUN_FINISHED" && ev.Result != nil && ev.Result.StopReason == "completed":
			c.final = "completed"
		case ev.Type == "RUN_FINISHED":
			c.final = "RUN_FINISHED without stopReason completed: " + sf.Data
		case ev.Type == "RUN_ERROR" && ev.Code != "WorkerLost":
			c.final = "RUN_ERROR " + ev.Code + ": " + ev.Message
		}
		c.mu.Unlock()
		for _, id := range approve {
			go c.approve(id)
		}
	}
}

// approve decides the transfer's interrupt through any live instance, as often as it
// takes: an instance that dies mid-call, a lease another instance holds, a decision that
// landed although its answer was lost.
func (c *conversation) approve(id string) {
	ctx := c.h.ctx
	refused := 0
	for ctx.Err() == nil {
		in := c.h.live()
		if in == nil {
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		base, _ := in.base()
		status, body, err := c.h.postJSON(ctx, base+"/agent/approvals/approve", `{"id":"`+id+`"}`)
		switch {
		case err != nil || status >= 500:
			sleep(ctx, 50*time.Millisecond)
		case status == http.StatusOK:
			c.h.approved()
			return
		case status == http.StatusConflict && strings.Contains(body, `"JournalLeaseBusy"`):
			sleep(ctx, 100*time.Millisecond)
		case status == http.StatusConflict:
			return // decided already: an earlier attempt landed, its answer lost with its instance
		default:
			// A broken promise; keep trying all the same, so the cycle does not wait for
			// its timeout on a run parked for good.
			if refused++; refused == 1 {
				c.problem("approve: %d %s", status, body)
			}
			if refused == 100 {
				return
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
