package ai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// Takeovers in one process: instance a runs on a driver that "dies" right after a
// chosen step is recorded (every later write of a blocks, as a killed process writes
// nothing more), and instance b, on the same storage, takes the run over once a's lease
// expires. The stored log must then hold every event of the recorded steps, and every id
// a's live client was shown must still name the event it was shown with.

// dyingDriver is a's storage: after the step named with the prefix dieAfter is recorded,
// every write blocks until the test ends, then fails as a dead owner's would.
type dyingDriver struct {
	journal.Driver
	dieAfter string

	once    sync.Once
	dead    chan struct{}
	release chan struct{}
}

func newDyingDriver(d journal.Driver, dieAfter string) *dyingDriver {
	return &dyingDriver{Driver: d, dieAfter: dieAfter, dead: make(chan struct{}), release: make(chan struct{})}
}

// gone blocks a write of the dead instance until the test ends.
func (d *dyingDriver) gone() bool {
	select {
	case <-d.dead:
		<-d.release
		return true
	default:
		return false
	}
}

func (d *dyingDriver) InsertStep(ctx context.Context, f journal.Fence, s journal.StepRecord, w journal.StepWrites) error {
	if d.gone() {
		return journal.ErrLeaseLost
	}
	err := d.Driver.InsertStep(ctx, f, s, w)
	if err == nil && strings.HasPrefix(s.Name, d.dieAfter) {
		d.once.Do(func() { close(d.dead) })
	}
	return err
}

func (d *dyingDriver) AppendEvents(ctx context.Context, f *journal.Fence, a journal.Append) error {
	if d.gone() {
		return journal.ErrLeaseLost
	}
	return d.Driver.AppendEvents(ctx, f, a)
}

func (d *dyingDriver) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	return journal.AppendEach(ctx, d, batch)
}

func (d *dyingDriver) FinishStream(ctx context.Context, id string, f *journal.Fence, rows []journal.EventRow, now time.Time) (int64, error) {
	if d.gone() {
		return 0, journal.ErrLeaseLost
	}
	return d.Driver.FinishStream(ctx, id, f, rows, now)
}

func (d *dyingDriver) UpdateRun(ctx context.Context, f journal.Fence, u journal.RunUpdate, now time.Time) error {
	if d.gone() {
		return journal.ErrLeaseLost
	}
	return d.Driver.UpdateRun(ctx, f, u, now)
}

func (d *dyingDriver) InsertPark(ctx context.Context, f journal.Fence, p journal.ParkRecord) (journal.ParkRecord, error) {
	if d.gone() {
		return journal.ParkRecord{}, journal.ErrLeaseLost
	}
	return d.Driver.InsertPark(ctx, f, p)
}

func (d *dyingDriver) RenewLease(ctx context.Context, f journal.Fence, expires time.Time) error {
	if d.gone() {
		return journal.ErrLeaseLost
	}
	return d.Driver.RenewLease(ctx, f, expires)
}

func (d *dyingDriver) ReleaseRun(ctx context.Context, f journal.Fence) error {
	if d.gone() {
		return journal.ErrLeaseLost
	}
	return d.Driver.ReleaseRun(ctx, f)
}

// takeover is the pair of instances of a takeover test.
type takeover struct {
	clock *journaltest.Clock
	dying *dyingDriver
	a, b  *apEnv
}

