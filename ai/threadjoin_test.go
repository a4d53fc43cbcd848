package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
)

// TestThreadJoinMidRun: a follower that joins a thread with from=now while its second
// run streams text gets the run's RUN_STARTED, then MESSAGES_SNAPSHOT with the whole
// conversation so far (the first run, and the second's tool call and result), then the
// open message from its start: a valid AG-UI sequence. The thread's history route then
// reads the same conversation, finished.
func TestThreadJoinMidRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{
		{Calls: []call{{ID: "c1", Name: "tools_weather", Args: `{"city":"Oslo"}`}}},
		{Text: strings.Repeat("tick ", 60), Delay: 10 * time.Millisecond},
	}})
	first := w.stream(t, "/chat/agui", `{"threadId":"tj","runId":"r1","messages":[{"id":"u1","role":"user","content":"Oslo?"}]}`)
	first.finished(t)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	runID, res := w.midRun(t, ctx, `{"threadId":"tj","runId":"r2","messages":[{"id":"u1","role":"user","content":"Oslo?"},{"id":"u2","role":"user","content":"Again?"}]}`)
	defer res.Body.Close()
	frames, raw, err := w.readThread("tj", "?from=now", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	verifyAGUI(t, raw, true)
	if len(frames) < 3 {
		t.Fatalf("joined with %d frames:\n%s", len(frames), raw)
	}
	if s, ok := frames[0].Event.(agui.RunStarted); !ok || s.RunID != runID || frames[0].Seq != ai.ThreadEventID(2, 1) {
		t.Fatalf("first frame %+v (id %d), want RUN_STARTED of %s", frames[0].Event, frames[0].Seq, runID)
	}
	snap, ok := frames[1].Event.(agui.MessagesSnapshot)
	if !ok {
		t.Fatalf("second frame %+v, want MESSAGES_SNAPSHOT:\n%s", frames[1].Event, raw)
	}
	roles := func(msgs []agui.InputMessage) string {
		var out []string
		for _, m := range msgs {
			r := m.Role
			if len(m.ToolCalls) > 0 {
				r += "+call"
			}
			out = append(out, r)
		}
		return strings.Join(out, ",")
	}
	// The first run: user, assistant tool call, tool result, assistant text; the second:
	// the new user message, its tool call and result. Its text is still being written.
	eq(t, "snapshot roles", roles(snap.Messages), "user,assistant+call,tool,assistant,user,assistant+call,tool")
	if !strings.Contains(snap.Messages[3].Content, "tick tick") || snap.Messages[1].ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("snapshot %+v", snap.Messages)
	}
	var text strings.Builder
	for _, f := range frames[2:] {
		if c, ok := f.Event.(agui.TextMessageContent); ok {
			text.WriteString(c.Delta)
		}
	}
	eq(t, "the open message, whole", text.String(), strings.Repeat("tick ", 60))

	// The history route reads the finished conversation.
	status, body := w.get(t, "/agent/threads/tj/messages")
	if status != http.StatusOK {
		t.Fatalf("history: %d %s", status, body)
	}
	var hist struct {
		Data ai.ThreadMessages `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &hist); err != nil {
		t.Fatal(err)
	}
	eq(t, "history roles", roles(hist.Data.Messages), "user,assistant+call,tool,assistant,user,assistant+call,tool,assistant")
	eq(t, "last message", hist.Data.Messages[7].Content, strings.Repeat("tick ", 60))
	if status, body := w.get(t, "/agent/threads/nope/messages"); status != http.StatusNotFound {
		t.Fatalf("unknown thread: %d %s", status, body)
	}

	// The Go client reads the same history, and joins the finished thread at its next run.
	c, err := clientx.New(w.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := agent.ThreadMessages(ctx, c, "tj")
	if err != nil || roles(msgs) != roles(hist.Data.Messages) {
		t.Fatalf("ThreadMessages = %v, %v", roles(msgs), err)
	}
	if _, err := agent.ThreadMessages(ctx, c, "nope"); !isCode(err, "NotFound") {
		t.Fatalf("ThreadMessages of an unknown thread: %v", err)
	}
	joined := make(chan agent.Frame, 1)
	go func() {
		for f, err := range agent.FollowThread(ctx, c, "tj", agent.FollowOptions{FromNow: true}) {
			if err == nil {
				joined <- f
			}
			close(joined)
			return
		}
	}()
	time.Sleep(100 * time.Millisecond) // the follower waits for the thread's next run
	third := w.stream(t, "/chat/agui", `{"threadId":"tj","runId":"r3","messages":[{"id":"u3","role":"user","content":"More?"}]}`)
	f, ok := <-joined
	if s, isStart := f.Event.(agui.RunStarted); !ok || !isStart || s.RunID != third.started(t).RunID || f.Seq != ai.ThreadEventID(3, 1) {
		t.Fatalf("joined the finished thread with %+v (id %d), want the third run's RUN_STARTED", f.Event, f.Seq)
	}
}

// isCode reports whether err is an *engine.Error with the code.
func isCode(err error, code string) bool {
	var e *engine.Error
	return errors.As(err, &e) && e.Code == code
}

// midRun starts an agent run on /chat/agui with body and returns once the run is in
// the middle of its text, live and in its log, with the run id and the live response,
// which the caller reads to the end.
func (w *world) midRun(t *testing.T, ctx context.Context, body string) (string, *http.Response) {
	t.Helper()
	res := w.open(t, ctx, "/chat/agui", body)
	runID := untilText(t, res.Body)
	waitLoggedText(t, ctx, w.journal, runID)
	return runID, res
}

// untilText reads a live agent stream until its first TEXT_MESSAGE_CONTENT and returns
// the run id.
func untilText(t *testing.T, body io.Reader) string {
	t.Helper()
	var runID string
	for f, err := range agent.ReadFrames(body) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.Event.(agui.RunStarted); ok {
			runID = s.RunID
		}
		if _, ok := f.Event.(agui.TextMessageContent); ok {
			break // the run is in the middle of its text
		}
	}
	return runID
}

// waitLoggedText waits until the log of the run holds some of its text: it is written
// behind the live stream.
func waitLoggedText(t *testing.T, ctx context.Context, j *journal.Journal, runID string) {
	t.Helper()
	for logged := false; !logged; time.Sleep(5 * time.Millisecond) {
		_, rows, err := j.ReadStream(ctx, runID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			logged = logged || agui.TypeOf(row.Event) == agui.TypeTextMessageContent
		}
	}
}

// TestThreadJoinWithState: a run with state joined mid-run starts with STATE_SNAPSHOT,
// the state the client sent with the tool's change applied, before MESSAGES_SNAPSHOT.
func TestThreadJoinWithState(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{tools: []string{"tools.remember"}, turns: []turn{
		{Calls: []call{{ID: "c1", Name: "tools_remember", Args: `{"key":"city","value":"Oslo"}`}}},
		{Text: strings.Repeat("tick ", 60), Delay: 10 * time.Millisecond},
	}})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, res := w.midRun(t, ctx, `{"threadId":"ts","runId":"r1","state":{"unit":"C"},"messages":[{"id":"u1","role":"user","content":"Remember Oslo"}]}`)
	defer res.Body.Close()
	frames, raw, err := w.readThread("ts", "?from=now", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	verifyAGUI(t, raw, true)
	if len(frames) < 3 {
		t.Fatalf("joined with:\n%s", raw)
	}
	st, ok := frames[1].Event.(agui.StateSnapshot)
	var state map[string]string
	if !ok || json.Unmarshal(st.Snapshot, &state) != nil || state["city"] != "Oslo" || state["unit"] != "C" || len(state) != 2 {
		t.Fatalf("second frame %+v, want STATE_SNAPSHOT {city: Oslo, unit: C}:\n%s", frames[1].Event, raw)
	}
	if _, ok := frames[2].Event.(agui.MessagesSnapshot); !ok {
		t.Fatalf("third frame %+v, want MESSAGES_SNAPSHOT", frames[2].Event)
	}
}

// get reads path and returns the status and body.
func (w *world) get(t *testing.T, path string) (int, string) {
	t.Helper()
	res, err := http.Get(w.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// TestFollowThreadThroughASignal follows a thread from before its first run through a
// run a client starts and one a signal starts: a durable flow parked on the signal runs
// the agent on the thread once the signal is set, with no client attached, and the
// thread's follower sees it as the thread's second run.
func TestFollowThreadThroughASignal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "One."}}})
	type followed struct {
		frames []agent.Frame
		raw    string
		err    error
	}
	got := make(chan followed, 1)
	go func() {
		frames, raw, err := w.followThread("tsig", "", 2)
		got <- followed{frames, raw, err}
	}()
	// The signal's flow parks first: its caller is answered 202.
	if status, body := w.post(t, "/chat/on-signal", `{"threadId":"tsig"}`); status != http.StatusAccepted {
		t.Fatalf("the signal's flow answered %d %s, want 202 (parked)", status, body)
	}
	first := w.stream(t, "/chat/agui", `{"threadId":"tsig","runId":"r1","messages":[{"id":"u","role":"user","content":"count"}]}`)
	if err := nudge.SetApp(t.Context(), w.app, "tsig", "count again"); err != nil {
		t.Fatal(err)
	}
	f := <-got
	if f.err != nil {
		t.Fatal(f.err)
	}
	verifyAGUI(t, f.raw, true)
	var started []string
	var text strings.Builder
	for _, fr := range f.frames {
		switch ev := fr.Event.(type) {
		case agui.RunStarted:
			started = append(started, ev.RunID)
			eq(t, "thread id", ev.ThreadID, "tsig")
		case agui.TextMessageContent:
			text.WriteString(ev.Delta)
		}
	}
	if len(started) != 2 || started[0] != first.started(t).RunID || text.String() != "One.One." {
		t.Fatalf("thread stream: runs %v (the first %s), text %q:\n%s", started, first.started(t).RunID, text.String(), f.raw)
	}
	// The history holds both runs' replies. The signal's message is no flow input (the
	// flow's input names the thread only), so it is not in the history.
	status, body := w.get(t, "/agent/threads/tsig/messages")
	var hist struct {
		Data ai.ThreadMessages `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &hist); status != http.StatusOK || err != nil {
		t.Fatalf("history: %d %s", status, body)
	}
	var roles []string
	for _, m := range hist.Data.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	eq(t, "history", strings.Join(roles, ","), "user:count,assistant:One.,assistant:One.")
}
