package ai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/clientx/agent"
)

// A mid-run join on the SQL journals: a run streams on instance A, a follower joins its
// thread with from=now on B (on Postgres a second instance; on SQLite the same one) and
// sees a valid AG-UI sequence, then reads the thread's history there; another user may
// read neither.
func TestThreadJoinOnDrivers(t *testing.T) {
	t.Parallel()
	slow := openaitest.Turn{Text: strings.Repeat("tick ", 100), Delay: 10 * time.Millisecond}
	cases := []struct {
		name string
		envs func(t *testing.T) (a, b *apEnv)
	}{
		{"sqlite", func(t *testing.T) (a, b *apEnv) {
			e := newApEnv(t, apConfig{turns: []openaitest.Turn{slow}, driver: apSQLiteDriver(t)})
			return e, e
		}},
		{"postgres", func(t *testing.T) (a, b *apEnv) { return twoInstances(t, slow) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := tc.envs(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res := a.openChat(t, ctx, "count")
			runID := untilText(t, res.Body)
			waitLoggedText(t, ctx, b.j, runID)
			var frames []agent.Frame
			var raw strings.Builder
			for f, err := range agent.FollowThread(ctx, b.client(t, apAlice), runID, agent.FollowOptions{FromNow: true}) {
				if err != nil {
					t.Fatalf("FollowThread: %v after %v", err, apTypes(frames))
				}
				frames = append(frames, f)
				data, _ := agui.AppendJSON(nil, f.Event)
				writeFrame(&raw, f.Seq, data)
				if _, ok := f.Event.(agui.RunFinished); ok {
					break
				}
			}
			verifyAGUI(t, raw.String(), true)
			if s, ok := frames[0].Event.(agui.RunStarted); !ok || s.RunID != runID || frames[0].Seq != ai.ThreadEventID(1, 1) {
				t.Fatalf("joined with %v", apTypes(frames))
			}
			snap, ok := frames[1].Event.(agui.MessagesSnapshot)
			if !ok || len(snap.Messages) != 1 || snap.Messages[0].Content != "count" {
				t.Fatalf("second frame %+v, want MESSAGES_SNAPSHOT of the user's message", frames[1].Event)
			}
			var text strings.Builder
			for _, f := range frames {
				if c, ok := f.Event.(agui.TextMessageContent); ok {
					text.WriteString(c.Delta)
				}
			}
			eq(t, "text after the join", text.String(), slow.Text)

			msgs, err := agent.ThreadMessages(ctx, b.client(t, apAlice), runID)
			if err != nil || len(msgs) != 2 || msgs[1].Role != "assistant" || msgs[1].Content != slow.Text {
				t.Fatalf("ThreadMessages = %+v, %v", msgs, err)
			}
			if _, err := agent.ThreadMessages(ctx, b.client(t, "bob@acme"), runID); !isCode(err, "NotFound") {
				t.Fatalf("ThreadMessages as another user: %v, want NotFound", err)
			}
		})
	}
}
