package journaltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bbc28f59/engine/journal"
)

func stepCases() []testCase {
	return []testCase{
		{"Steps/ReplayReturnsRecordedWithoutRunning", stepsReplayReturnsRecordedWithoutRunning},
		{"Steps/OrdinaryErrorsAreRecordedAndReplayed", stepsOrdinaryErrorsAreRecordedAndReplayed},
		{"Steps/CancellationIsNotRecorded", stepsCancellationIsNotRecorded},
		{"Steps/NonDeterministicReplayFailsLoudly", stepsNonDeterministicReplayFailsLoudly},
		{"Steps/WriteAfterLeaseLossIsRejected", stepsWriteAfterLeaseLossIsRejected},
		{"Steps/InsertStepCreatesItsStreamsInTheSameWrite", stepsInsertStepCreatesItsStreamsInTheSameWrite},
		{"Steps/InsertStepStoresNothingWhenItsStreamExistsOrItsFenceIsStale", stepsInsertStepStoresNothingWhenItsStreamExistsOrItsFenceIsStale},
		{"Steps/CreateLogStepOpensTheLogInTheStepsWriteAndContinuesItOnReplay", stepsCreateLogStepOpensTheLogInTheStepsWriteAndContinuesItOnReplay},
		{"Steps/CreateLogStepCreatesTheStreamOfAStepRecordedWithoutOne", stepsCreateLogStepCreatesTheStreamOfAStepRecordedWithoutOne},
		{"Steps/DriverRejectsDuplicatePosition", stepsDriverRejectsDuplicatePosition},
	}
}

// stepsReplayReturnsRecordedWithoutRunning is the case "Steps/ReplayReturnsRecordedWithoutRunning": replay returns recorded without running.
func stepsReplayReturnsRecordedWithoutRunning(t *testing.T, e *env) {
	var mu sync.Mutex
	counts := make([]int, 3)
	handler := func(r *journal.Run) []string {
		var outs []string
		for i := range 3 {
			out, err := r.Step(e.ctx, fmt.Sprintf("s%d", i), stepFn(&counts[i], &mu, fmt.Sprintf(`{"i":%d}`, i)))
			must(t, "Step", err)
			outs = append(outs, string(out))
		}
		return outs
	}
	a := e.journal("a")
	r := e.begin(a)
	if r.Replaying() {
		t.Fatal("a fresh run reports Replaying")
	}
	first := handler(r)
	must(t, "Release", r.Release(e.ctx))

	b := e.journal("b")
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	if !r2.Replaying() || r2.Epoch() != 2 {
		t.Fatalf("claimed run: replaying %v epoch %d", r2.Replaying(), r2.Epoch())
	}
	second := handler(r2)
	for i := range 3 {
		if counts[i] != 1 {
			t.Fatalf("step %d ran %d times, want 1", i, counts[i])
		}
		if !jsonEq([]byte(first[i]), []byte(second[i])) {
			t.Fatalf("replayed step %d = %s, want %s", i, second[i], first[i])
		}
	}
	// A new position after the replayed ones runs normally.
	n := 0
	_, err = r2.Step(e.ctx, "s3", stepFn(&n, &mu, `1`))
	must(t, "Step s3", err)
	if n != 1 {
		t.Fatalf("new step ran %d times", n)
	}
}

// stepsOrdinaryErrorsAreRecordedAndReplayed is the case "Steps/OrdinaryErrorsAreRecordedAndReplayed": ordinary errors are recorded and replayed.
func stepsOrdinaryErrorsAreRecordedAndReplayed(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.begin(a)
	calls := 0
	fail := func(context.Context) (json.RawMessage, error) { calls++; return nil, errors.New("tool exploded") }
	if _, err := r.Step(e.ctx, "tool", fail); err == nil || err.Error() != "tool exploded" {
		t.Fatalf("first execution err = %v", err)
	}
	must(t, "Release", r.Release(e.ctx))
	r2, err := a.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	_, err = r2.Step(e.ctx, "tool", fail)
	var se *journal.StepError
	if !errors.As(err, &se) || se.Message != "tool exploded" || se.Step != "tool" {
		t.Fatalf("replayed err = %#v", err)
	}
	if calls != 1 {
		t.Fatalf("fn ran %d times, want 1", calls)
	}
}