func newTakeover(t *testing.T, dieAfter string) *takeover {
	t.Helper()
	model := openaitest.NewServer(
		openaitest.Turn{Text: "Moving the money.", ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		openaitest.Turn{Text: "Sent 500 to bob."},
	)
	t.Cleanup(model.Close)
	shared := memory.New()
	tk := &takeover{clock: journaltest.NewClock(), dying: newDyingDriver(shared, dieAfter)}
	opts := func(owner string) journal.Options {
		return journal.Options{Owner: owner, Now: tk.clock.Now, LeaseTTL: 10 * time.Second}
	}
	tk.a = newApEnv(t, apConfig{driver: tk.dying, jopts: opts("a"), model: model})
	tk.b = newApEnv(t, apConfig{driver: shared, jopts: opts("b"), model: model})
	// Registered after the apps, so it runs before their Close: a's blocked writes end.
	t.Cleanup(func() { close(tk.dying.release) })
	return tk
}

// die waits for a to die, lets its lease expire and has b take the run over.
func (tk *takeover) die(t *testing.T) {
	t.Helper()
	select {
	case <-tk.dying.dead:
	case <-time.After(10 * time.Second):
		t.Fatal("instance a never reached the step it was to die after")
	}
	tk.clock.Advance(11 * time.Second)
	if n, err := tk.b.j.RecoverOnce(t.Context()); err != nil || n != 1 {
		t.Fatalf("b's recovery resumed %d runs (%v), want the one a left", n, err)
	}
}

// storedLog follows stream on b to its end and returns its frames.
func (tk *takeover) storedLog(t *testing.T, stream string) []agent.Frame {
	t.Helper()
	frames, raw := tk.b.followFrames(t, stream, 0)
	verifyAGUI(t, string(raw), true)
	return frames
}

// count returns how many frames have type typ (and, when set, toolCallId id).
func count(frames []agent.Frame, typ agui.Type, id string) int {
	n := 0
	for _, f := range frames {
		if f.Event.Type() != typ {
			continue
		}
		if r, ok := f.Event.(agui.ToolCallResult); ok && id != "" && r.ToolCallID != id {
			continue
		}
		n++
	}
	return n
}

func TestATakeoverAfterAToolRanKeepsItsResultAndDoesNotRunItAgain(t *testing.T) {
	tk := newTakeover(t, "tool:")
	_, events := tk.a.chat(t, "/desk/chat", apAlice, "send bob 500")
	stream := apRunID(t, events)
	fin := events[len(events)-1].(agui.RunFinished)
	if d := tk.a.decide(t, "approve", apAlice, apApproveBody(fin.Outcome.Interrupts[0].ID, "")); d.status != http.StatusOK {
		t.Fatalf("approve: %d %s", d.status, d.raw)
	}
	tk.die(t) // a ran the tool, recorded its step (with its TOOL_CALL_RESULT), and died
	frames := tk.storedLog(t, stream)
	if n := len(tk.a.Transfers()) + len(tk.b.Transfers()); n != 1 {
		t.Fatalf("the transfer ran %d times, want once: b replays the recorded tool step", n)
	}
	if n := count(frames, agui.TypeToolCallResult, "call_1"); n != 1 {
		t.Fatalf("the log holds %d TOOL_CALL_RESULT of call_1, want 1", n)
	}
	var lost, last int
	for i, f := range frames {
		if e, ok := f.Event.(agui.RunError); ok && e.Code == "WorkerLost" {
			lost++
		}
		last = i
	}
	end, ok := frames[last].Event.(agui.RunFinished)
	if lost != 1 || !ok || end.Outcome != nil || end.Result == nil || end.Result.StopReason != agui.StopCompleted {
		t.Fatalf("want one WorkerLost and a completed end; log %v", eventTypes(frames))
	}
}

func TestATakeoverAfterTheModelStepKeepsTheLiveIDsAndTheCallsEvents(t *testing.T) {
	tk := newTakeover(t, "model:")
	// a streams the run live and dies right after its model step (the tool call) is
	// recorded; its client keeps what it was shown.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := tk.a.openChat(t, ctx, "send bob 500")
	var mu sync.Mutex
	shown := map[int64]string{}
	stream := ""
	go func() {
		r := httpx.NewSSEReader(res.Body)
		for {
			f, err := r.Next()
			if err != nil {
				return
			}
			var ev struct {
				Type  string `json:"type"`
				RunID string `json:"runId"`
			}
			_ = json.Unmarshal([]byte(f.Data), &ev)
			mu.Lock()
			if ev.Type == "RUN_STARTED" {
				stream = ev.RunID
			}
			if f.HasID {
				var seq int64
				_ = json.Unmarshal([]byte(f.ID), &seq)
				shown[seq] = f.Data
			}
			mu.Unlock()
		}
	}()
	tk.die(t)
	waitFor(t, "the client to be shown the tool call", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range shown {
			if strings.Contains(d, `"TOOL_CALL_END"`) {
				return true
			}
		}
		return false
	})
	cancel()
	// b replayed the model step and parked the run: approve it there.
	mu.Lock()
	id := stream
	mu.Unlock()
	st, err := tk.b.j.GetStream(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to park the run", func() bool {
		rec, err := tk.b.j.GetRun(t.Context(), st.RunID)
		return err == nil && rec.Status == journal.StatusParked
	})
	interrupt, err := agui.NewInterruptID(st.RunID, "call_1")
	if err != nil {
		t.Fatal(err)
	}
	if d := tk.b.decide(t, "approve", apAlice, apApproveBody(interrupt, "")); d.status != http.StatusOK {
		t.Fatalf("approve on b: %d %s", d.status, d.raw)
	}
	waitFor(t, "the run to complete on b", func() bool {
		st, err := tk.b.j.GetStream(t.Context(), id)
		return err == nil && st.FinishedAt != nil
	})
	frames := tk.storedLog(t, id)
	stored := map[int64]agent.Frame{}
	for _, f := range frames {
		stored[f.Seq] = f
	}
	mu.Lock()
	defer mu.Unlock()
	for seq, data := range shown {
		f, ok := stored[seq]
		if !ok {
			continue // never stored: a died first; no other event took its id
		}
		got, _ := json.Marshal(f.Event)
		var a, b any
		_ = json.Unmarshal([]byte(data), &a)
		_ = json.Unmarshal(got, &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("id %d was shown as %s and is stored as %s", seq, data, got)
		}
	}
	// The recorded model step's events are in the log: its text and its tool call.
	if count(frames, agui.TypeToolCallStart, "") != 1 || count(frames, agui.TypeToolCallEnd, "") != 1 || count(frames, agui.TypeToolCallResult, "call_1") != 1 {
		t.Fatalf("the log lacks the recorded tool call's events: %v", eventTypes(frames))
	}
	if n := len(tk.a.Transfers()) + len(tk.b.Transfers()); n != 1 {
		t.Fatalf("the transfer ran %d times, want once", n)
	}
}

