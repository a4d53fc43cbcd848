package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bbc28f59/engine/internal/rebind"
)

// store reads what the instances stored: the journal's tables (prefix engine_) and the
// app's transfers table, in the database they share.
type store struct {
	db     *sql.DB
	dollar bool
}

// q rewrites ? placeholders for Postgres.
func (s *store) q(query string) string {
	if s.dollar {
		return rebind.Dollar(query)
	}
	return query
}

// runOf returns the id of the chat run that asked to transfer to `to`, or "".
func (h *harness) runOf(ctx context.Context, to string) string {
	var id string
	// The name ends the message or is followed by a space: c1-1 must not find c1-10's run.
	err := h.store.db.QueryRowContext(ctx, h.store.q(`SELECT id FROM engine_runs WHERE flow = 'chat.ask' AND (input LIKE ? OR input LIKE ?)`),
		`%"transfer % to `+to+`"%`, `%"transfer % to `+to+` %`).Scan(&id)
	if err != nil {
		return ""
	}
	return id
}

// streamOf returns the id of the event stream of a run, or "".
func (h *harness) streamOf(ctx context.Context, runID string) string {
	var id string
	if err := h.store.db.QueryRowContext(ctx, h.store.q(`SELECT id FROM engine_streams WHERE run_id = ?`), runID).Scan(&id); err != nil {
		return ""
	}
	return id
}

// row is one stored event row.
type row struct {
	seq   int64
	event string
}

// check compares what the cycle's conversations saw with what the instances stored, and
// adds the counts to the report.
func (h *harness) check(ctx context.Context, cycle int, convs []*conversation) error {
	r := &h.report
	var files []string
	for _, c := range convs {
		r.Conversations++
		for _, p := range c.problems {
			h.fail("cycle %d: %s", cycle, p)
		}
		r.Reposts += c.reposts
		if c.final != "completed" {
			r.Unfinished++
			h.fail("cycle %d: %s: the run ended as %q, want completed", cycle, c.to, c.final)
			continue
		}
		runID := h.runOf(ctx, c.to)
		if runID == "" || c.streamID == "" {
			r.Unfinished++
			h.fail("cycle %d: %s: no run or stream found (run %q, stream %q)", cycle, c.to, runID, c.streamID)
			continue
		}
		rows, finished, err := h.rows(ctx, c.streamID)
		if err != nil {
			return err
		}
		if !finished {
			h.fail("cycle %d: %s: the stream is not finished after the run's end", cycle, c.to)
		}
		h.checkIDs(cycle, c, rows)
		h.checkRuns(cycle, c.to, "the stored log", storedTypes(rows))
		h.checkRuns(cycle, c.to, "what the client saw", seenTypes(c.frames))
		if err := h.checkSteps(ctx, cycle, c, runID, rows); err != nil {
			return err
		}
		if h.cfg.AGUIVerify != "" {
			seen, stored := h.transcripts(cycle, c, rows)
			files = append(files, seen, stored)
		}
	}
	if err := h.checkEffects(ctx, cycle, convs); err != nil {
		return err
	}
	if len(files) > 0 {
		if out, err := h.verify(files); err != nil {
			r.InvalidSequences++
			h.fail("cycle %d: the AG-UI verifier refused a transcript: %v\n%s", cycle, err, out)
		}
	}
	return nil
}

// rows reads a stream's stored rows and whether it is finished.
func (h *harness) rows(ctx context.Context, streamID string) ([]row, bool, error) {
	var fin sql.NullInt64
	if err := h.store.db.QueryRowContext(ctx, h.store.q(`SELECT finished_at FROM engine_streams WHERE id = ?`), streamID).Scan(&fin); err != nil {
		return nil, false, fmt.Errorf("chaos: stream %s: %w", streamID, err)
	}
	rs, err := h.store.db.QueryContext(ctx, h.store.q(`SELECT seq, event FROM engine_events WHERE stream_id = ? ORDER BY seq`), streamID)
	if err != nil {
		return nil, false, err
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var x row
		if err := rs.Scan(&x.seq, &x.event); err != nil {
			return nil, false, err
		}
		out = append(out, x)
	}
	return out, fin.Valid, rs.Err()
}

