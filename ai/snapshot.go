package ai

import (
	"strconv"

	"github.com/bbc28f59/engine/ai/agui"
)

// snapshotAt emits what AG-UI 1.0 asks before a RUN_FINISHED that carries an interrupt
// ("State at the interrupt boundary"): STATE_SNAPSHOT when the run has state, then
// MESSAGES_SNAPSHOT with the conversation so far.
func (s *loopState) snapshotAt() {
	if !s.r.state.empty() {
		s.em.emit(agui.StateSnapshot{Snapshot: s.r.state.get()})
	}
	s.em.emit(agui.MessagesSnapshot{Messages: s.messages()})
}

// messages returns the run's conversation as AG-UI messages. Their ids are the run id
// and the message's place in the conversation, so a replay sends the same ones.
func (s *loopState) messages() []agui.InputMessage {
	out := make([]agui.InputMessage, 0, len(s.history))
	for i, m := range s.history {
		am := agui.InputMessage{ID: s.r.id + ":m" + strconv.Itoa(i+1), Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			tc := agui.InputToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name = s.r.flowOf(c.Name)
			tc.Function.Arguments = c.Arguments
			am.ToolCalls = append(am.ToolCalls, tc)
		}
		out = append(out, am)
	}
	return out
}
