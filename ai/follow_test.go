package ai_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/journal"
)

// eventData returns the normalised, coalesced event data of a transcript without ids or
// [DONE]: what a live stream and its follow log must agree on.
func eventData(t *testing.T, raw string) []string {
	t.Helper()
	var out []string
	for _, b := range blocks(t, normalise(t, raw, true)) {
		if b.data != "[DONE]" {
			out = append(out, b.data)
		}
	}
	return out
}

// checkFollow reads the follow log of a finished live run and checks it against the
// live stream: no [DONE], every frame with a strictly increasing integer id, the same
// events once deltas are coalesced, and every structural live frame carrying the id of
// the same event in the log. It stores the log as <scenario>.follow.sse.
func checkFollow(t *testing.T, w *world, scenario string, live transcript) transcript {
	t.Helper()
	follow := w.follow(t, live.started(t).RunID, "")
	goldenFollow(t, scenario, follow)
	if strings.Contains(follow.raw, "[DONE]") {
		t.Errorf("the follow stream sent [DONE]")
	}
	var last int64
	for _, f := range follow.frames {
		if f.Seq <= last {
			t.Fatalf("follow ids not strictly increasing: %d after %d", f.Seq, last)
		}
		last = f.Seq
	}
	liveData, followData := eventData(t, live.raw), eventData(t, follow.raw)
	if strings.Join(liveData, "\n") != strings.Join(followData, "\n") {
		t.Errorf("the log differs from the live stream:\nlive:\n%s\nfollow:\n%s",
			strings.Join(liveData, "\n"), strings.Join(followData, "\n"))
	}
	stored := map[string]string{}
	for _, b := range blocks(t, follow.raw) {
		stored[b.id] = b.data
	}
	withID := 0
	for _, b := range blocks(t, live.raw) {
		if b.data == "[DONE]" {
			continue
		}
		isDelta := strings.Contains(b.data, `"TEXT_MESSAGE_CONTENT"`) || strings.Contains(b.data, `"TOOL_CALL_ARGS"`) ||
			strings.Contains(b.data, `"REASONING_MESSAGE_CONTENT"`)
		if !b.hasID {
			if !isDelta {
				t.Errorf("structural live frame without id: %s", b.data)
			}
			continue
		}
		withID++
		if got, ok := stored[b.id]; !ok || got != b.data {
			t.Errorf("live frame id %s carries %s; the log has %q under that id", b.id, b.data, got)
		}
	}
	if withID == 0 {
		t.Fatal("no live frame carried an id")
	}
	return follow
}

// TestFollowLogMatchesLiveStream checks item 12: every event of a run also goes to its
// event log; the follow route returns the same sequence with deltas coalesced, every
// frame carrying an increasing id:, and each structural frame of the live stream carries
// the id of the same event in the log. A follower resuming after an id gets exactly the
// rest, with no gap and no duplicate.
func TestFollowLogMatchesLiveStream(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			u := &usage{In: 10, Out: 5}
			w := newWorld(t, setup{kind: kind, turns: []turn{
				{Text: "Let me check that for you.", Calls: []call{{ID: "call_1", Name: "tools_weather", Args: `{"city":"Paris, France"}`}}, Usage: u},
				{Text: "It is 39C in Paris, quite warm for the season.", Usage: u},
			}})
			live := w.stream(t, "/chat/plain", `{"message":"weather in Paris?"}`)
			runID := live.started(t).RunID
			follow := checkFollow(t, w, "follow_"+kind, live)
			var last int64
			if n := len(follow.frames); n > 0 {
				last = follow.frames[n-1].Seq
			}
			if n, m := len(of[agui.TextMessageContent](follow)), len(of[agui.TextMessageContent](live)); n > m {
				t.Errorf("the log has %d text deltas, the live stream %d: deltas were not coalesced", n, m)
			}

			// Resume after every id: exactly the rest of the log.
			for i, f := range follow.frames[:len(follow.frames)-1] {
				rest := w.follow(t, runID, f.ID)
				if len(rest.frames) != len(follow.frames)-i-1 {
					t.Fatalf("after id %s: %d frames, want %d", f.ID, len(rest.frames), len(follow.frames)-i-1)
				}
				for j, g := range rest.frames {
					if g.ID != follow.frames[i+1+j].ID {
						t.Fatalf("after id %s: frame %d has id %s, want %s", f.ID, j, g.ID, follow.frames[i+1+j].ID)
					}
				}
			}
			// After the last id there is nothing left.
			lastID := strconv.FormatInt(last, 10)
			eq(t, "frames after the last id", len(w.follow(t, runID, lastID).frames), 0)
		})
	}
}

