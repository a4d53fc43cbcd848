package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/internal/testenv"
)

// TestStopUnderKill races a stop of an agent run against its approval and a SIGKILL of
// an instance at a random point, on real processes of the reference app (two on Postgres,
// one on SQLite), and checks that each run ends once: a final journal status, exactly
// one terminal event at the end of its log that agrees with that status, the transfer
// made at most once, and never after its approval was refused. Cycles: 8 per driver
// (ENGINE_STOP_CHAOS_CYCLES).
func TestStopUnderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the stop chaos test builds the reference app and kills its processes")
	}
	cycles := 8
	if v := os.Getenv("ENGINE_STOP_CHAOS_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ENGINE_STOP_CHAOS_CYCLES=%q: %v", v, err)
		}
		cycles = n
	}
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			dsn := ""
			if driver == "postgres" {
				dsn = testenv.PostgresDSN(t, "the Postgres stop chaos run")
			}
			cfg := Config{Driver: driver, PostgresDSN: dsn, Cycles: cycles, Dir: t.TempDir(), Logf: t.Logf}
			if err := cfg.defaults(); err != nil {
				t.Fatal(err)
			}
			h := &harness{cfg: cfg, ctx: t.Context(), rng: rand.New(rand.NewPCG(cfg.Seed, 1)), plan: rand.New(rand.NewPCG(cfg.Seed, 2)),
				client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, report: Report{Faults: map[string]int{}}}
			h.onApprove, h.onTurnEnd = make(chan struct{}, 1), make(chan struct{}, 1)
			cleanup, err := h.setUp(t.Context())
			defer cleanup()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d", cfg.Seed)
			outcomes := map[string]int{}
			for n := 1; n <= cycles; n++ {
				phase := []string{"parked", "mid-stream"}[n%2]
				got, err := h.stopCycle(t.Context(), n, phase)
				if err != nil {
					t.Fatalf("cycle %d (%s): %v", n, phase, err)
				}
				outcomes[phase+"/"+got]++
			}
			t.Logf("outcomes: %v", outcomes)
			for _, f := range h.report.Failures {
				t.Error(f)
			}
		})
	}
}

// stopCycle runs one conversation to its park, then races a stop (and, in phase
// mid-stream, an approval first) against a SIGKILL, waits for the run's end and checks
// it. It returns the journal status the run ended with.
func (h *harness) stopCycle(ctx context.Context, n int, phase string) (string, error) {
	if err := h.signIn(ctx); err != nil {
		return "", err
	}
	to := fmt.Sprintf("s%d", n)
	runID, interrupt, err := h.parkChat(ctx, "transfer 500 to "+to)
	if err != nil {
		return "", err
	}
	victim := h.insts[h.plan.IntN(len(h.insts))]
	var wg sync.WaitGroup
	var approveStatus, stopStatus int
	approve := func() { approveStatus = h.retryPost(ctx, "/agent/approvals/approve", `{"id":"`+interrupt+`"}`) }
	stop := func() { stopStatus = h.retryPost(ctx, "/agent/runs/"+runID+"/stop", `{}`) }
	if phase == "parked" {
		wg.Go(func() { sleep(ctx, h.randDur(0, 40*time.Millisecond)); approve() })
		wg.Go(func() { sleep(ctx, h.randDur(0, 40*time.Millisecond)); stop() })
		sleep(ctx, h.randDur(0, 80*time.Millisecond))
	} else {
		approve()
		sleep(ctx, h.randDur(100*time.Millisecond, 400*time.Millisecond))
		wg.Go(stop)
		sleep(ctx, h.randDur(0, 30*time.Millisecond))
	}
	victim.kill()
	sleep(ctx, h.randDur(0, 200*time.Millisecond))
	if err := victim.start(); err != nil {
		return "", err
	}
	wg.Wait()
	status, rows, err := h.awaitEnd(ctx, runID)
	if err != nil {
		return "", fmt.Errorf("%s: %w (approve %d, stop %d)", to, err, approveStatus, stopStatus)
	}
	h.checkOneOutcome(n, to, status, rows, approveStatus)
	return status, nil
}

