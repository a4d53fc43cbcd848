package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// outcomes records how the suite's signal and channel runs ended, by run id.
type outcomes struct {
	mu  sync.Mutex
	out map[string]string
	by  map[string]string // run id → owner of the journal that ended it
}

func (o *outcomes) set(id, owner, v string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.out == nil {
		o.out, o.by = map[string]string{}, map[string]string{}
	}
	o.out[id], o.by[id] = v, owner
}

func (o *outcomes) get(id string) (string, string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.out[id]
	return v, o.by[id], ok
}

// waitSignalRun is the body of a run that waits for signal "paid" under its own id with
// deadline, and ends with the value (or "timeout").
func waitSignalRun(o *outcomes, owner string, deadline time.Time) func(ctx context.Context, r *journal.Run) {
	return waitSignalUnder(o, owner, "", deadline)
}

// waitSignalUnder is [waitSignalRun] under key ("": the run's id); after a timeout it
// waits once more until again, when that is set.
func waitSignalUnder(o *outcomes, owner, key string, deadline time.Time, again ...time.Time) func(ctx context.Context, r *journal.Run) {
	return func(ctx context.Context, r *journal.Run) {
		k := key
		if k == "" {
			k = r.ID
		}
		d, err := r.WaitSignal(ctx, "paid", k, deadline)
		if errors.Is(err, journal.ErrTimedOut) && len(again) > 0 {
			d, err = r.WaitSignal(ctx, "paid", k, again[0])
		}
		switch {
		case errors.Is(err, journal.ErrTimedOut):
			o.set(r.ID, owner, "timeout")
			_ = r.Complete(ctx, json.RawMessage(`"timeout"`))
		case err != nil:
			o.set(r.ID, owner, "error: "+err.Error())
			_ = r.Fail(ctx, err.Error())
		case d == nil:
			_ = r.Suspend(ctx)
		default:
			o.set(r.ID, owner, string(d.Payload))
			_ = r.Complete(ctx, d.Payload)
		}
	}
}

// receiveRun is the body of a run that receives n messages of channel ch and ends with
// their seqs and payloads, in the order received.
func receiveRun(o *outcomes, owner, ch string, n int) func(ctx context.Context, r *journal.Run) {
	return func(ctx context.Context, r *journal.Run) {
		var got []string
		for len(got) < n {
			m, err := r.Receive(ctx, ch, time.Time{})
			if err != nil {
				o.set(r.ID, owner, "error: "+err.Error())
				_ = r.Fail(ctx, err.Error())
				return
			}
			if m == nil {
				_ = r.Suspend(ctx)
				return
			}
			got = append(got, fmt.Sprintf("%d:%s", m.Seq, m.Payload))
		}
		out, _ := json.Marshal(got)
		o.set(r.ID, owner, string(out))
		_ = r.Complete(ctx, out)
	}
}

func topicCases() []testCase {
	return []testCase{
		{"Signals/SetBeforeTheWaitIsSeenAtOnce", signalsSetBeforeTheWaitIsSeenAtOnce},
		{"Signals/SetOnAnotherInstanceResumesTheWaitingRun", signalsSetOnAnotherInstanceResumesTheWaitingRun},
		{"Signals/ASetManyWaitForClaimsABoundedNumberTheRecoveryLoopTheRest", signalsASetManyWaitForClaimsABoundedNumberTheRecoveryLoopTheRest},
		{"Signals/OnceRefusesASecondValueOthersKeepTheLatest", signalsOnceRefusesASecondValueOthersKeepTheLatest},
		{"Signals/AWaitTimesOutOnTheJournalClock", signalsAWaitTimesOutOnTheJournalClock},
		{"Signals/AWaitAfterATimeoutWaitsAgain", signalsAWaitAfterATimeoutWaitsAgain},
		{"Signals/ASetRacingAWaitNeverLosesIt", signalsASetRacingAWaitNeverLosesIt},
		{"Signals/ADecisionAndASetRacingOnOneRunBothLand", signalsADecisionAndASetRacingOnOneRunBothLand},
		{"Channels/APublishRacingAReceiveNeverLosesIt", channelsAPublishRacingAReceiveNeverLosesIt},
		{"Channels/PublishesFromTwoInstancesHaveGapFreeSeqs", channelsPublishesFromTwoInstancesHaveGapFreeSeqs},
		{"Channels/EachReceivingRunGetsEveryMessageOnceInOrder", channelsEachReceivingRunGetsEveryMessageOnceInOrder},
		{"Channels/AReceiveTimesOut", channelsAReceiveTimesOut},
		{"Channels/AReceiveAfterRetentionWaitsForTheNextMessage", channelsAReceiveAfterRetentionWaitsForTheNextMessage},
		{"Channels/RetentionDeletesOldMessagesAndSeqsGoOn", channelsRetentionDeletesOldMessagesAndSeqsGoOn},
	}
}

