package ai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
)

// twoInstances starts two apps, A and B, on one Postgres journal (each with its own pool
// and LISTEN connection, as two processes have) and one model.
func twoInstances(t *testing.T, turns ...openaitest.Turn) (a, b *apEnv) {
	t.Helper()
	prefix := "stop_" + testenv.RandomHex(5) + "_"
	a = newApEnv(t, apConfig{turns: turns, driver: apPostgresDriverAt(t, prefix, true)})
	b = newApEnv(t, apConfig{model: a.model, driver: apPostgresDriverAt(t, prefix, false)})
	if a.j.Owner() == b.j.Owner() {
		t.Fatal("the two instances share a lease owner")
	}
	return a, b
}

// followToEnd follows the agent run on e as user until its log ends.
func followToEnd(t *testing.T, e *apEnv, user, runID string) []agent.Frame {
	t.Helper()
	frames, err := followAll(e.client(t, user), runID)
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// followAll follows the agent run through c until its log ends.
func followAll(c *clientx.Client, runID string) ([]agent.Frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var frames []agent.Frame
	for f, err := range agent.Follow(ctx, c, runID, agent.FollowOptions{}) {
		if err != nil {
			return frames, fmt.Errorf("Follow: %w after %v", err, apTypes(frames))
		}
		frames = append(frames, f)
	}
	return frames, nil
}

// wantCancelledFrames checks that frames end with the RUN_FINISHED of a stopped run.
func wantCancelledFrames(t *testing.T, what string, frames []agent.Frame) {
	t.Helper()
	if len(frames) == 0 {
		t.Fatalf("%s: no events", what)
	}
	fin, ok := frames[len(frames)-1].Event.(agui.RunFinished)
	if !ok || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeCancelled || fin.Result == nil || fin.Result.StopReason != agui.StopCancelled {
		t.Fatalf("%s does not end cancelled: %v", what, apTypes(frames))
	}
}

// runStatus reads the journal status of the durable run owning the agent run's log.
func runStatus(t *testing.T, e *apEnv, runID string) journal.Status {
	t.Helper()
	st, err := e.j.GetStream(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	// The run's log ends before its record is written, so a follower can see the end
	// first: wait (boundedly) for a final status.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := e.j.GetRun(context.Background(), st.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status.Final() || time.Now().After(deadline) {
			return rec.Status
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStopAcrossInstancesOnPostgres stops, through B, a run streaming on A: A's model
// request is aborted, A's live stream and followers on both instances end cancelled,
// and the journal records the run cancelled.
func TestStopAcrossInstancesOnPostgres(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t, openaitest.Turn{Text: strings.Repeat("tick ", 400), Delay: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := a.openChat(t, ctx, "count")
	var runID string
	var live []agent.Frame
	type followed struct {
		frames []agent.Frame
		err    error
	}
	followers := make(chan followed, 2)
	stopSent := false
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			t.Fatalf("reading A's live stream: %v", err)
		}
		live = append(live, f)
		if s, ok := f.Event.(agui.RunStarted); ok {
			runID = s.RunID
		}
		if _, ok := f.Event.(agui.TextMessageContent); ok && !stopSent {
			stopSent = true
			for _, e := range []*apEnv{a, b} {
				c := e.client(t, apAlice)
				go func() {
					frames, err := followAll(c, runID)
					followers <- followed{frames, err}
				}()
			}
			if err := agent.Stop(ctx, b.client(t, apAlice), runID); err != nil {
				t.Fatalf("Stop through B: %v", err)
			}
		}
	}
	select {
	case <-a.model.Disconnected():
	case <-time.After(10 * time.Second):
		t.Fatal("A's model request was not aborted")
	}
	wantCancelledFrames(t, "A's live stream", live)
	for range 2 {
		f := <-followers
		if f.err != nil {
			t.Fatal(f.err)
		}
		wantCancelledFrames(t, "a follower", f.frames)
	}
	if s := runStatus(t, b, runID); s != journal.StatusCancelled {
		t.Fatalf("run status = %s, want cancelled", s)
	}
	if err := agent.Stop(ctx, a.client(t, apAlice), runID); !errors.Is(err, agent.ErrConflict) {
		t.Fatalf("stopping the stopped run: %v, want Conflict", err)
	}
}

// TestStopParkedRunAcrossInstancesOnPostgres stops, through B, a run parked on A: it ends
// cancelled, the approval answers Conflict on either instance, the tool never runs.
func TestStopParkedRunAcrossInstancesOnPostgres(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t, apTransferTurns("500")...)
	_, runID, in := a.parkedRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := agent.Stop(ctx, b.client(t, apAlice), runID); err != nil {
		t.Fatalf("Stop through B: %v", err)
	}
	wantCancelledFrames(t, "the follower on A", followToEnd(t, a, apAlice, runID))
	for _, e := range []*apEnv{a, b} {
		if err := agent.Approve(ctx, e.client(t, apAlice), in.ID, nil); !errors.Is(err, agent.ErrConflict) {
			t.Fatalf("approving a stopped run's call: %v, want Conflict", err)
		}
	}
	if n := len(a.Transfers()) + len(b.Transfers()); n != 0 {
		t.Fatalf("the transfer ran %d times", n)
	}
	if s := runStatus(t, a, runID); s != journal.StatusCancelled {
		t.Fatalf("run status = %s, want cancelled", s)
	}
}
