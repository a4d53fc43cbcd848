package clientx

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/httpx"
)

// Stream calls the streaming flow f with input in through c and yields its events as
// they arrive, each frame's JSON decoded into Ev. The request is the one [Call] would
// send (REST or RPC, c's headers, bearer auth with one refresh on a 401, c's retries on
// network failure and 5xx before the stream starts), made when the iteration starts.
//
// A refusal before the stream starts ends the sequence with a single error: the
// envelope's *engine.Error, as Call would report it (Unauthorized, Forbidden,
// ValidationError, a declared code), with its HTTP status. A frame that does not decode
// is yielded as an error and reading goes on. The sequence ends at data: [DONE]; a
// stream that ends without it (the flow failed mid-way) ends with a TransportError, so a
// complete stream and a cut one are told apart. Breaking the loop closes the connection.
// Agent runs have their own reader, Stream in package clientx/agent, which keeps each
// event's id for a resume.
func Stream[In, Ev, Out any](ctx context.Context, c *Client, f *engine.StreamFlow[In, Ev, Out], in In) iter.Seq2[Ev, error] {
	return func(yield func(Ev, error) bool) {
		var zero Ev
		if c == nil || f == nil || f.Def() == nil {
			yield(zero, clientError(engine.CodeValidation, "clientx: Stream: nil client or flow"))
			return
		}
		body, err := json.Marshal(in)
		if err != nil {
			yield(zero, clientError(engine.CodeValidation, "encoding input of "+f.ID()+": "+err.Error()))
			return
		}
		resp, e := c.OpenStream(ctx, f.ID(), json.RawMessage(body))
		if e != nil {
			yield(zero, e)
			return
		}
		defer resp.Body.Close()
		for frame, err := range httpx.NewSSEReader(resp.Body).All() {
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("clientx: %w (%w)", ctx.Err(), err)
				}
				yield(zero, transportError("reading the stream of "+f.ID()+": "+err.Error(), resp.StatusCode))
				return
			}
			if frame.Data == "[DONE]" {
				return
			}
			var ev Ev
			if err := json.Unmarshal([]byte(frame.Data), &ev); err != nil {
				if !yield(zero, transportError("decoding an event of "+f.ID()+": "+err.Error(), resp.StatusCode)) {
					return
				}
				continue
			}
			if !yield(ev, nil) {
				return
			}
		}
		yield(zero, transportError("the stream of "+f.ID()+" ended without data: [DONE]: the flow failed mid-way", resp.StatusCode))
	}
}
