package ai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
)

// ThreadMessagesPath is the thread history route's trigger.
const ThreadMessagesPath = "/agent/threads/:threadId/messages"

// ThreadIn is the input of GET /agent/threads/:threadId/messages.
type ThreadIn struct {
	ThreadID string `json:"threadId"`
}

// ThreadMessages is a thread's conversation as AG-UI messages, in order: what the
// clients sent in each run's input and what the runs added (assistant text, tool calls,
// tool results), as a page that reloads shows it.
type ThreadMessages struct {
	Messages []agui.InputMessage `json:"messages"`
}

// ThreadMessagesFlow is the built-in thread history route. It is public so the request
// can arrive; who may read a thread is its owner (the starter of its first run) or an
// operator, as for following it.
var ThreadMessagesFlow = engine.Define[ThreadIn, ThreadMessages](agentUnit, "threadMessages", engine.GET(ThreadMessagesPath), engine.Public(),
	engine.Describe("Read a conversation thread's messages as AG-UI messages, for a page that reloads."))

// bindThreadMessages binds the thread history route.
func bindThreadMessages() engine.Option {
	return engine.Bind(ThreadMessagesFlow, func(fx *engine.Fx, in ThreadIn) (ThreadMessages, error) {
		msgs, err := History(fx, in.ThreadID)
		return ThreadMessages{Messages: msgs}, err
	})
}

// History returns the conversation of the thread threadID as AG-UI messages, as the
// caller of fx reads it: every run of the thread in order, the messages of its input
// that are new (by id) and what its log holds; a run the caller may not follow (one
// another principal started on the thread) is left out. A run's input messages are those of its
// durable flow's input when that is an agent input (a string, {message}, {messages} or
// AG-UI's RunAgentInput); a flow that takes anything else adds only what it logged. Errors: NotFound for a thread with no
// run or one the caller may not read (only its owner, the principal who started its
// first run, and operators may).
func History(fx *engine.Fx, threadID string) ([]agui.InputMessage, error) {
	ctx, app := fx.Context(), fx.App()
	if threadID == "" {
		return nil, engine.Invalid(engine.ValidationIssue{Path: "threadId", Message: "required"})
	}
	runs, err := mayReadThread(ctx, app, fx.Principal(), threadID, threadScan)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, engine.NotFound("no thread %s", threadID)
	}
	var c convo
	for _, run := range runs {
		if err := c.addRun(ctx, app, fx.Principal(), run.StreamID); err != nil {
			return nil, err
		}
	}
	if c.msgs == nil {
		c.msgs = []agui.InputMessage{}
	}
	return c.msgs, nil
}

