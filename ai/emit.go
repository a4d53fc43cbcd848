package ai

import (
	"context"
	"strconv"
	"sync"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/internal/bufpool"
	"github.com/bbc28f59/engine/journal"
)

// emitter sends a run's events: to the live SSE response (when streaming) and to the
// run's event log (when the app has a journal). The log assigns the seq the live frame
// carries as its id, so a follower that resumes from a live id sees no gap.
type emitter struct {
	ctx    context.Context
	sse    wire               // the live response; nil when nobody streams
	log    *journal.LogWriter // nil without a journal
	parent *emitter           // a subagent's events surface as CUSTOM events there

	mu     sync.Mutex
	logErr error
}

type emitterKey struct{}

func withEmitter(ctx context.Context, e *emitter) context.Context {
	return context.WithValue(ctx, emitterKey{}, e)
}

func emitterFrom(ctx context.Context) *emitter {
	e, _ := ctx.Value(emitterKey{}).(*emitter)
	return e
}

// emit encodes ev once and writes it to the log, then to the stream. A log failure is
// kept and stops further logging and streaming: a lost lease means another instance owns
// the run.
func (e *emitter) emit(ev agui.Event) { e.write(ev, false) }

// end emits the run's last event (RUN_FINISHED or RUN_ERROR) and ends the log with it:
// one journal write stores the event, the rows still queued and the stream's end.
func (e *emitter) end(ev agui.Event) { e.write(ev, true) }

func (e *emitter) write(ev agui.Event, last bool) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// The event is encoded into a shared buffer, given back once written: the log writer
	// and the SSE writer copy what they keep, and a run waiting on its model holds none.
	buf := bufpool.Get()
	defer bufpool.Put(buf)
	data, err := agui.AppendJSON(*buf, ev)
	if err != nil {
		return
	}
	*buf = data
	var seq int64
	if e.log != nil {
		if e.logErr != nil {
			return // see below
		}
		switch ev.(type) {
		case agui.TextMessageContent, agui.ToolCallArgs, agui.ReasoningMessageContent, agui.Unknown:
			seq, err = e.log.Write(e.ctx, data)
		case agui.RunFinished, agui.RunError:
			if last {
				seq, err = e.log.WriteEnd(e.ctx, string(ev.Type()), data)
			} else { // an interrupt: the run continues when it resumes
				seq, err = e.log.WriteTyped(e.ctx, string(ev.Type()), data)
			}
		default:
			seq, err = e.log.WriteTyped(e.ctx, string(ev.Type()), data)
		}
		if err != nil {
			// The log failed (most often: another instance took the run over). What this
			// execution does from here is not the run's history, so the live client is
			// shown none of it: an event it saw with an id would not be stored, and its
			// view would part from the log's, which the new owner continues.
			e.logErr = err
			return
		}
	}
	if e.sse != nil {
		_ = e.sse.event(seq, ev, data) // a gone client surfaces as the request's cancellation
	}
}

// delta sends a TEXT_MESSAGE_CONTENT, REASONING_MESSAGE_CONTENT or TOOL_CALL_ARGS event:
// the per-token path. The log writer takes the fields, and the event is encoded straight
// into the SSE frame, so a token costs no interface boxing, no parse and no copy of its
// own.
func (e *emitter) delta(typ agui.Type, id, text string) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var seq int64
	if e.log != nil {
		if e.logErr != nil {
			return
		}
		var err error
		if seq, err = e.log.WriteDelta(e.ctx, string(typ), id, text); err != nil {
			e.logErr = err
			return
		}
	}
	if e.sse != nil {
		_ = e.sse.delta(seq, typ, id, text)
	}
}

// failed returns the log error that must stop the run, or nil: a run whose log failed
// (its lease lost to another instance, or the database gone longer than the journal
// retries) can record nothing more of what it does.
func (e *emitter) failed() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logErr
}

// custom sends a CUSTOM event. A subagent that does not stream has no sink of its own,
// so its notices (and those of agents it runs in turn) go to the nearest ancestor run
// that has one.
func (e *emitter) custom(name string, value any) {
	for e != nil && e.sse == nil && e.log == nil && e.parent != nil {
		e = e.parent
	}
	if e == nil {
		return
	}
	ev, err := agui.NewCustom(name, value)
	if err != nil {
		return
	}
	e.emit(ev)
}

// ids hands out the run's message ids m-1, m-2, … and keeps counting through replayed
// steps, so a resumed run continues the numbering. A run started by an AG-UI client
// (its input names a runId) prefixes them with the run id: such a client keeps the
// messages of every run of the thread by id, so ids must not repeat across runs.
type ids struct {
	n      int
	prefix string
}

func (i *ids) next() string {
	i.n++
	return i.prefix + "m-" + strconv.Itoa(i.n)
}
