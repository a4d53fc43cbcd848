package ai_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// apClock is a fake clock for journal.Options.Now; it moves only when told to.
type apClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *apClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *apClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// apRecoverUntilResumed runs recovery passes until one resumes a run, within a
// generous deadline.
func apRecoverUntilResumed(t *testing.T, j *journal.Journal) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := j.RecoverOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no recovery pass resumed the run")
}

// apExpectTimeout checks that the park was denied with reason timeout: the model saw it,
// the tool did not run, and the follow stream ends with the resumed run.
func apExpectTimeout(t *testing.T, e *apEnv, stream string, wantRuns int) []byte {
	t.Helper()
	frames, raw := e.followFrames(t, stream, 0)
	if got := apToolMessage(t, e.model, "call_pay"); !strings.Contains(got, `"reason":"timeout"`) {
		t.Fatalf("the model saw %q, want a denial with reason timeout", got)
	}
	if n := len(e.Transfers()); n != 0 {
		t.Fatalf("a timed-out transfer ran %d times", n)
	}
	runs := 0
	for _, f := range frames {
		if _, ok := f.Event.(agui.RunStarted); ok {
			runs++
		}
	}
	last, ok := frames[len(frames)-1].Event.(agui.RunFinished)
	if runs != wantRuns || !ok || last.Outcome != nil {
		t.Fatalf("follow after the timeout: %d runs, want %d; events %v", runs, wantRuns, apTypes(frames))
	}
	return raw
}

// The default wait is 24 hours: a fake journal clock moved past it makes the next
// recovery pass deny the park with reason timeout.
func TestApprovalTimeoutFakeClock(t *testing.T) {
	t.Parallel()
	clock := &apClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	e := newApEnv(t, apConfig{turns: apTransferTurns("500"), jopts: journal.Options{Now: clock.Now}})
	_, stream, in := e.parkedRun(t)
	if want := clock.Now().Add(24 * time.Hour); !in.ExpiresAt.Equal(want) {
		t.Errorf("interrupt expiresAt %v, want the journal clock plus 24h (%v)", in.ExpiresAt, want)
	}
	clock.Advance(23 * time.Hour)
	if n, err := e.j.RecoverOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("recovery before the deadline resumed %d runs (err %v)", n, err)
	}
	clock.Advance(2 * time.Hour)
	if n, err := e.j.RecoverOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("recovery past the deadline resumed %d runs (err %v), want 1", n, err)
	}
	apExpectTimeout(t, e, stream, 2)
	if d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, "")); d.status != 409 || d.code() != "Conflict" {
		t.Fatalf("approve after the timeout: HTTP %d %s, want 409 Conflict", d.status, d.raw)
	}
}

// A small ApprovalWait times the park out on the real clock.
func TestApprovalTimeoutApprovalWait(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500"), aiOpts: ai.Options{ApprovalWait: time.Millisecond}})
	_, stream, _ := e.parkedRun(t)
	apRecoverUntilResumed(t, e.j)
	apExpectTimeout(t, e, stream, 2)
}

// The park outlives its instance: a new journal and app on the same driver (a restart)
// time it out and resume the run.
func TestApprovalTimeoutAcrossRestart(t *testing.T) {
	t.Parallel()
	clock := &apClock{t: time.Now().UTC()}
	drv := memory.New()
	first := newApEnv(t, apConfig{turns: apTransferTurns("500"), driver: drv, jopts: journal.Options{Now: clock.Now, Owner: "first"}})
	_, stream, in := first.parkedRun(t)
	if err := first.app.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.srv.Close()
	clock.Advance(25 * time.Hour)
	second := newApEnv(t, apConfig{driver: drv, model: first.model, jopts: journal.Options{Now: clock.Now, Owner: "second"}})
	if n, err := second.j.RecoverOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("the new instance's recovery resumed %d runs (err %v), want 1", n, err)
	}
	raw := apExpectTimeout(t, second, stream, 2)
	if n := len(first.Transfers()); n != 0 {
		t.Fatalf("the closed instance ran the transfer %d times", n)
	}
	if d := second.decide(t, "approve", apAlice, apApproveBody(in.ID, "")); d.status != 409 || d.code() != "Conflict" {
		t.Fatalf("approve after the timeout: HTTP %d %s, want 409 Conflict", d.status, d.raw)
	}
	apRecord(t, "timeout", raw, in)
}

// Once the wait has elapsed the park is denied, whether or not a recovery pass has run
// yet: a late approval must not run the tool.
func TestApprovalLateDecisionAfterDeadline(t *testing.T) {
	t.Parallel()
	clock := &apClock{t: time.Now().UTC()}
	e := newApEnv(t, apConfig{turns: apTransferTurns("500"), jopts: journal.Options{Now: clock.Now}})
	_, stream, in := e.parkedRun(t)
	clock.Advance(25 * time.Hour)
	d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, ""))
	if d.status != 409 || d.code() != "Conflict" {
		t.Errorf("approve 25h after the park: HTTP %d %s, want 409 Conflict (the park timed out)", d.status, d.raw)
	}
	if _, err := e.j.RecoverOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.followFrames(t, stream, 0)
	if n := len(e.Transfers()); n != 0 {
		t.Fatalf("a transfer approved after its deadline ran %d times", n)
	}
}
