package durable_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// Sub-runs: a durable flow that a durable run calls inside a step gets its run id from
// the call, so when the caller's step runs again (its instance died before recording
// it), the call attaches to the child it already started instead of starting another.

var payments = engine.NewUnit("payments")

type ChargeIn struct {
	Amount int `json:"amount"`
}

type ChargeOut struct {
	Amount int    `json:"amount"`
	Key    string `json:"key"`
}

type CheckoutOut struct {
	Charge  ChargeOut `json:"charge"`
	Receipt string    `json:"receipt"`
}

var Declined = engine.NewCode[ChargeIn]("Declined", http.StatusPaymentRequired)

var (
	checkoutFlow = engine.Define[ChargeIn, CheckoutOut](payments, "checkout", engine.POST("/checkout"), engine.Public(), engine.Durable())
	chargeFlow   = engine.Define[ChargeIn, ChargeOut](payments, "charge", engine.Public(), engine.Durable(), engine.Errors(Declined))
	receiptFlow  = engine.Define[ChargeIn, ChargeOut](payments, "receipt", engine.Public())
)

// die ends the goroutine of an execution as a killed process ends it: no handler
// returns and no deferred recover sees a panic, so the run is left running, leased to
// the dead instance, its step not recorded. (A panic is not a crash: the run fails.)
func die() { runtime.Goexit() }

// subruns is two instances of one app on a shared memory journal with a fake clock, so a
// test can let one die mid-run and the other take over.
type subruns struct {
	clock *journaltest.Clock
	d     *memory.Driver
	a, b  *engine.App
	ja    *journal.Journal
	jb    *journal.Journal

	mu          sync.Mutex
	charges     map[string]int // executions of the charge handler per idempotency key
	chargeRuns  []string       // run ids the charge handler ran under
	receiptKeys []string       // keys the (not durable) receipt flow saw, per execution
	stepKeys    []string       // engine.IdempotencyKey inside the checkout's step, per execution

	crashAfterCharge  atomic.Bool // the checkout's step dies after the charge returned
	crashAfterDecline atomic.Bool // ... after the charge failed
	crashInCharge     atomic.Bool // the charge handler dies after its effect (and its caller with it)
	decline           atomic.Bool
	chargeErrs        []error // what the checkout's step got from the charge, per execution
}

func (s *subruns) lastChargeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.chargeErrs) == 0 {
		return nil
	}
	return s.chargeErrs[len(s.chargeErrs)-1]
}

func newSubruns(t *testing.T) *subruns {
	t.Helper()
	s := &subruns{clock: journaltest.NewClock(), d: memory.New(), charges: map[string]int{}}
	s.a, s.ja = s.app(t, "a")
	s.b, s.jb = s.app(t, "b")
	return s
}