// mayReadThread reads the first n runs of the thread and applies the thread routes'
// access rule: the caller must be the thread's owner (the principal who started its
// first run, in its tenant) or an operator; anyone else gets NotFound, as for a thread
// that does not exist. A thread with no run yet (or none whose log retention kept) is
// no one's: it has nothing to reveal.
func mayReadThread(ctx context.Context, app *engine.App, p *engine.Principal, threadID string, n int) ([]journal.ThreadRun, error) {
	j := durable.JournalOf(app)
	if j == nil {
		return nil, engine.NotFound("no thread %s", threadID)
	}
	if !journal.ValidID(threadID) {
		// No run can be on such a thread: a follower would wait for one forever.
		return nil, engine.NotFound("no thread with that id")
	}
	runs, err := j.ThreadRuns(ctx, threadID, 0, n)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	// The owner is the starter of the first run whose log retention kept.
	for _, run := range runs {
		st, err := j.GetStream(ctx, run.StreamID)
		if errors.Is(err, journal.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return runs, mayFollow(ctx, app, p, st, true, engine.NotFound("no thread %s", threadID))
	}
	return runs, nil
}

// convo folds runs' inputs and logs into AG-UI messages and state.
type convo struct {
	msgs  []agui.InputMessage
	calls map[string][2]int // tool call id → message index, call index
	state json.RawMessage
	// stateLost is set by a state change the fold cannot apply (a patch below the top
	// level): the state is then unknown and no STATE_SNAPSHOT is built from it.
	stateLost bool
}

// addRun folds the input of the run whose log is the stream id and its log, when the
// caller p may follow the run ([mayFollow]). A run whose log retention removed, or one
// the caller may not follow (a run another principal started on the thread), adds
// nothing.
func (c *convo) addRun(ctx context.Context, app *engine.App, p *engine.Principal, id string) error {
	j := durable.JournalOf(app)
	rows, st, err := readLog(ctx, j, id)
	if errors.Is(err, journal.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := mayFollow(ctx, app, p, st, true, errHidden); err != nil {
		if errors.Is(err, errHidden) {
			return nil
		}
		return err
	}
	c.add(ctx, j, st, rows)
	return nil
}

// errHidden marks a run the caller may not follow.
var errHidden = errors.New("ai: a run the caller may not follow")

// add folds the input of the run whose log is st and the rows of its log.
func (c *convo) add(ctx context.Context, j *journal.Journal, st journal.Stream, rows []journal.EventRow) {
	if st.RunID != "" {
		if rec, err := j.GetRun(ctx, st.RunID); err == nil {
			c.addInput(st.ID, rec.Input)
		}
	}
	for _, row := range rows {
		c.fold(row.Event)
	}
}

// readLog reads every row of the stream id stored so far.
func readLog(ctx context.Context, j *journal.Journal, id string) ([]journal.EventRow, journal.Stream, error) {
	var all []journal.EventRow
	var after int64
	for {
		st, rows, err := j.ReadStream(ctx, id, after, followBatch)
		if err != nil {
			return nil, st, err
		}
		all = append(all, rows...)
		if len(rows) < followBatch {
			return all, st, nil
		}
		after = rows[len(rows)-1].Seq
	}
}

// addInput adds the messages of an agent input the conversation does not hold yet (an
// AG-UI client sends the whole conversation each run) and takes its state.
func (c *convo) addInput(runID string, raw json.RawMessage) {
	in, err := decodeInput(raw)
	if err != nil {
		return
	}
	if len(in.State) > 0 && string(in.State) != "null" {
		c.state, c.stateLost = in.State, false
	}
	if in.Message != "" {
		c.msgs = append(c.msgs, agui.InputMessage{ID: runID + ":u", Role: string(RoleUser), Content: in.Message})
		return
	}
	have := make(map[string]bool, len(c.msgs))
	for _, m := range c.msgs {
		have[m.ID] = true
	}
	for _, m := range in.Messages {
		if m.ID == "" || !have[m.ID] {
			c.msgs = append(c.msgs, m)
		}
	}
}

// fold applies one logged event to the conversation.
func (c *convo) fold(data json.RawMessage) {
	ev, err := agui.Decode(data)
	if err != nil {
		return
	}
	switch e := ev.(type) {
	case agui.MessagesSnapshot:
		c.msgs, c.calls = append([]agui.InputMessage(nil), e.Messages...), nil
	case agui.TextMessageStart:
		role := e.Role
		if role == "" {
			role = agui.RoleAssistant
		}
		c.msgs = append(c.msgs, agui.InputMessage{ID: e.MessageID, Role: role})
	case agui.TextMessageContent:
		if i := c.find(e.MessageID); i >= 0 {
			c.msgs[i].Content += e.Delta
		}
	case agui.ToolCallStart:
		i := c.find(e.ParentMessageID)
		if i < 0 && len(c.msgs) > 0 && c.msgs[len(c.msgs)-1].Role == agui.RoleAssistant {
			i = len(c.msgs) - 1
		}
		if i < 0 {
			c.msgs = append(c.msgs, agui.InputMessage{ID: e.ToolCallID + ":m", Role: agui.RoleAssistant})
			i = len(c.msgs) - 1
		}
		tc := agui.InputToolCall{ID: e.ToolCallID, Type: "function"}
		tc.Function.Name = e.ToolCallName
		c.msgs[i].ToolCalls = append(c.msgs[i].ToolCalls, tc)
		if c.calls == nil {
			c.calls = map[string][2]int{}
		}
		c.calls[e.ToolCallID] = [2]int{i, len(c.msgs[i].ToolCalls) - 1}
	case agui.ToolCallArgs:
		if at, ok := c.calls[e.ToolCallID]; ok && at[0] < len(c.msgs) && at[1] < len(c.msgs[at[0]].ToolCalls) {
			c.msgs[at[0]].ToolCalls[at[1]].Function.Arguments += e.Delta
		}
	case agui.ToolCallResult:
		c.msgs = append(c.msgs, agui.InputMessage{ID: e.MessageID, Role: agui.RoleTool, Content: e.Content, ToolCallID: e.ToolCallID})
	case agui.StateSnapshot:
		c.state, c.stateLost = e.Snapshot, false
	case agui.StateDelta:
		c.patch(e.Delta)
	}
}

// find returns the index of the message id, or -1.
func (c *convo) find(id string) int {
	for i := len(c.msgs) - 1; i >= 0 && id != ""; i-- {
		if c.msgs[i].ID == id {
			return i
		}
	}
	return -1
}

// patch applies a JSON Patch to the state. The engine's tools patch members of the top
// level ([SetState]); any other patch leaves the state unknown.
func (c *convo) patch(delta json.RawMessage) {
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(delta, &ops) != nil || json.Unmarshal(c.state, &doc) != nil || doc == nil {
		c.stateLost = true
		return
	}
	for _, op := range ops {
		key, ok := strings.CutPrefix(op.Path, "/")
		if !ok || strings.Contains(key, "/") {
			c.stateLost = true
			return
		}
		key = strings.NewReplacer("~1", "/", "~0", "~").Replace(key)
		switch op.Op {
		case "add", "replace":
			doc[key] = op.Value
		case "remove":
			delete(doc, key)
		default:
			c.stateLost = true
			return
		}
	}
	next, err := json.Marshal(doc)
	if err != nil {
		c.stateLost = true
		return
	}
	c.state = next
}
