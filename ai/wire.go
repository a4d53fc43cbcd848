package ai

import (
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/httpx"
)

// wire writes a run's events to its live response in the response's protocol: AG-UI
// ([Stream]) or the AI SDK's UI message stream ([StreamUI]). The run, its log and its
// relay of a resumed run are the same for every wire; seq is the event's row in the
// run's log (0 for a delta not yet stored), which AG-UI sends as the frame's id.
type wire interface {
	// event writes ev, whose AG-UI encoding is data.
	event(seq int64, ev agui.Event, data []byte) error
	// delta writes a TEXT_MESSAGE_CONTENT, REASONING_MESSAGE_CONTENT or TOOL_CALL_ARGS
	// event: the per-token path.
	delta(seq int64, typ agui.Type, id, text string) error
	// stored writes an event read back from the run's log.
	stored(seq int64, data []byte) error
}

// aguiWire is the engine's own wire: every event as its AG-UI JSON, one per data: frame,
// with the log's seq as the frame's id.
type aguiWire struct{ sse *httpx.SSEWriter }

func (w aguiWire) event(seq int64, _ agui.Event, data []byte) error {
	return w.sse.WriteEvent(seq, data)
}

func (w aguiWire) delta(seq int64, typ agui.Type, id, text string) error {
	return w.sse.WriteEventFunc(seq, func(dst []byte) []byte { return agui.AppendDelta(dst, typ, id, text) })
}

func (w aguiWire) stored(seq int64, data []byte) error { return w.sse.WriteEvent(seq, data) }