// signalsSetBeforeTheWaitIsSeenAtOnce is the case "Signals/SetBeforeTheWaitIsSeenAtOnce": set before the wait is seen at once.
func signalsSetBeforeTheWaitIsSeenAtOnce(t *testing.T, e *env) {
	var o outcomes
	j := e.journal("a")
	r := e.begin(j)
	if _, err := j.SetSignal(e.ctx, "paid", r.ID, json.RawMessage(`{"by":"bob"}`), true); err != nil {
		t.Fatal(err)
	}
	waitSignalRun(&o, "a", time.Time{})(e.ctx, r)
	if v, _, ok := o.get(r.ID); !ok || !jsonEq([]byte(v), []byte(`{"by":"bob"}`)) {
		t.Fatalf("the wait got %q (ended %v), want the value set before it", v, ok)
	}
	if rec := e.run(r.ID); rec.Status != journal.StatusCompleted {
		t.Fatalf("run %s, want completed without parking", rec.Status)
	}
}

// signalsSetOnAnotherInstanceResumesTheWaitingRun is the case "Signals/SetOnAnotherInstanceResumesTheWaitingRun": set on another instance resumes the waiting run.
func signalsSetOnAnotherInstanceResumesTheWaitingRun(t *testing.T, e *env) {
	var o outcomes
	a := e.journal("a", func(opt *journal.Options) { opt.Resumer = waitSignalRun(&o, "a", time.Time{}) })
	b := e.journal("b", func(opt *journal.Options) { opt.Resumer = waitSignalRun(&o, "b", time.Time{}) })
	r := e.begin(a)
	waitSignalRun(&o, "a", time.Time{})(e.ctx, r)
	if rec := e.run(r.ID); rec.Status != journal.StatusParked {
		t.Fatalf("a wait with no value: run %s, want parked", rec.Status)
	}
	if _, err := b.SetSignal(e.ctx, "paid", r.ID, json.RawMessage(`{"by":"carol"}`), true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to end", e.completed(r.ID))
	v, by, _ := o.get(r.ID)
	if !jsonEq([]byte(v), []byte(`{"by":"carol"}`)) || by != "b" {
		t.Fatalf("resumed with %q on %q, want the value on the instance that set it", v, by)
	}
}

// signalsASetManyWaitForClaimsABoundedNumberTheRecoveryLoopTheRest is the case "Signals/ASetManyWaitForClaimsABoundedNumberTheRecoveryLoopTheRest": a set many wait for claims a bounded number the recovery loop the rest.
func signalsASetManyWaitForClaimsABoundedNumberTheRecoveryLoopTheRest(t *testing.T, e *env) {
	// 40 runs wait for one signal: the set claims the first 32 itself and leaves
	// the other 8 runnable for the recovery loop, so its caller's writes are bounded.
	var o outcomes
	body := waitSignalUnder(&o, "a", "all", time.Time{})
	j := e.journal("a", func(opt *journal.Options) { opt.Resumer = body })
	const n = 40
	ids := make([]string, n)
	for i := range n {
		r := e.begin(j)
		ids[i] = r.ID
		body(e.ctx, r)
	}
	_, err := j.SetSignal(e.ctx, "paid", "all", json.RawMessage(`"now"`), true)
	must(t, "SetSignal", err)
	// The set claims before it returns: the runs it did not claim are still parked.
	parked := 0
	for _, id := range ids {
		if e.run(id).Status == journal.StatusParked {
			parked++
		}
	}
	if parked != n-32 {
		t.Fatalf("%d runs still parked after the set, want the %d past the 32 it claims", parked, n-32)
	}
	ended := func() int {
		k := 0
		for _, id := range ids {
			if e.completed(id)() {
				k++
			}
		}
		return k
	}
	waitFor(t, "the set's own resumes", func() bool { return ended() == 32 })
	if k := ended(); k != 32 {
		t.Fatalf("%d runs ended before the recovery loop ran, want the 32 the set claims", k)
	}
	_, err = j.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	for _, id := range ids {
		waitFor(t, "run "+id+" to end", e.completed(id))
		if v, _, _ := o.get(id); v != `"now"` {
			t.Fatalf("run %s ended with %q", id, v)
		}
	}
}

// signalsOnceRefusesASecondValueOthersKeepTheLatest is the case "Signals/OnceRefusesASecondValueOthersKeepTheLatest": once refuses a second value others keep the latest.
func signalsOnceRefusesASecondValueOthersKeepTheLatest(t *testing.T, e *env) {
	j := e.journal("a")
	if _, err := j.Signal(e.ctx, "paid", "o1"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("unset signal: %v, want ErrNotFound", err)
	}
	_, err := j.SetSignal(e.ctx, "paid", "o1", json.RawMessage(`1`), true)
	must(t, "SetSignal", err)
	if _, err := j.SetSignal(e.ctx, "paid", "o1", json.RawMessage(`2`), true); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("second value of a once signal: %v, want ErrConflict", err)
	}
	if v, err := j.Signal(e.ctx, "paid", "o1"); err != nil || string(v.Value) != "1" || v.Version != 1 {
		t.Fatalf("once signal after a refused value: %+v, %v", v, err)
	}
	for i := 1; i <= 3; i++ {
		_, err := j.SetSignal(e.ctx, "progress", "o1", fmt.Appendf(nil, "%d", i), false)
		must(t, "SetSignal", err)
	}
	if v, err := j.Signal(e.ctx, "progress", "o1"); err != nil || string(v.Value) != "3" || v.Version != 3 {
		t.Fatalf("latest value: %+v, %v", v, err)
	}
	if _, err := j.Signal(e.ctx, "progress", "o2"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("another key: %v, want ErrNotFound", err)
	}
}