// stepsCancellationIsNotRecorded is the case "Steps/CancellationIsNotRecorded": cancellation is not recorded.
func stepsCancellationIsNotRecorded(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.begin(a)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := r.Step(ctx, "model", func(ctx context.Context) (json.RawMessage, error) { return nil, ctx.Err() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	steps, err := e.d.LoadSteps(e.ctx, r.ID)
	must(t, "LoadSteps", err)
	if len(steps) != 0 {
		t.Fatalf("cancelled step was recorded: %+v", steps)
	}
	must(t, "Release", r.Release(e.ctx))
	r2, err := a.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	ran := false
	_, err = r2.Step(e.ctx, "model", func(context.Context) (json.RawMessage, error) { ran = true; return json.RawMessage(`1`), nil })
	must(t, "Step", err)
	if !ran {
		t.Fatal("step after a cancelled execution was not run")
	}
}

// stepsNonDeterministicReplayFailsLoudly is the case "Steps/NonDeterministicReplayFailsLoudly": non deterministic replay fails loudly.
func stepsNonDeterministicReplayFailsLoudly(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.begin(a)
	_, err := r.Step(e.ctx, "search", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`1`), nil })
	must(t, "Step", err)
	must(t, "Release", r.Release(e.ctx))
	r2, err := a.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	ran := false
	_, err = r2.Step(e.ctx, "email", func(context.Context) (json.RawMessage, error) { ran = true; return nil, nil })
	if !errors.Is(err, journal.ErrNonDeterministic) {
		t.Fatalf("err = %v, want ErrNonDeterministic", err)
	}
	if !strings.Contains(err.Error(), `"search"`) || !strings.Contains(err.Error(), `"email"`) {
		t.Fatalf("error does not name both steps: %v", err)
	}
	if ran {
		t.Fatal("fn ran on a non-deterministic replay")
	}
}

// stepsWriteAfterLeaseLossIsRejected is the case "Steps/WriteAfterLeaseLossIsRejected": write after lease loss is rejected.
func stepsWriteAfterLeaseLossIsRejected(t *testing.T, e *env) {
	a, b := e.journal("a"), e.journal("b")
	r := e.begin(a)
	e.clock.Advance(leaseTTL + 1)
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	ran := false
	_, err = r.Step(e.ctx, "x", func(context.Context) (json.RawMessage, error) { ran = true; return json.RawMessage(`1`), nil })
	if !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale writer err = %v, want ErrLeaseLost", err)
	}
	if !ran {
		t.Fatal("the stale step's fn did not run; the fence is checked on the write")
	}
	steps, err := e.d.LoadSteps(e.ctx, r.ID)
	must(t, "LoadSteps", err)
	if len(steps) != 0 {
		t.Fatalf("stale writer recorded %+v", steps)
	}
	if _, err := r.Step(e.ctx, "y", func(context.Context) (json.RawMessage, error) { return nil, nil }); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("every later write must fail: %v", err)
	}
	_, err = r2.Step(e.ctx, "x", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`2`), nil })
	must(t, "new owner Step", err)
}

// stepsInsertStepCreatesItsStreamsInTheSameWrite is the case "Steps/InsertStepCreatesItsStreamsInTheSameWrite": insert step creates its streams in the same write.
func stepsInsertStepCreatesItsStreamsInTheSameWrite(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	step := journal.StepRecord{RunID: r.ID, Position: 0, Name: "open", Result: json.RawMessage(`"s1"`), CreatedAt: e.clock.Now()}
	must(t, "InsertStep", e.d.InsertStep(e.ctx, r.Fence(), step, opens(journal.Stream{ID: "s1", RunID: r.ID, Flow: "f", Tenant: "t1", CreatedAt: e.clock.Now()})))
	st, err := e.d.GetStream(e.ctx, "s1")
	must(t, "GetStream", err)
	if st.RunID != r.ID || st.Flow != "f" || st.Tenant != "t1" || st.FinishedAt != nil {
		t.Fatalf("stream = %+v", st)
	}
	e.onlyStep(t, r.ID, `"s1"`)
}

// stepsInsertStepStoresNothingWhenItsStreamExistsOrItsFenceIsStale is the case "Steps/InsertStepStoresNothingWhenItsStreamExistsOrItsFenceIsStale": insert step stores nothing when its stream exists or its fence is stale.
func stepsInsertStepStoresNothingWhenItsStreamExistsOrItsFenceIsStale(t *testing.T, e *env) {
	j := e.journal("a")
	r := e.begin(j)
	e.stream(j, "taken", r.ID)
	at := func(pos int) journal.StepRecord {
		return journal.StepRecord{RunID: r.ID, Position: pos, Name: "open", Result: json.RawMessage(`"x"`), CreatedAt: e.clock.Now()}
	}
	if err := e.d.InsertStep(e.ctx, r.Fence(), at(0), opens(journal.Stream{ID: "taken", RunID: r.ID})); !errors.Is(err, journal.ErrConflict) {
		t.Fatalf("existing stream err = %v, want ErrConflict", err)
	}
	stale := r.Fence()
	stale.Epoch--
	if err := e.d.InsertStep(e.ctx, stale, at(0), opens(journal.Stream{ID: "fresh", RunID: r.ID})); !errors.Is(err, journal.ErrLeaseLost) {
		t.Fatalf("stale fence err = %v, want ErrLeaseLost", err)
	}
	must(t, "InsertStep", e.d.InsertStep(e.ctx, r.Fence(), at(0), journal.StepWrites{}))
	if err := e.d.InsertStep(e.ctx, r.Fence(), at(0), opens(journal.Stream{ID: "fresh", RunID: r.ID})); !errors.Is(err, journal.ErrStepExists) {
		t.Fatalf("taken position err = %v, want ErrStepExists", err)
	}
	if _, err := e.d.GetStream(e.ctx, "fresh"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("a failed InsertStep created its stream: err = %v", err)
	}
	e.onlyStep(t, r.ID, `"x"`) // the one stored without a stream
}