// parkChat posts a chat that parks on its transfer and returns the agent run id and
// the approval's interrupt id.
func (h *harness) parkChat(ctx context.Context, ask string) (runID, interrupt string, err error) {
	for attempt := 0; attempt < 50 && ctx.Err() == nil; attempt++ {
		in := h.live()
		if in == nil {
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		base, _ := in.base()
		body, _ := json.Marshal(map[string]string{"message": ask})
		status, raw, err := h.postJSON(ctx, base+"/chat", string(body))
		if err != nil || status >= 500 {
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		ended := false
		for _, line := range strings.Split(raw, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			ev, err := agui.Decode([]byte(data))
			if err != nil {
				continue
			}
			switch ev := ev.(type) {
			case agui.RunStarted:
				runID = ev.RunID
			case agui.RunError:
				ended = true
			case agui.RunFinished:
				ended = true
				if id, ok := parkedOn(ev); ok {
					interrupt = id
				}
			}
		}
		if runID != "" && interrupt == "" && !ended {
			// The stream ended without the run's end: the instance lost the run's lease
			// (its renewal came late on a loaded machine) and another took the run over. A
			// client follows the run; here its stored log tells where it parked.
			h.logf("%s: the live stream ended without the run's end (its lease was taken over): waiting for the stored log to park", runID)
			interrupt, err = h.awaitPark(ctx, runID)
		}
		if runID == "" || interrupt == "" {
			return "", "", fmt.Errorf("chaos: the chat did not park (%v): %d %s", err, status, raw)
		}
		return runID, interrupt, nil
	}
	return "", "", fmt.Errorf("chaos: could not start a chat")
}

// retryPost posts body to path on a live instance until one answers other than 5xx or
// JournalLeaseBusy, and returns that status. A status other than 200 after an attempt
// whose answer was lost (its instance died) may follow from that attempt's effect:
// then it returns 0, unknown.
func (h *harness) retryPost(ctx context.Context, path, body string) int {
	lost := false
	for ctx.Err() == nil {
		in := h.live()
		if in == nil {
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		base, _ := in.base()
		status, reply, err := h.postJSON(ctx, base+path, body)
		switch {
		case err != nil || status >= 500:
			lost = true
		case strings.Contains(reply, `"JournalLeaseBusy"`):
		case lost && status != http.StatusOK:
			return 0
		default:
			return status
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return 0
}

// parkedOn returns the id of the one interrupt a RUN_FINISHED parked on.
func parkedOn(ev agui.RunFinished) (string, bool) {
	if ev.Outcome == nil || len(ev.Outcome.Interrupts) != 1 {
		return "", false
	}
	return ev.Outcome.Interrupts[0].ID, true
}

// awaitPark waits for the stored log of the run streamID to park on one interrupt and
// returns its id.
func (h *harness) awaitPark(ctx context.Context, streamID string) (string, error) {
	deadline := time.Now().Add(60*time.Second + 10*h.cfg.LeaseTTL)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		rows, _, err := h.rows(ctx, streamID)
		for _, r := range rows {
			if ev, derr := agui.Decode([]byte(r.event)); derr == nil && err == nil {
				if fin, ok := ev.(agui.RunFinished); ok {
					if id, ok := parkedOn(fin); ok {
						return id, nil
					}
				}
			}
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return "", fmt.Errorf("the run taken over did not park")
}

// awaitEnd waits for the agent run's log to be finished and its durable run to be
// final, and returns the status and the stored rows.
func (h *harness) awaitEnd(ctx context.Context, streamID string) (string, []row, error) {
	deadline := time.Now().Add(60*time.Second + 10*h.cfg.LeaseTTL)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		rows, finished, err := h.rows(ctx, streamID)
		var status string
		if err == nil && finished {
			err = h.store.db.QueryRowContext(ctx, h.store.q(`SELECT r.status FROM engine_runs r JOIN engine_streams s ON s.run_id = r.id WHERE s.id = ?`), streamID).Scan(&status)
			if err == nil && (status == "completed" || status == "cancelled" || status == "failed") {
				return status, rows, nil
			}
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return "", nil, fmt.Errorf("the run did not end")
}

// checkOneOutcome checks the end of one stopped conversation.
func (h *harness) checkOneOutcome(cycle int, to, status string, rows []row, approveStatus int) {
	var ends []string
	for _, r := range rows {
		var ev struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Outcome *struct {
				Type string `json:"type"`
			} `json:"outcome"`
		}
		_ = json.Unmarshal([]byte(r.event), &ev)
		switch {
		case ev.Type == "RUN_FINISHED" && (ev.Outcome == nil || ev.Outcome.Type != "interrupt"):
			end := "completed"
			if ev.Outcome != nil && ev.Outcome.Type == "cancelled" {
				end = "cancelled"
			}
			ends = append(ends, end)
		case ev.Type == "RUN_ERROR" && ev.Code != "WorkerLost":
			ends = append(ends, "failed")
		}
	}
	last := ""
	if len(rows) > 0 {
		last = rows[len(rows)-1].event
	}
	if len(ends) != 1 {
		h.fail("cycle %d: %s: %d terminal events in the log (%v), want 1", cycle, to, len(ends), ends)
	} else if ends[0] != status {
		h.fail("cycle %d: %s: the log ends %s, the journal says %s", cycle, to, ends[0], status)
	} else if !strings.Contains(last, `"RUN_FINISHED"`) && !strings.Contains(last, `"RUN_ERROR"`) {
		h.fail("cycle %d: %s: the terminal event is not the log's last row: %s", cycle, to, last)
	}
	var made int
	if err := h.store.db.QueryRowContext(h.ctx, h.store.q(`SELECT COUNT(*) FROM transfers WHERE recipient = ?`), to).Scan(&made); err != nil {
		h.fail("cycle %d: %s: reading transfers: %v", cycle, to, err)
		return
	}
	if made > 1 {
		h.fail("cycle %d: %s: the transfer was made %d times", cycle, to, made)
	}
	if made > 0 && approveStatus != http.StatusOK && approveStatus != 0 {
		h.fail("cycle %d: %s: the transfer was made although its approval was answered %d", cycle, to, approveStatus)
	}
}