// checkIDs holds every id the client was shown to the row stored under it, and every
// row stored after the point the client first resumed from to having been shown.
func (h *harness) checkIDs(cycle int, c *conversation, rows []row) {
	r := &h.report
	bySeq := make(map[int64]string, len(rows))
	for _, x := range rows {
		bySeq[x.seq] = x.event
	}
	shown := map[int64]bool{}
	for _, f := range c.frames {
		if f.id == 0 {
			continue
		}
		r.IDsShown++
		shown[f.id] = true
		stored, ok := bySeq[f.id]
		if !ok {
			r.IDsNeverStored++ // sent live by an instance that died before storing it: allowed
			continue
		}
		if !jsonEqual(stored, f.data) {
			r.ChangedIDs++
			h.fail("cycle %d: %s: id %d was shown as %s but is stored as %s", cycle, c.to, f.id, f.data, stored)
		}
	}
	for _, x := range rows {
		if x.seq > c.resumedAt && !shown[x.seq] {
			r.LostEvents++
			h.fail("cycle %d: %s: row %d (%s), stored after the client resumed from %d, never reached it", cycle, c.to, x.seq, x.event, c.resumedAt)
		}
	}
}

// event is the part of a stored event the step checks read.
type event struct {
	Type         string `json:"type"`
	MessageID    string `json:"messageId"`
	ToolCallID   string `json:"toolCallId"`
	ToolCallName string `json:"toolCallName"`
	Delta        string `json:"delta"`
	Content      string `json:"content"`
	Outcome      *struct {
		Interrupts []struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"interrupts"`
	} `json:"outcome"`
}

// checkSteps holds the stored log to the run's recorded steps: each model turn's text and
// tool calls, each tool's result and each park's interrupt must be in it, and it must end
// with the run's completion.
func (h *harness) checkSteps(ctx context.Context, cycle int, c *conversation, runID string, rows []row) error {
	r := &h.report
	texts, args, ended := map[string]string{}, map[string]string{}, map[string]bool{}
	results := map[string][]string{}
	interrupts := map[string]bool{}
	var last event
	for _, x := range rows {
		var e event
		if err := json.Unmarshal([]byte(x.event), &e); err != nil {
			h.fail("cycle %d: %s: stored row %d is not JSON", cycle, c.to, x.seq)
			continue
		}
		switch e.Type {
		case "TEXT_MESSAGE_START":
			texts[e.MessageID] = ""
		case "TEXT_MESSAGE_CONTENT":
			texts[e.MessageID] += e.Delta
		case "TOOL_CALL_START":
			args[e.ToolCallID], ended[e.ToolCallID] = "", false
		case "TOOL_CALL_ARGS":
			args[e.ToolCallID] += e.Delta
		case "TOOL_CALL_END":
			ended[e.ToolCallID] = true
		case "TOOL_CALL_RESULT":
			results[e.ToolCallID] = append(results[e.ToolCallID], e.Content)
		case "RUN_FINISHED":
			if e.Outcome != nil {
				for _, it := range e.Outcome.Interrupts {
					interrupts[it.ToolCallID] = true
				}
			}
		}
		last = e
	}
	missing := func(format string, args ...any) {
		r.MissingEvents++
		h.fail("cycle %d: %s: the log lacks %s", cycle, c.to, fmt.Sprintf(format, args...))
	}
	if last.Type != "RUN_FINISHED" || last.Outcome != nil {
		missing("the run's final RUN_FINISHED at its end (last stored: %s)", last.Type)
	}
	steps, err := h.store.db.QueryContext(ctx, h.store.q(`SELECT name, result FROM engine_steps WHERE run_id = ? AND error = '' ORDER BY position`), runID)
	if err != nil {
		return err
	}
	defer steps.Close()
	for steps.Next() {
		var name string
		var result sql.NullString
		if err := steps.Scan(&name, &result); err != nil {
			return err
		}
		r.StepsChecked++
		switch {
		case strings.HasPrefix(name, "model:"):
			var t struct {
				Text      string `json:"text"`
				ToolCalls []struct {
					ID, Arguments string
				} `json:"toolCalls"`
			}
			if err := json.Unmarshal([]byte(result.String), &t); err != nil {
				return fmt.Errorf("chaos: step %s of run %s: %w", name, runID, err)
			}
			if t.Text != "" && !hasValue(texts, t.Text) {
				missing("the text %q of step %s", t.Text, name)
			}
			for _, call := range t.ToolCalls {
				if a, ok := args[call.ID]; !ok || a != call.Arguments || !ended[call.ID] {
					missing("TOOL_CALL_START/ARGS/END of %s (%s) from step %s", call.ID, call.Arguments, name)
				}
			}
		case strings.HasPrefix(name, "tool:"):
			callID := name[strings.LastIndex(name, ":")+1:]
			var out struct {
				Content string `json:"content"`
			}
			if err := json.Unmarshal([]byte(result.String), &out); err != nil {
				return fmt.Errorf("chaos: step %s of run %s: %w", name, runID, err)
			}
			found := false
			for _, got := range results[callID] {
				found = found || got == out.Content
			}
			if !found {
				missing("the TOOL_CALL_RESULT of %s (%s)", callID, out.Content)
			}
		}
	}
	if err := steps.Err(); err != nil {
		return err
	}
	parks, err := h.store.db.QueryContext(ctx, h.store.q(`SELECT park_key FROM engine_parks WHERE run_id = ?`), runID)
	if err != nil {
		return err
	}
	defer parks.Close()
	for parks.Next() {
		var key string
		if err := parks.Scan(&key); err != nil {
			return err
		}
		if !interrupts[key] {
			missing("the interrupt of the park %s", key)
		}
	}
	return parks.Err()
}

// checkEffects counts the cycle's child runs and money movements: one tools.transfer run
// and one transfers row per conversation, and how often each row's handler ran.
func (h *harness) checkEffects(ctx context.Context, cycle int, convs []*conversation) error {
	r := &h.report
	for _, c := range convs {
		if c.final != "completed" {
			continue
		}
		var children int
		if err := h.store.db.QueryRowContext(ctx, h.store.q(`SELECT COUNT(*) FROM engine_runs WHERE flow = 'tools.transfer' AND input LIKE ?`),
			`%"to":"`+c.to+`"%`).Scan(&children); err != nil {
			return err
		}
		r.ChildRuns += children
		if children != 1 {
			if children > 1 {
				r.DuplicateChildRuns += children - 1
			}
			h.fail("cycle %d: %s: %d tools.transfer runs, want 1", cycle, c.to, children)
		}
		var rows, attempts int
		if err := h.store.db.QueryRowContext(ctx, h.store.q(`SELECT COUNT(*), COALESCE(SUM(attempts), 0) FROM transfers WHERE recipient = ?`), c.to).Scan(&rows, &attempts); err != nil {
			return err
		}
		r.Effects += rows
		r.HandlerExecutions += attempts
		r.ReExecutions += attempts - rows
		switch {
		case rows == 0:
			r.MissingEffects++
			h.fail("cycle %d: %s: the transfer was never made", cycle, c.to)
		case rows > 1:
			r.EffectsTwice += rows - 1
			h.fail("cycle %d: %s: the transfer was made %d times, under different keys", cycle, c.to, rows)
		}
		// One fault a cycle interrupts an execution at most once: a key's handler may run
		// twice, never more (a third execution is a second claim of a live run).
		if rows > 0 && attempts > 2*rows {
			r.ExcessExecutions += attempts - 2*rows
			h.fail("cycle %d: %s: the transfer's handler ran %d times with one fault in the cycle", cycle, c.to, attempts)
		}
		if attempts > rows {
			h.note("cycle %d: %s: the transfer's handler ran %d times (its instance died after it started)", cycle, c.to, attempts)
		}
	}
	return nil
}

// transcripts writes what the client saw and the stored log as follow-stream files for
// the AG-UI verifier.
func (h *harness) transcripts(cycle int, c *conversation, rows []row) (seen, stored string) {
	dir := filepath.Join(h.cfg.Dir, "transcripts")
	_ = os.MkdirAll(dir, 0o755)
	var a, b strings.Builder
	for _, f := range c.frames {
		if f.id > 0 {
			fmt.Fprintf(&a, "id: %d\n", f.id)
		}
		fmt.Fprintf(&a, "data: %s\n\n", f.data)
	}
	for _, x := range rows {
		fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", x.seq, x.event)
	}
	seen = filepath.Join(dir, fmt.Sprintf("%s-seen.sse", c.to))
	stored = filepath.Join(dir, fmt.Sprintf("%s-stored.sse", c.to))
	_ = os.WriteFile(seen, []byte(a.String()), 0o644)
	_ = os.WriteFile(stored, []byte(b.String()), 0o644)
	_ = cycle
	return seen, stored
}

// checkRuns holds a transcript to AG-UI's run pairing, which the verifier checks too but
// only when node is installed: every event falls inside a run, a run starts only after
// the one before it ended with RUN_FINISHED or RUN_ERROR.
func (h *harness) checkRuns(cycle int, to, what string, types []string) {
	active := false
	for i, typ := range types {
		bad := ""
		switch {
		case typ == "RUN_STARTED" && active:
			bad = "RUN_STARTED inside a run"
		case typ == "RUN_STARTED":
			active = true
		case !active:
			bad = typ + " outside a run"
		case typ == "RUN_FINISHED" || typ == "RUN_ERROR":
			active = false
		}
		if bad != "" {
			h.report.BadRunSequences++
			h.fail("cycle %d: %s: %s has %s at event %d: %v", cycle, to, what, bad, i, types)
			return
		}
	}
}

func storedTypes(rows []row) []string {
	out := make([]string, len(rows))
	for i, x := range rows {
		var e event
		_ = json.Unmarshal([]byte(x.event), &e)
		out[i] = e.Type
	}
	return out
}

func seenTypes(frames []frame) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = f.typ
	}
	return out
}

func hasValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