func eventTypes(frames []agent.Frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = string(f.Event.Type())
	}
	return out
}

// takeOnEnd is storage that lets another instance take the run over just before the
// write of a run's end event (here: the interrupt's RUN_FINISHED) reaches it, so that
// write fails with a lost lease.
type takeOnEnd struct {
	journal.Driver
	take func(runID string)
	once sync.Once
}

func (d *takeOnEnd) AppendEvents(ctx context.Context, f *journal.Fence, a journal.Append) error {
	for _, r := range a.Rows {
		if f != nil && strings.Contains(string(r.Event), `"RUN_FINISHED"`) {
			d.once.Do(func() { d.take(f.RunID) })
		}
	}
	return d.Driver.AppendEvents(ctx, f, a)
}

func (d *takeOnEnd) AppendBatch(ctx context.Context, batch []journal.FencedAppend) []error {
	return journal.AppendEach(ctx, d, batch)
}

// An execution that loses its run to another instance while it streams live shows its
// client nothing more: the client never sees an event, with an id or without, that the
// log does not hold (here the interrupt), which the new owner's history would contradict.
func TestALiveClientIsShownNothingOnceItsRunIsTakenOver(t *testing.T) {
	model := openaitest.NewServer(
		openaitest.Turn{Text: "Moving the money.", ToolCalls: []openaitest.ToolCall{{ID: "call_1", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}},
		openaitest.Turn{Text: "Sent."},
	)
	t.Cleanup(model.Close)
	shared, clock := memory.New(), journaltest.NewClock()
	opts := func(owner string) journal.Options {
		return journal.Options{Owner: owner, Now: clock.Now, LeaseTTL: 10 * time.Second}
	}
	b := newApEnv(t, apConfig{driver: shared, jopts: opts("b"), model: model})
	taken := make(chan string, 1)
	d := &takeOnEnd{Driver: shared, take: func(runID string) {
		clock.Advance(11 * time.Second)
		if _, err := b.j.Claim(context.Background(), runID); err != nil {
			t.Errorf("b's claim: %v", err)
		}
		taken <- runID
	}}
	a := newApEnv(t, apConfig{driver: d, jopts: opts("a"), model: model})

	raw, events := a.chat(t, "/desk/chat", apAlice, "send bob 500")
	var runID string
	select {
	case runID = <-taken:
	default:
		t.Fatal("the run was not taken over at its interrupt")
	}
	for _, ev := range events {
		if ev.Type() == agui.TypeRunFinished || ev.Type() == agui.TypeRunError {
			t.Fatalf("a's client was shown a run end the log does not hold:\n%s", raw)
		}
	}
	rec, err := b.j.GetRun(t.Context(), runID)
	if err != nil || rec.LeaseOwner != "b" {
		t.Fatalf("run %+v, %v: want b holding it", rec, err)
	}
	stream := apRunID(t, events)
	rows, err := b.j.ReadEvents(t.Context(), stream, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64]string{}
	for _, r := range rows {
		stored[r.Seq] = string(r.Event)
		if strings.Contains(string(r.Event), `"RUN_FINISHED"`) {
			t.Fatalf("the refused interrupt was stored: %s", r.Event)
		}
	}
	for f, err := range agent.ReadFrames(bytes.NewReader(raw)) {
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(f.Event)
		if s, ok := stored[f.Seq]; f.Seq > 0 && ok && !jsonSame(s, string(got)) {
			t.Fatalf("id %d was shown as %s and is stored as %s", f.Seq, got, s)
		}
	}
}

func jsonSame(a, b string) bool {
	var x, y any
	_ = json.Unmarshal([]byte(a), &x)
	_ = json.Unmarshal([]byte(b), &y)
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
