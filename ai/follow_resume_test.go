package ai_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/journal"
)

// apFinishedRun parks a run, approves it and returns the full follow log once the
// resumed run has finished.
func apFinishedRun(t *testing.T, e *apEnv) (string, []agent.Frame) {
	t.Helper()
	_, stream, in := e.parkedRun(t)
	if d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, "")); d.status != 200 {
		t.Fatalf("approve: HTTP %d %s", d.status, d.raw)
	}
	frames, _ := e.followFrames(t, stream, 0)
	apCheckSeqs(t, frames, 1)
	return stream, frames
}

// Resuming after any seq of a finished run gives exactly the rest of the log, by header
// or by query parameter.
func TestFollowResumeFromEverySeq(t *testing.T) {
	t.Parallel()
	forTail(t, testFollowResumeFromEverySeq)
}

// forTail runs a follow test twice: reading the journal's driver, and with the journal's
// follow tail on (the memory driver has it off by default), so every read the route makes
// is answered the way the instance that ran the run answers it.
func forTail(t *testing.T, test func(t *testing.T, jopts journal.Options)) {
	for _, c := range []struct {
		name  string
		bytes int
	}{{"driver", 0}, {"tail", 1 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			test(t, journal.Options{TailBytes: c.bytes})
		})
	}
}

func testFollowResumeFromEverySeq(t *testing.T, jopts journal.Options) {
	e := newApEnv(t, apConfig{turns: apTransferTurns("500"), jopts: jopts})
	stream, all := apFinishedRun(t, e)
	n := int64(len(all))
	for after := int64(0); after <= n+1; after++ {
		want := max(n-after, 0)
		for _, how := range []string{"header", "query"} {
			hdr, query := http.Header{}, ""
			if how == "header" {
				hdr.Set("Last-Event-ID", strconv.FormatInt(after, 10))
			} else {
				query = "?lastEventId=" + strconv.FormatInt(after, 10)
			}
			res, raw := e.follow(t, stream, apAlice, hdr, query)
			if res.StatusCode != 200 {
				t.Fatalf("%s %d: HTTP %d %s", how, after, res.StatusCode, raw)
			}
			var got []agent.Frame
			for f, err := range agent.ReadFrames(bytes.NewReader(raw)) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, f)
			}
			if int64(len(got)) != want {
				t.Fatalf("%s after %d: %d frames, want %d", how, after, len(got), want)
			}
			apCheckSeqs(t, got, after+1)
			for i, f := range got {
				if f.Event.Type() != all[after+int64(i)].Event.Type() {
					t.Fatalf("%s after %d: frame %d is %s, want %s", how, after, i, f.Event.Type(), all[after+int64(i)].Event.Type())
				}
			}
		}
	}
	// The header wins over the query parameter.
	res, raw := e.follow(t, stream, apAlice, http.Header{"Last-Event-ID": {strconv.FormatInt(n-1, 10)}}, "?lastEventId=1")
	if want := "id: " + strconv.FormatInt(n, 10) + "\n"; res.StatusCode != 200 || !strings.HasPrefix(string(raw), want) || strings.Count(string(raw), "data: ") != 1 {
		t.Fatalf("header and query: HTTP %d %s, want only the last frame", res.StatusCode, raw)
	}
}

func TestFollowBadLastEventID(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	stream, _ := apFinishedRun(t, e)
	// (A blank header value is dropped by net/http on the way, so blanks go by query only.)
	for _, bad := range []string{"abc", "-1", "1.5", "99999999999999999999", "0x10"} {
		for _, how := range []string{"header", "query"} {
			hdr, query := http.Header{}, ""
			if how == "header" {
				hdr.Set("Last-Event-ID", bad)
			} else {
				query = "?lastEventId=" + bad
			}
			res, raw := e.follow(t, stream, apAlice, hdr, query)
			if res.StatusCode != 400 || !strings.Contains(string(raw), `"code":"ValidationError"`) {
				t.Errorf("Last-Event-ID %q by %s: HTTP %d %s, want 400 ValidationError", bad, how, res.StatusCode, raw)
			}
		}
	}
	if res, raw := e.follow(t, stream, apAlice, nil, "?lastEventId=%20"); res.StatusCode != 400 {
		t.Errorf("lastEventId blank: HTTP %d %s, want 400", res.StatusCode, raw)
	}
}