// TestFollowErrors checks the follow route's refusals: an unknown run asked for without
// credentials is 401 (the route answers so for every run that is not known to be public,
// so run ids reveal nothing), a bad Last-Event-ID is a validation error.
func TestFollowErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi."}}})
	runID := w.stream(t, "/chat/plain", `{"message":"hi"}`).started(t).RunID
	cases := []struct {
		name, path, lastID string
		status             int
	}{
		{"unknown run", "/agent/runs/run_00000000000000000000000000000000/events", "", http.StatusUnauthorized},
		{"bad Last-Event-ID", "/agent/runs/" + runID + "/events", "nope", http.StatusBadRequest},
		{"negative Last-Event-ID", "/agent/runs/" + runID + "/events", "-1", http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(http.MethodGet, w.srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.lastID != "" {
				req.Header.Set("Last-Event-ID", tc.lastID)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			eq(t, "status", res.StatusCode, tc.status)
		})
	}
}

// TestFollowLogSplitsLongText checks the coalescing bound of rule 7: a long reply is
// stored as several delta rows of about 1 KB (a row may be sealed earlier by the 100 ms
// timer, never later than the first delta that reaches 1 KB), which join to the text.
func TestFollowLogSplitsLongText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("wave ", 800) // 4000 bytes in 5-byte deltas
	w := newWorld(t, setup{turns: []turn{{Text: long}}})
	live := w.stream(t, "/chat/plain", `{"message":"sing"}`)
	follow := w.follow(t, live.started(t).RunID, "")
	rows := of[agui.TextMessageContent](follow)
	if len(rows) < 4 {
		t.Fatalf("%d text rows for 4000 bytes, want at least 4 (1 KB each at most)", len(rows))
	}
	var joined strings.Builder
	for _, r := range rows {
		if len(r.Delta) >= 1024+len("wave ") {
			t.Errorf("a row of %d bytes: the 1 KB bound was passed", len(r.Delta))
		}
		joined.WriteString(r.Delta)
	}
	eq(t, "stored text", joined.String(), long)
}

// TestFollowFinishedRunEnds checks that following a run whose log is finished ends as
// soon as every row is sent, without waiting for the poll backstop: the poll is set to an
// hour, so a follower that waits for it never ends (and w.follow fails at its deadline).
func TestFollowFinishedRunEnds(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi there."}}, install: ai.Options{FollowPoll: time.Hour}})
	live := w.stream(t, "/chat/plain", `{"message":"hi"}`)
	runID := live.started(t).RunID
	waitFor(t, "the run's log to be finished", func() bool {
		st, err := w.journal.Driver().GetStream(context.Background(), runID)
		return err == nil && st.FinishedAt != nil
	})
	all := w.follow(t, runID, "")
	eq(t, "last event", all.types()[len(all.frames)-1], "RUN_FINISHED")
	rest := w.follow(t, runID, all.frames[1].ID)
	eq(t, "frames after the second id", len(rest.frames), len(all.frames)-2)
}

// TestRunLogRecordsWhenItStarted: the stream record carries its creation time, which
// retention reads to close runs that never finished. A zero time would make every live
// run look a week old to the first retention pass.
func TestRunLogRecordsWhenItStarted(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{turns: []turn{{Text: "Hi there."}}})
	before := time.Now()
	runID := w.stream(t, "/chat/plain", `{"message":"hi"}`).started(t).RunID
	var st journal.Stream
	waitFor(t, "the run's log to be finished", func() bool {
		var err error
		st, err = w.journal.Driver().GetStream(context.Background(), runID)
		return err == nil && st.FinishedAt != nil
	})
	if st.CreatedAt.Before(before.Add(-time.Second)) || st.CreatedAt.After(time.Now()) {
		t.Fatalf("stream created at %v, want between %v and now", st.CreatedAt, before)
	}
	if st.FinishedAt.Before(st.CreatedAt) {
		t.Fatalf("stream finished at %v, before it was created at %v", st.FinishedAt, st.CreatedAt)
	}
}