func (s *subruns) app(t *testing.T, owner string) (*engine.App, *journal.Journal) {
	t.Helper()
	j, err := journal.New(s.d, journal.Options{Owner: owner, Now: s.clock.Now, LeaseTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkout := func(fx *engine.Fx, in ChargeIn) (CheckoutOut, error) {
		return durable.Step(fx, "pay", func(ctx context.Context) (CheckoutOut, error) {
			s.mu.Lock()
			s.stepKeys = append(s.stepKeys, engine.IdempotencyKey(ctx))
			s.mu.Unlock()
			raw, err := fx.App().Invoke(ctx, chargeFlow.ID(), nil, json.RawMessage(`{"amount":`+itoa(in.Amount)+`}`))
			if err != nil {
				s.mu.Lock()
				s.chargeErrs = append(s.chargeErrs, err)
				s.mu.Unlock()
				if s.crashAfterDecline.CompareAndSwap(true, false) {
					die()
				}
				return CheckoutOut{}, err
			}
			var out CheckoutOut
			if err := json.Unmarshal(raw, &out.Charge); err != nil {
				return out, err
			}
			raw, err = fx.App().Invoke(ctx, receiptFlow.ID(), nil, json.RawMessage(`{"amount":1}`))
			if err != nil {
				return out, err
			}
			var r ChargeOut
			_ = json.Unmarshal(raw, &r)
			out.Receipt = r.Key
			if s.crashAfterCharge.CompareAndSwap(true, false) {
				die()
			}
			return out, nil
		})
	}
	charge := func(fx *engine.Fx, in ChargeIn) (ChargeOut, error) {
		key := fx.IdempotencyKey()
		s.mu.Lock()
		s.charges[key]++
		s.chargeRuns = append(s.chargeRuns, durable.RunOf(fx).ID)
		s.mu.Unlock()
		if s.crashInCharge.CompareAndSwap(true, false) {
			die()
		}
		if s.decline.Load() {
			return ChargeOut{}, Declined.New(in)
		}
		return ChargeOut{Amount: in.Amount, Key: key}, nil
	}
	receipt := func(fx *engine.Fx, in ChargeIn) (ChargeOut, error) {
		s.mu.Lock()
		s.receiptKeys = append(s.receiptKeys, fx.IdempotencyKey())
		s.mu.Unlock()
		return ChargeOut{Key: fx.IdempotencyKey()}, nil
	}
	app, err := engine.New(engine.WithLogger(discardLogger()), durable.With(j),
		engine.Bind(checkoutFlow, checkout), engine.Bind(chargeFlow, charge), engine.Bind(receiptFlow, receipt))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	return app, j
}

// checkout starts a checkout on a, which is to die during it: it returns the run id.
func (s *subruns) checkoutDiesOnA(t *testing.T) string {
	t.Helper()
	var out json.RawMessage
	var err error
	returned, done := false, make(chan struct{})
	go func() {
		defer close(done)
		out, err = s.a.Invoke(t.Context(), checkoutFlow.ID(), nil, json.RawMessage(`{"amount":40}`))
		returned = true
	}()
	<-done
	if returned {
		t.Fatalf("the execution on a was to die, got %s, %v", out, err)
	}
	ids, err := s.d.RecoverableRuns(t.Context(), s.clock.Now().Add(time.Hour), 10)
	if err != nil || len(ids) == 0 {
		t.Fatalf("no run left behind by the dead execution: %v %v", ids, err)
	}
	return ids[0] // the checkout's id sorts first: its children's ids extend it
}

// takeOver lets a's leases expire and has b resume what a left, until the run ends.
func (s *subruns) takeOver(t *testing.T, runID string) journal.RunRecord {
	t.Helper()
	s.clock.Advance(11 * time.Second)
	if _, err := s.jb.RecoverOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rec, err := s.jb.GetRun(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status.Final() {
			return rec
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("run %s did not end after the takeover", runID)
	return journal.RunRecord{}
}

func TestAReplayedStepAttachesToTheChildRunItStarted(t *testing.T) {
	s := newSubruns(t)
	s.crashAfterCharge.Store(true)
	id := s.checkoutDiesOnA(t)
	rec := s.takeOver(t, id)
	if rec.Status != journal.StatusCompleted {
		t.Fatalf("checkout ended %s: %s", rec.Status, rec.Error)
	}
	var out CheckoutOut
	if err := json.Unmarshal(rec.Output, &out); err != nil {
		t.Fatal(err)
	}
	childID := id + "-0" // the first call of the checkout's step 0
	if len(s.charges) != 1 || s.charges[childID] != 1 || len(s.chargeRuns) != 1 || s.chargeRuns[0] != childID {
		t.Fatalf("charge executions per key %v under runs %v: want one execution, under run %s", s.charges, s.chargeRuns, childID)
	}
	if out.Charge.Key != childID || out.Charge.Amount != 40 {
		t.Fatalf("the replay did not get the child's stored result: %+v", out)
	}
	child, err := s.jb.GetRun(t.Context(), childID)
	if err != nil || child.Status != journal.StatusCompleted || child.Epoch != 1 {
		t.Fatalf("child run %+v, %v: want completed by its one execution", child, err)
	}
	// Every execution of the step saw the same keys: its own, and the one the not
	// durable receipt flow got as the step's second call.
	if len(s.stepKeys) != 2 || s.stepKeys[0] != id+"-0" || s.stepKeys[1] != s.stepKeys[0] {
		t.Fatalf("step keys %v, want %s twice", s.stepKeys, id+"-0")
	}
	if len(s.receiptKeys) != 2 || s.receiptKeys[0] != id+"-0-c2" || s.receiptKeys[1] != s.receiptKeys[0] || out.Receipt != s.receiptKeys[0] {
		t.Fatalf("receipt keys %v (output %q), want %s twice", s.receiptKeys, out.Receipt, id+"-0-c2")
	}
}

func TestAChildLeftRunningRunsOnceMoreAndItsParentWaitsForIt(t *testing.T) {
	s := newSubruns(t)
	s.crashInCharge.Store(true)
	id := s.checkoutDiesOnA(t)
	childID := id + "-0"
	if child, _ := s.ja.GetRun(t.Context(), childID); child.Status != journal.StatusRunning {
		t.Fatalf("the dead charge's run is %s, want running", child.Status)
	}
	// b's recovery finds both runs: the checkout resumes and attaches to the charge,
	// which runs again (its handler had started when its instance died), exactly once,
	// whether the checkout or the recovery loop gets to it first.
	rec := s.takeOver(t, id)
	if rec.Status != journal.StatusCompleted {
		t.Fatalf("checkout ended %s: %s", rec.Status, rec.Error)
	}
	waitFor(t, "the charge's run to end", func() bool {
		child, _ := s.jb.GetRun(t.Context(), childID)
		return child.Status.Final()
	})
	if s.charges[childID] != 2 || len(s.charges) != 1 {
		t.Fatalf("charge executions per key %v, want 2 under %s (the one that died, and one more)", s.charges, childID)
	}
	for _, run := range s.chargeRuns {
		if run != childID {
			t.Fatalf("a charge ran under run %s, want only %s: %v", run, childID, s.chargeRuns)
		}
	}
}

func TestAFailedChildAnswersItsReplayWithTheSameError(t *testing.T) {
	s := newSubruns(t)
	s.decline.Store(true)
	s.crashAfterDecline.Store(true)
	id := s.checkoutDiesOnA(t)
	// The takeover's call finds the failed charge and gets its error again, code and
	// data, without charging again; the checkout then fails on it as the first would have.
	s.decline.Store(false)
	rec := s.takeOver(t, id)
	if rec.Status != journal.StatusFailed || !strings.Contains(rec.Error, "Declined") {
		t.Fatalf("checkout ended %s (%s), want failed on Declined", rec.Status, rec.Error)
	}
	childID := id + "-0"
	if s.charges[childID] != 1 || len(s.charges) != 1 {
		t.Fatalf("charge executions per key %v, want one under %s", s.charges, childID)
	}
	e := engine.AsError(s.lastChargeErr())
	if e == nil || e.Code != "Declined" || e.HTTPStatus() != http.StatusPaymentRequired {
		t.Fatalf("the replayed call got %v, want Declined (402)", s.lastChargeErr())
	}
	if data, _ := json.Marshal(e.Data); string(data) != `{"amount":40}` {
		t.Fatalf("the replayed call's error data %s, want the stored {\"amount\":40}", data)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
