package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/internal/offstack"
	"github.com/google/jsonschema-go/jsonschema"
)

// HeaderOmitDone is the request header with which a caller asks a streaming flow to leave
// out the final data: [DONE] frame, which stock AG-UI clients reject. Any value but "" or
// "0" omits it.
const HeaderOmitDone = "Engine-Omit-Done"

// StreamFlow is a typed handle of a streaming flow: a call is answered with a
// text/event-stream of events of type Ev, one JSON value per data: frame, ending with
// data: [DONE]; its handler also returns a result of type Out, which is what a durable
// run of the flow records and what an in-process call ([App.Invoke]) returns. Like
// [Flow], it is a declaration a contract package shares with clients.
type StreamFlow[In, Ev, Out any] struct {
	def *FlowDef
}

// Def returns the untyped description.
func (f *StreamFlow[In, Ev, Out]) Def() *FlowDef { return f.def }

// ID returns "unit.flow".
func (f *StreamFlow[In, Ev, Out]) ID() string { return f.def.ID() }

// streamOutput describes a streaming flow's reply in the descriptor: not JSON, but an
// event stream (generators read it as a Response).
func streamOutput() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string",
		Description: "text/event-stream: one JSON event per data: frame, ending with data: [DONE]"}
}

// DefineStream declares a streaming flow of unit u: input In, events Ev, result Out. The
// options are those of [Define]; the descriptor lists the flow with "stream": true, the
// schema of its events under "events" and of its result under "result".
func DefineStream[In, Ev, Out any](u *Unit, name string, opts ...FlowOption) *StreamFlow[In, Ev, Out] {
	def := declare(u, name, reflect.TypeFor[In](), reflect.TypeFor[Out](), opts)
	def.stream = true
	def.evType = reflect.TypeFor[Ev]()
	if def.schemaErr == nil {
		def.evSchema, def.schemaErr = schemaFor(def.evType)
	}
	def.resultSchema, def.outSchema = def.outSchema, streamOutput()
	return &StreamFlow[In, Ev, Out]{def: def}
}

// Stream is where the handler of a streaming flow writes its events ([BindStream]). The
// engine opens it for the call; the response's status and headers go out with the first
// event (or when [Stream.SSE] is first called), so a handler that fails before sending
// anything is answered with the envelope and its status, like any flow. When the handler
// returns nil, or parks a durable run ([ErrParked]), the engine ends the stream with
// data: [DONE] (unless the request carries [HeaderOmitDone]); when it returns another
// error after events went out, the stream ends without it, so a client can tell the reply
// was cut short. A Stream is valid only during its call and is safe for concurrent use.
type Stream[Ev any] struct{ s *eventStream }

// Send writes ev as one data: frame (its JSON encoding). It returns an error once the
// client is gone or the stream is done.
func (s *Stream[Ev]) Send(ev Ev) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("engine: encoding a stream event: %w", err)
	}
	return s.s.send(data)
}

// SSE opens the stream (sending the status and headers now) and returns its writer, for
// a protocol that writes its frames itself: ids on frames (a log's seqs), data encoded
// in place. Frames written there and with [Stream.Send] share one stream. Do not close it:
// the engine does when the handler returns.
func (s *Stream[Ev]) SSE() *httpx.SSEWriter { return s.s.open(false) }

// Done writes the end-of-stream frame (data: [DONE]) now, unless the request asked to
// omit it, and refuses later events. The engine calls it when the handler returns nil;
// call it yourself when the stream is complete although the handler goes on to return an
// error, as a protocol that reports failures as events does (AG-UI's RUN_ERROR).
func (s *Stream[Ev]) Done() error { return s.s.done() }

// Header returns the header of the stream's response, for a protocol that names itself
// in one (the AI SDK's UI message stream sends x-vercel-ai-ui-message-stream). Set it
// before the stream opens (the first event, or [Stream.SSE]); later changes are not sent.
func (s *Stream[Ev]) Header() http.Header { return s.s.w.Header() }

// Live reports whether a client receives the events: false when the flow is called in
// process ([App.Invoke]), runs again in a resumed durable run, or was asked for its
// result alone (see [BindStream]).
func (s *Stream[Ev]) Live() bool { return s.s.live }

// Opened reports whether the stream's response has begun (an event was sent, or
// [Stream.SSE] was called): from then on a failure can no longer be an envelope.
func (s *Stream[Ev]) Opened() bool { return s.s.opened() }

// BindStream binds handler h to the streaming flow f: h writes the call's events to out
// and returns the call's result. It is an [Option] of [New].
//
// A caller that asks for the result alone (an Accept header naming application/json and
// not text/event-stream) is answered with the result as the envelope, like a call of a
// flow: the handler runs the same, and its events go nowhere.
//
//	engine.BindStream(Ask, func(fx *engine.Fx, in AskIn, out *engine.Stream[agui.Event]) (agui.RunOutput, error) {
//		return ai.Stream(fx, assistant, in, out)
//	})
//
// Everything that wraps a call wraps a streaming one the same way (gates, interceptors,
// the durable runner): the call is over when h returns.
func BindStream[In, Ev, Out any](f *StreamFlow[In, Ev, Out], h func(fx *Fx, in In, out *Stream[Ev]) (Out, error), opts ...BindOption) Option {
	if f == nil || f.def == nil {
		return InvalidOption(errors.New("engine: BindStream: nil flow"))
	}
	if h == nil {
		return InvalidOption(fmt.Errorf("engine: BindStream %s: nil handler", f.def.ID()))
	}
	return bind[In](f.def, func(fx *Fx, in In) (any, error) {
		return h(fx, in, &Stream[Ev]{s: fx.eventStream()})
	}, opts)
}

