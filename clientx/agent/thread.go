package agent

import (
	"context"
	"iter"
	"net/url"
	"strings"

	"github.com/bbc28f59/engine/clientx"
)

// ThreadURL returns the follow route of the conversation thread threadID (the threadId
// of its runs' events) on the app served at baseURL.
func ThreadURL(baseURL, threadID string) string {
	return strings.TrimRight(baseURL, "/") + "/agent/threads/" + url.PathEscape(threadID) + "/events"
}

// FollowThread reads every run of the conversation thread threadID, in order, from the
// thread follow route of the app c talks to (GET /agent/threads/:threadId/events, see
// [ThreadURL]): the runs already stored, then each run started later on any instance, as
// one AG-UI stream. It follows until ctx ends or the caller stops ranging: a thread has
// no end. Frame.Seq is the thread stream's id; opts.LastEventID resumes after one.
// Connections, reconnects and errors are [Follow]'s.
func FollowThread(ctx context.Context, c *clientx.Client, threadID string, opts FollowOptions) iter.Seq2[Frame, error] {
	return follow(ctx, c, "thread "+threadID, func(base string) string { return ThreadURL(base, threadID) }, opts, true)
}