// apLiveFollow follows stream as alice in the background and sends each frame (and the
// raw bytes once the stream ends) on the returned channels.
func apLiveFollow(t *testing.T, ctx context.Context, e *apEnv, stream string) (<-chan agent.Frame, <-chan []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, agent.FollowURL(e.srv.URL, stream), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(apUserHeader, apAlice)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("follow: HTTP %d", res.StatusCode)
	}
	frames := make(chan agent.Frame, 256)
	rawc := make(chan []byte, 1)
	go func() {
		defer res.Body.Close()
		var buf bytes.Buffer
		for f, err := range agent.ReadFrames(io.TeeReader(res.Body, &buf)) {
			if err != nil {
				break
			}
			frames <- f
		}
		close(frames)
		rawc <- buf.Bytes()
	}()
	return frames, rawc
}

// A follower connected before the decision stays open through the interrupt, sees the
// resumed run, and its stream ends after the final RUN_FINISHED.
func TestFollowAcrossInterruptAndResume(t *testing.T) {
	t.Parallel()
	forTail(t, testFollowAcrossInterruptAndResume)
}

func testFollowAcrossInterruptAndResume(t *testing.T, jopts journal.Options) {
	e := newApEnv(t, apConfig{turns: apTransferTurns("500"), jopts: jopts})
	_, stream, in := e.parkedRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	frames, rawc := apLiveFollow(t, ctx, e, stream)
	var got []agent.Frame
	for f := range frames {
		got = append(got, f)
		if rf, ok := f.Event.(agui.RunFinished); ok && rf.Outcome != nil {
			break
		}
	}
	if d := e.decide(t, "approve", apAlice, apApproveBody(in.ID, "")); d.status != 200 {
		t.Fatalf("approve: HTTP %d %s", d.status, d.raw)
	}
	for f := range frames {
		got = append(got, f)
	}
	if ctx.Err() != nil {
		t.Fatalf("the follow stream did not end after the run: %v", apTypes(got))
	}
	apCheckSeqs(t, got, 1)
	runs, interrupts := 0, 0
	for _, f := range got {
		switch ev := f.Event.(type) {
		case agui.RunStarted:
			runs++
		case agui.RunFinished:
			if ev.Outcome != nil {
				interrupts++
			}
		}
	}
	last, ok := got[len(got)-1].Event.(agui.RunFinished)
	if runs != 2 || interrupts != 1 || !ok || last.Outcome != nil {
		t.Fatalf("follower saw %d runs and %d interrupts, ending with %v; want 2, 1 and the final RUN_FINISHED", runs, interrupts, apTypes(got))
	}
	raw := <-rawc
	if jopts.TailBytes == 0 {
		apRecord(t, "live", raw, in) // the transcript is recorded once, by the driver run
	}
}

// A follow stream idle on a parked run sends heartbeat comments.
func TestFollowHeartbeatWhileIdle(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500"), aiOpts: ai.Options{Heartbeat: 20 * time.Millisecond}})
	_, stream, _ := e.parkedRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, agent.FollowURL(e.srv.URL, stream), nil)
	req.Header.Set(apUserHeader, apAlice)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sawInterrupt, comments := false, 0
	for sc.Scan() && comments < 2 {
		line := sc.Text()
		switch {
		case strings.Contains(line, `"outcome":{"type":"interrupt"`):
			sawInterrupt = true
		case strings.HasPrefix(line, ":") && sawInterrupt:
			comments++
		}
	}
	if comments < 2 {
		t.Fatalf("no heartbeat comments after the stored rows (interrupt seen: %v, err %v)", sawInterrupt, sc.Err())
	}
}
