package ai

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/journal"
)

// CodeRunExpired is the code of the RUN_ERROR with which the journal's retention closes a
// run's log left unfinished for [journal.Options.UnfinishedMaxAge].
const CodeRunExpired = "JournalRunExpired"

// LogPolicy returns the policy of an agent run's event log: what the journal, which
// stores events without knowing AG-UI, needs to know of it. TEXT_MESSAGE_CONTENT and
// REASONING_MESSAGE_CONTENT deltas of one messageId and TOOL_CALL_ARGS deltas of one
// toolCallId are coalesced, their delta texts joined; RUN_FINISHED and RUN_ERROR end a run's part of the log and are
// committed before their frame is sent; a log that reaches its row cap gets one
// engine.events.truncated CUSTOM event in place of the deltas dropped; and retention
// closes a log left unfinished with a RUN_ERROR of code [CodeRunExpired].
//
// The run's log writers always use it. [Install] makes it the policy of the app's
// journal, so retention closes agent logs with RUN_ERROR; an app that runs agents without
// Install gives it in [journal.Options.LogPolicy].
func LogPolicy() *journal.LogPolicy {
	return &journal.LogPolicy{
		Deltas: []journal.DeltaType{
			{Type: string(agui.TypeTextMessageContent), Key: "messageId", Text: "delta"},
			{Type: string(agui.TypeToolCallArgs), Key: "toolCallId", Text: "delta"},
			{Type: string(agui.TypeReasoningMessageContent), Key: "messageId", Text: "delta"},
		},
		Ends: []string{string(agui.TypeRunFinished), string(agui.TypeRunError)},
		Truncated: func(maxRows int64) json.RawMessage {
			value := fmt.Appendf(nil, `{"maxRows":%d,"reason":"the stored log keeps at most %d rows; later deltas are not stored"}`, maxRows, maxRows)
			ev, _ := agui.AppendJSON(nil, agui.Custom{Name: agui.CustomEventsTruncated, Value: value})
			return ev
		},
		Expired: func(maxAge time.Duration) json.RawMessage {
			ev, _ := agui.AppendJSON(nil, agui.RunError{Message: "run did not finish within " + maxAge.String() + "; closed by the journal", Code: CodeRunExpired})
			return ev
		},
	}
}

// logPolicy is the policy the run's log writers share.
var logPolicy = LogPolicy()

// logOptions are the options of a run's log writer.
var logOptions = journal.LogOptions{Policy: logPolicy}