// signalsAWaitTimesOutOnTheJournalClock is the case "Signals/AWaitTimesOutOnTheJournalClock": a wait times out on the journal clock.
func signalsAWaitTimesOutOnTheJournalClock(t *testing.T, e *env) {
	var o outcomes
	deadline := e.clock.Now().Add(time.Minute)
	a := e.journal("a", func(opt *journal.Options) { opt.Resumer = waitSignalRun(&o, "a", deadline) })
	r := e.begin(a)
	waitSignalRun(&o, "a", deadline)(e.ctx, r)
	// Another instance, started after the first stopped, times the wait out.
	_ = a.Close(e.ctx)
	b := e.journal("b", func(opt *journal.Options) { opt.Resumer = waitSignalRun(&o, "b", deadline) })
	_, err := b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	if rec := e.run(r.ID); rec.Status != journal.StatusParked {
		t.Fatalf("before the deadline: run %s, want parked", rec.Status)
	}
	e.clock.Advance(time.Minute)
	_, err = b.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	waitFor(t, "the timed-out run to end", e.completed(r.ID))
	if v, _, _ := o.get(r.ID); v != "timeout" {
		t.Fatalf("the run ended with %q, want timeout", v)
	}
	if _, err := b.SetSignal(e.ctx, "paid", r.ID, json.RawMessage(`1`), true); err != nil {
		t.Fatalf("a value after the timeout is still stored: %v", err)
	}
}

