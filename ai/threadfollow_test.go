package ai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// followThread reads GET /agent/threads/:threadId/events until it has seen runs run
// ends, and returns the frames and their SSE text.
func (w *world) followThread(threadID, lastEventID string, runs int) ([]agent.Frame, string, error) {
	return w.readThread(threadID, "", lastEventID, runs)
}

// readThread reads the thread follow route with a query (from=now) and a Last-Event-ID
// until it has seen runs run ends.
func (w *world) readThread(threadID, query, lastEventID string, runs int) ([]agent.Frame, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.srv.URL+"/agent/threads/"+threadID+"/events"+query, nil)
	if err != nil {
		return nil, "", err
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	var frames []agent.Frame
	var raw strings.Builder
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			return frames, raw.String(), fmt.Errorf("following thread %s: %w after %d frames", threadID, err, len(frames))
		}
		frames = append(frames, f)
		data, _ := agui.AppendJSON(nil, f.Event)
		writeFrame(&raw, f.Seq, data)
		if _, ok := f.Event.(agui.RunFinished); ok {
			if runs--; runs == 0 {
				break
			}
		}
	}
	return frames, raw.String(), nil
}

// TestFollowThread follows a thread from before its first run through three runs, as
// one AG-UI stream with increasing ids, then resumes it after the first run's end.
func TestFollowThread(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "One."}}}) // every run asks afresh: the first turn
	type followed struct {
		frames []agent.Frame
		raw    string
		err    error
	}
	got := make(chan followed, 1)
	go func() {
		frames, raw, err := w.followThread("tf", "", 3)
		got <- followed{frames, raw, err}
	}()
	time.Sleep(50 * time.Millisecond) // the follower waits for the thread's first run
	var runIDs []string
	for i := range 3 {
		tr := w.stream(t, "/chat/agui", fmt.Sprintf(`{"threadId":"tf","runId":"r%d","messages":[{"id":"u","role":"user","content":"count"}]}`, i))
		runIDs = append(runIDs, tr.started(t).RunID)
	}
	f := <-got
	if f.err != nil {
		t.Fatal(f.err)
	}
	verifyAGUI(t, f.raw, true)
	var started []string
	var texts []string
	var last int64
	var firstEnd int64
	for _, fr := range f.frames {
		if fr.Seq <= last {
			t.Fatalf("ids do not increase: %d after %d", fr.Seq, last)
		}
		last = fr.Seq
		switch ev := fr.Event.(type) {
		case agui.RunStarted:
			started = append(started, ev.RunID)
		case agui.TextMessageContent:
			texts = append(texts, ev.Delta)
		case agui.RunFinished:
			if firstEnd == 0 {
				firstEnd = fr.Seq
			}
		}
	}
	if strings.Join(started, ",") != strings.Join(runIDs, ",") || strings.Join(texts, "") != "One.One.One." {
		t.Fatalf("thread stream: runs %v (want %v), text %q", started, runIDs, strings.Join(texts, ""))
	}
	eq(t, "first end's id", firstEnd>>32, 1)
	resumed, raw, err := w.followThread("tf", fmt.Sprint(firstEnd), 2)
	if err != nil {
		t.Fatal(err)
	}
	verifyAGUI(t, raw, true)
	if s, ok := resumed[0].Event.(agui.RunStarted); !ok || s.RunID != runIDs[1] || resumed[0].Seq != ai.ThreadEventID(2, 1) {
		t.Fatalf("resumed after the first run's end with %+v (id %d)", resumed[0].Event, resumed[0].Seq)
	}
	// The Go client reads the same stream.
	c, err := clientx.New(w.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ends := 0
	for fr, err := range agent.FollowThread(ctx, c, "tf", agent.FollowOptions{}) {
		if err != nil {
			t.Fatalf("FollowThread: %v", err)
		}
		if _, ok := fr.Event.(agui.RunFinished); ok {
			if ends++; ends == 3 {
				break
			}
		}
	}
}

// TestFollowThreadSkipsARunRetentionRemoved: a thread follower from the start goes past a
// run whose log retention deleted, on to the thread's later runs.
func TestFollowThreadSkipsARunRetentionRemoved(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "One."}}})
	var runIDs []string
	var cut time.Time
	for i := range 3 {
		tr := w.stream(t, "/chat/agui", fmt.Sprintf(`{"threadId":"tr","runId":"r%d","messages":[{"id":"u","role":"user","content":"count"}]}`, i))
		runIDs = append(runIDs, tr.started(t).RunID)
		if i == 0 {
			time.Sleep(5 * time.Millisecond)
			cut = time.Now()
			time.Sleep(5 * time.Millisecond)
		}
	}
	n, err := w.journal.Driver().DeleteFinishedStreams(t.Context(), cut, 10)
	if err != nil || n != 1 {
		t.Fatalf("DeleteFinishedStreams = %d, %v; want the first run's log only", n, err)
	}
	frames, raw, err := w.followThread("tr", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	verifyAGUI(t, raw, true)
	var started []string
	for _, fr := range frames {
		if s, ok := fr.Event.(agui.RunStarted); ok {
			started = append(started, s.RunID)
			if fr.Seq>>32 == 1 {
				t.Fatalf("the removed run's position was relayed: id %d", fr.Seq)
			}
		}
	}
	if strings.Join(started, ",") != strings.Join(runIDs[1:], ",") {
		t.Fatalf("thread stream ran %v, want %v", started, runIDs[1:])
	}
}

// writeFrame writes one SSE frame as the server sent it: a frame without an id (0) has
// no id line.
func writeFrame(w io.Writer, id int64, data []byte) {
	if id > 0 {
		fmt.Fprintf(w, "id: %d\n", id)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
}
