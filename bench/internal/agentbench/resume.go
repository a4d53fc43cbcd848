package agentbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/httpx"
)

// StoredRun streams one durable run to its end and returns its run id and the id of its
// last frame: a run with stored rows to resume from.
func (e *Env) StoredRun(ctx context.Context) (runID string, lastID int64, err error) {
	res, err := e.readStream(ctx, Durable, false)
	if err != nil {
		return "", 0, err
	}
	if res.RunID == "" || res.LastID == 0 {
		return "", 0, errors.New("agentbench: the stored run has no run id or no frame ids")
	}
	return res.RunID, res.LastID, nil
}

// FollowFirstFrame reconnects to a run's follow route with Last-Event-ID after and
// returns the time from sending the request to reading the first frame. The rest of the
// stream is then read, untimed, so the connection goes back to the pool like the plain
// request's it is compared with.
func (e *Env) FollowFirstFrame(ctx context.Context, runID string, after int64) (time.Duration, error) {
	path := strings.Replace(ai.FollowPath, ":runId", runID, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	start := time.Now()
	resp, err := e.do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	rd := httpx.NewSSEReader(resp.Body)
	f, err := rd.Next()
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("agentbench: follow %s after %d: %w", runID, after, err)
	}
	if want := strconv.FormatInt(after+1, 10); f.ID != want {
		return 0, fmt.Errorf("agentbench: follow %s after %d: first frame id %q, want %s", runID, after, f.ID, want)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return took, err
}

// Ping is the plain request resume latency is compared with: a tiny RPC flow call, read
// to its end. It returns the time the call took.
func (e *Env) Ping(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	resp, err := e.post(ctx, "/_engine/agentbench/ping", `{}`)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if string(b) != "{\"data\":{},\"error\":null}\n" {
		return 0, fmt.Errorf("agentbench: ping replied %q", b)
	}
	return took, nil
}

// ApprovalCycle runs one park → decide → resume cycle through the real routes: POST the
// pay flow (its agent calls a tool that needs approval, so the run parks and the stream
// ends with an interrupt), POST /agent/approvals/approve with the interrupt id, then
// follow the run from the last frame seen until its stream ends with the tool's result
// and RUN_FINISHED.
func (e *Env) ApprovalCycle(ctx context.Context) error {
	resp, err := e.post(ctx, "/agentbench/pay", `{"message":"pay bob 500"}`)
	if err != nil {
		return err
	}
	var runID, interrupt string
	var last int64
	rd := httpx.NewSSEReader(resp.Body)
	for f, err := range rd.All() {
		if err != nil {
			resp.Body.Close()
			return err
		}
		if f.HasID {
			last, _ = strconv.ParseInt(f.ID, 10, 64)
		}
		if f.Data == "[DONE]" {
			continue
		}
		switch ev, _ := agui.Decode([]byte(f.Data)); ev := ev.(type) {
		case agui.RunStarted:
			runID = ev.RunID
		case agui.RunFinished:
			if ev.Outcome != nil && len(ev.Outcome.Interrupts) > 0 {
				interrupt = ev.Outcome.Interrupts[0].ID
			}
		}
	}
	resp.Body.Close()
	if runID == "" || interrupt == "" {
		return fmt.Errorf("agentbench: the pay run did not park (run %q, interrupt %q)", runID, interrupt)
	}
	body, _ := json.Marshal(ai.ApproveIn{ID: interrupt})
	resp, err = e.post(ctx, "/agent/approvals/approve", string(body))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"ok":true`) {
		return fmt.Errorf("agentbench: approve replied %s", b)
	}
	return e.followToEnd(ctx, runID, last)
}

// followToEnd follows a resumed run until the route ends the response, and checks that
// the run finished (RUN_FINISHED without an interrupt) after the tool's result.
func (e *Env) followToEnd(ctx context.Context, runID string, after int64) error {
	path := strings.Replace(ai.FollowPath, ":runId", runID, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	resp, err := e.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var result, finished bool
	for f, err := range httpx.NewSSEReader(resp.Body).All() {
		if err != nil {
			return err
		}
		if strings.Contains(f.Data, `"RUN_ERROR"`) {
			return fmt.Errorf("agentbench: resumed run %s failed: %s", runID, f.Data)
		}
		result = result || strings.Contains(f.Data, `"TOOL_CALL_RESULT"`)
		finished = result && strings.Contains(f.Data, `"RUN_FINISHED"`) && !strings.Contains(f.Data, `"interrupt"`)
	}
	if !finished {
		return fmt.Errorf("agentbench: the follow stream of %s ended without the tool's result and RUN_FINISHED", runID)
	}
	return nil
}