// signalsAWaitAfterATimeoutWaitsAgain is the case "Signals/AWaitAfterATimeoutWaitsAgain": a wait after a timeout waits again.
func signalsAWaitAfterATimeoutWaitsAgain(t *testing.T, e *env) {
	// A run answers a timeout by waiting again: the second wait is a park of its
	// own, with its own deadline, and gets the value set after the first timed out.
	var o outcomes
	first := e.clock.Now().Add(time.Minute)
	body := waitSignalUnder(&o, "a", "", first, first.Add(time.Hour))
	a := e.journal("a", func(opt *journal.Options) { opt.Resumer = body })
	r := e.begin(a)
	body(e.ctx, r)
	e.clock.Advance(2 * time.Minute)
	_, err := a.RecoverOnce(e.ctx) // times the first wait out; the run waits again
	must(t, "RecoverOnce", err)
	waitFor(t, "the run to park again", func() bool {
		parks, err := e.d.ListParks(e.ctx, r.ID)
		return err == nil && len(parks) == 2 && e.run(r.ID).Status == journal.StatusParked
	})
	_, err = a.SetSignal(e.ctx, "paid", r.ID, json.RawMessage(`"late"`), true)
	must(t, "SetSignal", err)
	waitFor(t, "run "+r.ID+" to end", e.completed(r.ID))
	if v, _, _ := o.get(r.ID); v != `"late"` {
		t.Fatalf("the second wait ended with %s, want the value set after the first timed out", v)
	}
}