// stepsCreateLogStepOpensTheLogInTheStepsWriteAndContinuesItOnReplay is the case "Steps/CreateLogStepOpensTheLogInTheStepsWriteAndContinuesItOnReplay": create log step opens the log in the steps write and continues it on replay.
func stepsCreateLogStepOpensTheLogInTheStepsWriteAndContinuesItOnReplay(t *testing.T, e *env) {
	cd := &countingDriver{Driver: e.d}
	a := e.journalOn(cd, "a")
	r := e.begin(a)
	newStream := func() journal.Stream {
		return journal.Stream{ID: "agent-1", Flow: "chat", Tenant: "t1", PrincipalID: "u1"}
	}
	w, err := r.CreateLogStep(e.ctx, "agent-run", newStream, quiet)
	must(t, "CreateLogStep", err)
	if n := cd.creates.Load(); n != 0 {
		t.Fatalf("CreateLogStep made %d CreateStream calls, want the stream created by the step's write", n)
	}
	st, err := a.GetStream(e.ctx, "agent-1")
	must(t, "GetStream", err)
	if w.StreamID() != "agent-1" || st.RunID != r.ID || st.PrincipalID != "u1" || st.Flow != "chat" {
		t.Fatalf("writer on %q, stream %+v", w.StreamID(), st)
	}
	write(t, e, w, `{"type":"RUN_STARTED"}`)
	must(t, "Close", w.Close(e.ctx))
	must(t, "Release", r.Release(e.ctx))

	b := e.journal("b")
	r2, err := b.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	w2, err := r2.CreateLogStep(e.ctx, "agent-run", func() journal.Stream {
		return journal.Stream{ID: "agent-2", Flow: "chat", Tenant: "t1", PrincipalID: "u1"} // a replay keeps the recorded id
	}, quiet)
	must(t, "CreateLogStep on replay", err)
	if w2.StreamID() != "agent-1" || w2.LastSeq() != 1 {
		t.Fatalf("replay writer on %q after seq %d, want agent-1 after 1", w2.StreamID(), w2.LastSeq())
	}
	must(t, "Close", w2.Close(e.ctx))
	if _, err := b.GetStream(e.ctx, "agent-2"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("the replay created a second stream: err = %v", err)
	}
}

// stepsCreateLogStepCreatesTheStreamOfAStepRecordedWithoutOne is the case "Steps/CreateLogStepCreatesTheStreamOfAStepRecordedWithoutOne": create log step creates the stream of a step recorded without one.
func stepsCreateLogStepCreatesTheStreamOfAStepRecordedWithoutOne(t *testing.T, e *env) {
	// A run recorded by a version that stored the id step and the stream apart may
	// have stopped between the two.
	a := e.journal("a")
	r := e.begin(a)
	_, err := r.Step(e.ctx, "agent-run", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"agent-1"`), nil })
	must(t, "Step", err)
	must(t, "Release", r.Release(e.ctx))
	r2, err := a.Claim(e.ctx, r.ID)
	must(t, "Claim", err)
	w, err := r2.CreateLogStep(e.ctx, "agent-run", func() journal.Stream { return journal.Stream{ID: "other", Flow: "chat"} }, quiet)
	must(t, "CreateLogStep", err)
	st, err := a.GetStream(e.ctx, "agent-1")
	must(t, "GetStream", err)
	if w.StreamID() != "agent-1" || st.RunID != r.ID || st.Flow != "chat" {
		t.Fatalf("writer on %q, stream %+v", w.StreamID(), st)
	}
	must(t, "Close", w.Close(e.ctx))
}

// stepsDriverRejectsDuplicatePosition is the case "Steps/DriverRejectsDuplicatePosition": driver rejects duplicate position.
func stepsDriverRejectsDuplicatePosition(t *testing.T, e *env) {
	a := e.journal("a")
	r := e.begin(a)
	s := journal.StepRecord{RunID: r.ID, Position: 0, Name: "x", Result: json.RawMessage(`1`), CreatedAt: e.clock.Now()}
	must(t, "InsertStep", e.d.InsertStep(e.ctx, r.Fence(), s, journal.StepWrites{}))
	if err := e.d.InsertStep(e.ctx, r.Fence(), s, journal.StepWrites{}); !errors.Is(err, journal.ErrStepExists) {
		t.Fatalf("duplicate position err = %v", err)
	}
}

// onlyStep fails t unless the run's one recorded step holds result.
func (e *env) onlyStep(t *testing.T, runID, result string) {
	t.Helper()
	steps, err := e.d.LoadSteps(e.ctx, runID)
	must(t, "LoadSteps", err)
	if len(steps) != 1 || string(steps[0].Result) != result {
		t.Fatalf("steps = %+v, want one holding %s", steps, result)
	}
}

// opens is the write of a step that creates streams.
func opens(s ...journal.Stream) journal.StepWrites { return journal.StepWrites{Opens: s} }
