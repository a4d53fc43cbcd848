package agent

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
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
//
// With opts.FromNow (and no LastEventID) the follow joins where the thread is: a run in
// progress from the middle, as RUN_STARTED, then STATE_SNAPSHOT (where the run has
// state) and MESSAGES_SNAPSHOT with the conversation so far, then the rest of the run;
// a thread whose latest run has ended from its next run. Read [ThreadMessages] first to
// show the conversation up to then.
func FollowThread(ctx context.Context, c *clientx.Client, threadID string, opts FollowOptions) iter.Seq2[Frame, error] {
	return follow(ctx, c, "thread "+threadID, func(base string) string {
		if opts.FromNow {
			return ThreadURL(base, threadID) + "?from=now"
		}
		return ThreadURL(base, threadID)
	}, opts, true)
}

// ThreadMessagesURL returns the history route of the conversation thread threadID on
// the app served at baseURL.
func ThreadMessagesURL(baseURL, threadID string) string {
	return strings.TrimRight(baseURL, "/") + "/agent/threads/" + url.PathEscape(threadID) + "/messages"
}

// ThreadMessages reads the conversation of the thread threadID as AG-UI messages (GET
// /agent/threads/:threadId/messages, see [ThreadMessagesURL]), with c's headers, auth
// and timeout: what the clients sent and what the runs added, in order, as a page that
// reloads shows it. Refusals are *engine.Error: NotFound for an unknown thread or one
// the caller may not read (only the principal who started its first run, and
// operators, may), Unauthorized without credentials.
func ThreadMessages(ctx context.Context, c *clientx.Client, threadID string) ([]agui.InputMessage, error) {
	if c == nil {
		return nil, clientError(engine.CodeValidation, "nil client")
	}
	if threadID == "" {
		return nil, clientError(engine.CodeValidation, "the thread id is required")
	}
	status, _, reply, terr := c.Transport().Do(ctx, http.MethodGet, ThreadMessagesURL(c.BaseURL(), threadID), nil)
	if terr != nil {
		return nil, terr
	}
	if e := replyError(status, reply); e != nil {
		return nil, e
	}
	var env struct {
		Data struct {
			Messages []agui.InputMessage `json:"messages"`
		} `json:"data"`
	}
	if err := json.Unmarshal(reply, &env); err != nil {
		return nil, transportError("thread messages: "+err.Error(), status)
	}
	return env.Data.Messages, nil
}