// signalsASetRacingAWaitNeverLosesIt is the case "Signals/ASetRacingAWaitNeverLosesIt": a set racing a wait never loses it.
func signalsASetRacingAWaitNeverLosesIt(t *testing.T, e *env) {
	var o outcomes
	a := e.journal("a", func(opt *journal.Options) { opt.Resumer = waitSignalRun(&o, "a", time.Time{}) })
	b := e.journal("b", func(opt *journal.Options) { opt.Resumer = waitSignalRun(&o, "b", time.Time{}) })
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		r := e.begin(a)
		ids[i] = r.ID
		wg.Add(2)
		go func() { defer wg.Done(); waitSignalRun(&o, "a", time.Time{})(e.ctx, r) }()
		go func() {
			defer wg.Done()
			if _, err := b.SetSignal(e.ctx, "paid", r.ID, fmt.Appendf(nil, "%d", i), true); err != nil {
				t.Errorf("SetSignal: %v", err)
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		waitFor(t, "run "+id+" to end", e.completed(id))
		if v, _, _ := o.get(id); v != fmt.Sprint(i) {
			t.Errorf("run %d ended with %q", i, v)
		}
	}
}

// signalsADecisionAndASetRacingOnOneRunBothLand is the case "Signals/ADecisionAndASetRacingOnOneRunBothLand": a decision and a set racing on one run both land.
func signalsADecisionAndASetRacingOnOneRunBothLand(t *testing.T, e *env) {
	// A run waits for an approval and a signal at once; another instance decides the
	// one and sets the other at the same time as the run suspends. Both writes land
	// (neither waits on the other forever) and the run resumes once, with both.
	var o outcomes
	body := func(owner string) func(ctx context.Context, r *journal.Run) {
		return func(ctx context.Context, r *journal.Run) {
			ok, err := r.Park(ctx, "ok", time.Time{}, nil)
			if err != nil {
				o.set(r.ID, owner, "error: "+err.Error())
				_ = r.Fail(ctx, err.Error())
				return
			}
			paid, err := r.WaitSignal(ctx, "paid", r.ID, time.Time{})
			if err != nil {
				o.set(r.ID, owner, "error: "+err.Error())
				_ = r.Fail(ctx, err.Error())
				return
			}
			if ok == nil || paid == nil {
				_ = r.Suspend(ctx)
				return
			}
			o.set(r.ID, owner, string(ok.Kind)+" "+string(paid.Payload))
			_ = r.Complete(ctx, paid.Payload)
		}
	}
	a := e.journal("a", func(opt *journal.Options) { opt.Resumer = body("a") })
	b := e.journal("b", func(opt *journal.Options) { opt.Resumer = body("b") })
	const n = 10
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		r := e.begin(a)
		ids[i] = r.ID
		wg.Add(3)
		go func() { defer wg.Done(); body("a")(e.ctx, r) }()
		go func() {
			defer wg.Done()
			if _, err := b.SetSignal(e.ctx, "paid", r.ID, fmt.Appendf(nil, "%d", i), true); err != nil {
				t.Errorf("SetSignal: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			// Until the run has parked, its park is unknown or its lease held: try again,
			// as an approver would.
			for {
				err := b.Decide(e.ctx, r.ID, "ok", journal.Decision{Kind: journal.DecisionApprove})
				if err == nil || errors.Is(err, journal.ErrConflict) {
					return
				}
				if !errors.Is(err, journal.ErrNotFound) && !errors.Is(err, journal.ErrLeaseBusy) {
					t.Errorf("Decide: %v", err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		waitFor(t, "run "+id+" to end", e.completed(id))
		if v, _, _ := o.get(id); v != fmt.Sprintf("approve %d", i) {
			t.Errorf("run %d ended with %q", i, v)
		}
	}
}

// channelsAPublishRacingAReceiveNeverLosesIt is the case "Channels/APublishRacingAReceiveNeverLosesIt": a publish racing a receive never loses it.
func channelsAPublishRacingAReceiveNeverLosesIt(t *testing.T, e *env) {
	var o outcomes
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		ch := fmt.Sprintf("room-%d", i)
		a := e.journal(fmt.Sprintf("a%d", i), func(opt *journal.Options) { opt.Resumer = receiveRun(&o, "a", ch, 1) })
		b := e.journal(fmt.Sprintf("b%d", i), func(opt *journal.Options) { opt.Resumer = receiveRun(&o, "b", ch, 1) })
		r := e.begin(a)
		ids[i] = r.ID
		wg.Add(2)
		go func() { defer wg.Done(); receiveRun(&o, "a", ch, 1)(e.ctx, r) }()
		go func() {
			defer wg.Done()
			if _, err := b.Publish(e.ctx, ch, fmt.Appendf(nil, "%d", i)); err != nil {
				t.Errorf("Publish: %v", err)
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		waitFor(t, "run "+id+" to end", e.completed(id))
		if v, _, _ := o.get(id); v != fmt.Sprintf(`["1:%d"]`, i) {
			t.Errorf("run %d ended with %s", i, v)
		}
	}
}

// channelsPublishesFromTwoInstancesHaveGapFreeSeqs is the case "Channels/PublishesFromTwoInstancesHaveGapFreeSeqs": publishes from two instances have gap free seqs.
func channelsPublishesFromTwoInstancesHaveGapFreeSeqs(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := a
			if i%2 == 1 {
				j = b
			}
			if _, err := j.Publish(e.ctx, "room", fmt.Appendf(nil, "%d", i)); err != nil {
				t.Errorf("Publish: %v", err)
			}
		}()
	}
	wg.Wait()
	var seen []string
	after := int64(0)
	for {
		msgs, err := b.Messages(e.ctx, "room", after, 7)
		must(t, "Messages", err)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			if m.Seq != after+1 {
				t.Fatalf("seq %d after %d: a gap", m.Seq, after)
			}
			after = m.Seq
			seen = append(seen, string(m.Payload))
		}
	}
	slices.Sort(seen)
	seen = slices.Compact(seen)
	if len(seen) != n || after != n {
		t.Fatalf("read %d distinct messages up to seq %d, want %d", len(seen), after, n)
	}
	if msgs, err := a.Messages(e.ctx, "other", 0, 10); err != nil || len(msgs) != 0 {
		t.Fatalf("another channel: %v, %v", msgs, err)
	}
}

// channelsEachReceivingRunGetsEveryMessageOnceInOrder is the case "Channels/EachReceivingRunGetsEveryMessageOnceInOrder": each receiving run gets every message once in order.
func channelsEachReceivingRunGetsEveryMessageOnceInOrder(t *testing.T, e *env) {
	var o outcomes
	a := e.journal("a", func(opt *journal.Options) { opt.Resumer = receiveRun(&o, "a", "room", 3) })
	b := e.journal("b", func(opt *journal.Options) { opt.Resumer = receiveRun(&o, "b", "room", 3) })
	_, err := b.Publish(e.ctx, "room", json.RawMessage(`"m1"`))
	must(t, "Publish", err)
	r1, r2 := e.begin(a), e.begin(b)
	receiveRun(&o, "a", "room", 3)(e.ctx, r1)
	receiveRun(&o, "b", "room", 3)(e.ctx, r2)
	for _, id := range []string{r1.ID, r2.ID} {
		if rec := e.run(id); rec.Status != journal.StatusParked {
			t.Fatalf("a receive with nothing left: run %s, want parked", rec.Status)
		}
	}
	_, err = a.Publish(e.ctx, "room", json.RawMessage(`"m2"`))
	must(t, "Publish", err)
	_, err = b.Publish(e.ctx, "room", json.RawMessage(`"m3"`))
	must(t, "Publish", err)
	want := `["1:\"m1\"","2:\"m2\"","3:\"m3\""]`
	for _, id := range []string{r1.ID, r2.ID} {
		waitFor(t, "run "+id+" to end", e.completed(id))
		if v, _, _ := o.get(id); v != want {
			t.Fatalf("run received %s, want %s", v, want)
		}
	}
}

// channelsAReceiveTimesOut is the case "Channels/AReceiveTimesOut": a receive times out.
func channelsAReceiveTimesOut(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	m, err := r.Receive(e.ctx, "quiet", e.clock.Now().Add(time.Second))
	if m != nil || err != nil {
		t.Fatalf("receive on an empty channel: %v, %v; want parked", m, err)
	}
	must(t, "Suspend", r.Suspend(e.ctx))
	e.clock.Advance(time.Second)
	var got error
	j.SetResumer(func(ctx context.Context, r *journal.Run) {
		_, got = r.Receive(ctx, "quiet", time.Time{})
		_ = r.Complete(ctx, nil)
	})
	_, err = j.RecoverOnce(e.ctx)
	must(t, "RecoverOnce", err)
	waitFor(t, "the run to end", e.completed(r.ID))
	if !errors.Is(got, journal.ErrTimedOut) {
		t.Fatalf("receive after the deadline: %v, want ErrTimedOut", got)
	}
}

// channelsAReceiveAfterRetentionWaitsForTheNextMessage is the case "Channels/AReceiveAfterRetentionWaitsForTheNextMessage": a receive after retention waits for the next message.
func channelsAReceiveAfterRetentionWaitsForTheNextMessage(t *testing.T, e *env) {
	// Every message the run would have read is gone: the receive parks once, for
	// a message after the channel's latest, and gets the next one published.
	var o outcomes
	j := e.journal("a", func(opt *journal.Options) {
		opt.ChannelRetention = time.Hour
		opt.Resumer = receiveRun(&o, "a", "room", 1)
	})
	for range 3 {
		_, err := j.Publish(e.ctx, "room", json.RawMessage(`"old"`))
		must(t, "Publish", err)
	}
	e.clock.Advance(2 * time.Hour)
	_, err := j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	r := e.begin(j)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	receiveRun(&o, "a", "room", 1)(ctx, r)
	if rec := e.run(r.ID); rec.Status != journal.StatusParked {
		t.Fatalf("a receive with every message expired: run %s, want parked", rec.Status)
	}
	parks, err := e.d.ListParks(e.ctx, r.ID)
	must(t, "ListParks", err)
	if len(parks) != 1 || parks[0].Decision != nil || parks[0].After != 3 {
		t.Fatalf("parks %+v, want one pending, waiting after seq 3", parks)
	}
	_, err = j.Publish(e.ctx, "room", json.RawMessage(`"next"`))
	must(t, "Publish", err)
	waitFor(t, "run "+r.ID+" to end", e.completed(r.ID))
	if v, _, _ := o.get(r.ID); v != `["4:\"next\""]` {
		t.Fatalf("run received %s, want the next message", v)
	}
}

// channelsRetentionDeletesOldMessagesAndSeqsGoOn is the case "Channels/RetentionDeletesOldMessagesAndSeqsGoOn": retention deletes old messages and seqs go on.
func channelsRetentionDeletesOldMessagesAndSeqsGoOn(t *testing.T, e *env) {
	j := e.journal("a", func(opt *journal.Options) { opt.ChannelRetention = time.Hour })
	for range 3 {
		_, err := j.Publish(e.ctx, "room", json.RawMessage(`"old"`))
		must(t, "Publish", err)
	}
	e.clock.Advance(2 * time.Hour)
	seq, err := j.Publish(e.ctx, "room", json.RawMessage(`"new"`))
	must(t, "Publish", err)
	res, err := j.CleanupOnce(e.ctx)
	must(t, "CleanupOnce", err)
	msgs, err := j.Messages(e.ctx, "room", 0, 10)
	must(t, "Messages", err)
	if res.Messages != 3 || seq != 4 || len(msgs) != 1 || msgs[0].Seq != 4 || string(msgs[0].Payload) != `"new"` {
		t.Fatalf("after retention: deleted %d, kept %+v (seq %d)", res.Messages, msgs, seq)
	}
}
