package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
)

// The client helpers against the real routes: every refusal is typed, Conflict matches
// agent.ErrConflict and is never retried.
func TestApprovalClientErrors(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var ee *engine.Error
	err := agent.Deny(ctx, e.client(t, "mallory@acme"), in.ID, "mine")
	if !errors.As(err, &ee) || ee.Code != engine.CodeForbidden || ee.Status != 403 || errors.Is(err, agent.ErrConflict) {
		t.Fatalf("Deny as mallory = %v, want a Forbidden *engine.Error", err)
	}
	err = agent.Approve(ctx, e.client(t, "eve@globex"), in.ID, nil)
	if !errors.As(err, &ee) || ee.Code != engine.CodeNotFound || ee.Status != 404 {
		t.Fatalf("Approve from another tenant = %v, want NotFound", err)
	}
	if err := agent.Approve(ctx, e.client(t, apAlice), in.ID, json.RawMessage(`{"to":"bob","amount":500}`)); err != nil {
		// Replacement args through the client; see bugs-ai.md when this reports
		// "args: expected array".
		t.Fatalf("Approve with args: %v", err)
	}
	var de *agent.DecisionError
	err = agent.Deny(ctx, e.client(t, apAlice), in.ID, "too late")
	if !errors.Is(err, agent.ErrConflict) || !errors.As(err, &de) || de.Op != "deny" || de.Err.Code != engine.CodeConflict {
		t.Fatalf("Deny after approval = %v, want ErrConflict", err)
	}
	e.followFrames(t, stream, 0)
}

// apCountingDoer counts the approval replies that were JournalLeaseBusy.
type apCountingDoer struct {
	busy atomic.Int32
	all  atomic.Int32
}

func (d *apCountingDoer) Do(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultClient.Do(r)
	if err == nil {
		d.all.Add(1)
		if res.StatusCode == http.StatusConflict && res.Header.Get("Retry-After") != "" {
			d.busy.Add(1)
		}
	}
	return res, err
}

// agent.Approve waits out JournalLeaseBusy (Retry-After) and succeeds once the worker
// holding the run lets go.
func TestApprovalClientRetriesLeaseBusy(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	runID, _, _ := agui.ParseInterruptID(in.ID)
	other, err := journal.New(e.drv, journal.Options{Owner: "other-worker", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	held, err := other.Claim(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	doer := &apCountingDoer{}
	c, err := clientx.New(e.srv.URL, clientx.WithHeaders(apHeaders(apAlice)), clientx.WithDoer(doer))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- agent.Approve(ctx, c, in.ID, nil) }()
	for doer.busy.Load() == 0 {
		select {
		case err := <-done:
			t.Fatalf("Approve returned %v before any JournalLeaseBusy", err)
		case <-ctx.Done():
			t.Fatal("no JournalLeaseBusy reply")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := held.Suspend(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Approve after the lease was released: %v", err)
	}
	if doer.all.Load() < 2 {
		t.Fatalf("Approve sent %d requests, want a retry after the busy reply", doer.all.Load())
	}
	e.followFrames(t, stream, 0)
	if n := len(e.Transfers()); n != 1 {
		t.Fatalf("transfers ran %d times", n)
	}
}

// When ctx ends while the lease is still held, Approve gives up with the last
// JournalLeaseBusy and the context's error.
func TestApprovalClientLeaseBusyBoundedByContext(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, _, in := e.parkedRun(t)
	runID, _, _ := agui.ParseInterruptID(in.ID)
	other, err := journal.New(e.drv, journal.Options{Owner: "other-worker", LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	if _, err := other.Claim(context.Background(), runID); err != nil {
		t.Fatal(err)
	}
	doer := &apCountingDoer{}
	c, err := clientx.New(e.srv.URL, clientx.WithHeaders(apHeaders(apAlice)), clientx.WithDoer(doer))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Approve(ctx, c, in.ID, nil) }()
	for doer.busy.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	err = <-done
	var ee *engine.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ee) || ee.Code != engine.CodeJournalLeaseBusy {
		t.Fatalf("Approve with a cancelled ctx = %v, want context.Canceled and JournalLeaseBusy", err)
	}
}