// eventStream is the untyped stream of one call of a streaming flow.
type eventStream struct {
	w        http.ResponseWriter
	live     bool // a client reads it
	omitDone bool

	mu   sync.Mutex
	sse  *httpx.SSEWriter // nil until opened
	over bool             // [DONE] written, or closed
}

func newEventStream(w http.ResponseWriter, r *http.Request) *eventStream {
	s := &eventStream{w: w, live: true}
	if r != nil {
		v := r.Header.Get(HeaderOmitDone)
		s.omitDone = v != "" && v != "0"
	}
	return s
}

// open returns the stream's writer, creating it on first use; hold leaves the headers to
// go out with the first frame.
func (s *eventStream) open(hold bool) *httpx.SSEWriter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sse == nil {
		if hold {
			s.sse = httpx.NewSSEWriter(s.w, httpx.SSEOptions{HoldHeaders: true})
		} else {
			s.sse = openSSE(s.w)
		}
	}
	return s.sse
}

// openSSE opens an SSE writer on w, sending the status and headers off the caller's
// stack ([offstack.Run]), and returns it. net/http writes the headers under a frame of
// nearly 3 KiB, and a stream is opened deep in its handler, under the engine's, the
// interceptors' and the journal's frames: sent from there, the headers would double the
// stack the handler's goroutine keeps for as long as the stream is open (the runtime
// shrinks an idle goroutine's stack only when a quarter of it holds what is in use). On
// a new coroutine for each stream, the same frame grew the coroutine's fresh stack every
// time, which cost a streamed run over loopback a few microseconds (BenchmarkAgentStream);
// offstack keeps goroutines whose stacks have grown, and takes one over without the
// scheduler. A panic there is raised again in the caller, where net/http recovers it.
func openSSE(w http.ResponseWriter) (sse *httpx.SSEWriter) {
	offstack.Run(func() { sse = httpx.NewSSEWriter(w, httpx.SSEOptions{}) })
	return sse
}

func (s *eventStream) opened() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sse != nil
}

var errStreamDone = errors.New("engine: the stream is done")

func (s *eventStream) send(data []byte) error {
	sse := s.open(true)
	s.mu.Lock()
	over := s.over
	s.mu.Unlock()
	if over {
		return errStreamDone
	}
	return sse.WriteEvent(0, data)
}

func (s *eventStream) done() error {
	sse := s.open(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return nil
	}
	s.over = true
	if s.omitDone {
		return sse.Flush()
	}
	return sse.WriteDone()
}

// close ends the response, after [DONE] when complete.
func (s *eventStream) close(complete bool) {
	if complete {
		_ = s.done()
	}
	s.mu.Lock()
	sse := s.sse
	s.over = true
	s.mu.Unlock()
	if sse != nil {
		_ = sse.Close()
	}
}

// isDone reports whether [Stream.Done] was called.
func (s *eventStream) isDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.over
}

// discardResponse is the response of a streaming call nobody listens to (an in-process
// call, a resumed durable run): its events go nowhere.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (*discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (*discardResponse) WriteHeader(int)             {}
func (*discardResponse) Flush()                      {}

// endStream ends the call of a streaming flow: see [Stream] for what each outcome
// writes.
func (a *App) endStream(w http.ResponseWriter, r *http.Request, fx *Fx, def *FlowDef, err error) {
	s := fx.eventStream()
	if err == nil {
		s.close(true)
		return
	}
	a.endStreamFailed(w, r, fx, def, s, err)
}

// endStreamFailed ends a streaming call whose handler returned err. It is apart from
// endStream so that the target errors.As needs is allocated only for a call that failed.
func (a *App) endStreamFailed(w http.ResponseWriter, r *http.Request, fx *Fx, def *FlowDef, s *eventStream, err error) {
	var acc *AcceptedError
	switch {
	case errors.Is(err, ErrParked) || errors.As(err, &acc):
		if !s.opened() {
			if acc != nil {
				fx.SetMeta("runId", acc.RunID)
			}
			a.writeParked(w, r, fx)
			return
		}
		s.close(true)
	case !s.opened():
		a.writeError(w, r, def, err)
	default:
		// The failure went out as events already (the handler called Done), or the
		// stream is cut short; either way the caller has its answer, and only the log
		// hears more.
		if s.isDone() {
			a.logger.DebugContext(r.Context(), "engine: stream ended with an error", "flow", def.ID(), "err", err)
		} else {
			_ = a.publicError(r.Context(), def, err)
		}
		s.close(false)
	}
}
