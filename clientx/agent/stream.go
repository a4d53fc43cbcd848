package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
)

// Stream calls the agent flow f (a streaming flow of AG-UI events) with input in through c, and
// yields the frames of the run's event stream as they arrive: the live counterpart of
// [Follow], which reads a run from its stored log. The request is the one
// [clientx.Call] would send (the flow's REST route or RPC, c's headers, bearer auth with
// one refresh on a 401, c's retries on network failure and 5xx) and is made when the
// iteration starts.
//
// A refusal before the stream starts ends the sequence with a single error that is the
// envelope's *engine.Error, as Call would report it, with its Status: Unauthorized,
// Forbidden, ValidationError, NotFound, a declared code. A reply that is no event stream
// (the flow does not stream: call it with [clientx.Call]) or no reply at all is a
// TransportError. Once the stream has started, frames are read as [ReadFrames] reads
// them: a frame that cannot be decoded is yielded as an error and reading goes on. The
// sequence ends when the run's stream ends; a failed read ends it with an error (wrapping
// ctx's error when ctx ended). Breaking the loop closes the connection, which aborts a run
// that has not ended.
//
// Stream does not reconnect: sending the request again would start another run. On the
// live stream only stored rows carry an id (Frame.Seq > 0; token deltas do not), so to
// go on after a cut, [Follow] the run (the runId of RUN_STARTED) from the last Seq
// received, expecting the text after that row to arrive again coalesced. The same holds
// after an approval interrupt: the stream ends with the interrupt's RUN_FINISHED, and
// once the approval is decided ([Approve], [Deny]) the resumed run is read with Follow
// from the last Seq.
func Stream[In, Out any](ctx context.Context, c *clientx.Client, f *engine.StreamFlow[In, agui.Event, Out], in In) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		if c == nil || f == nil || f.Def() == nil {
			yield(Frame{}, clientError(engine.CodeValidation, "Stream: nil client or flow"))
			return
		}
		body, err := json.Marshal(in)
		if err != nil {
			yield(Frame{}, clientError(engine.CodeValidation, "encoding input of "+f.ID()+": "+err.Error()))
			return
		}
		resp, e := c.OpenStream(ctx, f.ID(), json.RawMessage(body))
		if e != nil {
			yield(Frame{}, e)
			return
		}
		defer resp.Body.Close()
		for fr, err := range ReadFrames(resp.Body) {
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("agent: %w (%w)", ctx.Err(), err)
			}
			if !yield(fr, err) {
				return
			}
		}
	}
}
