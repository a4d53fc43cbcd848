package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/internal/ext"
	"github.com/bbc28f59/engine/journal"
)

// resume re-executes a durable run claimed by the journal: the same flow, input and
// principal, with the journal replaying recorded steps. Gates are not run again: they
// were passed when the run began. A streaming output is drained without a client; its
// events still reach the run's event log.
func (r *runner) resume(ctx context.Context, run *journal.Run) {
	def, ok := r.app.Lookup(run.Flow)
	handle, decode, _ := ext.Handler(r.app, run.Flow)
	if !ok || !def.Durable() {
		_ = run.Fail(ctx, "durable: flow "+run.Flow+" is not bound as a durable flow on this instance")
		return
	}
	var p *engine.Principal
	if len(run.Principal) > 0 && string(run.Principal) != "null" {
		p = &engine.Principal{}
		if err := json.Unmarshal(run.Principal, p); err != nil {
			_ = run.Fail(ctx, "durable: decoding the run's principal: "+err.Error())
			return
		}
	}
	fx := ext.CallFx(r.app, ctx, def, p)
	execKey.Set(fx, &execution{run: run})
	defer func() {
		if v := recover(); v != nil {
			r.app.Logger().ErrorContext(ctx, "durable: panic resuming durable run", "flow", run.Flow, "run", run.ID, "panic", fmt.Sprint(v))
			_ = run.Fail(ctx, "panic")
		}
	}()
	in, err := decode(run.Input)
	if err != nil {
		_ = run.Fail(ctx, "durable: decoding the run's input: "+err.Error())
		return
	}
	out, err := r.wrap(def, handle)(fx, in)
	if err != nil {
		return
	}
	if resp, ok := out.(engine.Responder); ok {
		// Nobody asked: the request only carries the run's context to the responder.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", http.NoBody)
		if err != nil {
			panic(err) // a constant method and path
		}
		resp.Respond(fx, discardWriter{h: http.Header{}}, req)
	}
}

// discardWriter is the response of a resumed run: nobody is listening, the event log is.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
func (d discardWriter) Flush()                      {}
