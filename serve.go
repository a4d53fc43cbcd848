package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/bbc28f59/engine/httpx"
	"github.com/bbc28f59/engine/internal/callkey"
)

// RPCPrefix is the path prefix of RPC calls and the descriptor.
const RPCPrefix = "/_engine/"

// Handler returns the app as an http.Handler: REST triggers, RPC under /_engine/, the
// descriptor at /_engine/client.json and the TypeScript files generated from it at
// /_engine/client.d.ts and /_engine/client.js. It works under a prefix (http.StripPrefix)
// and behind any middleware.
func (a *App) Handler() http.Handler { return a }

// ServeHTTP implements http.Handler.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer a.recoverPanic(w, r, nil, nil)
	if !a.checkOrigin(w, r) {
		return
	}
	path := r.URL.EscapedPath()
	if strings.HasPrefix(path, RPCPrefix) {
		a.serveEngine(w, r, path)
		return
	}
	t := a.route(w, r, path)
	if t == nil {
		return
	}
	if t.extra != nil {
		t.extra.ServeHTTP(w, r)
		return
	}
	a.serveFlow(w, r, t.binding, true)
}

// route finds the route of r's method and path and sets the path's parameters on r;
// when no route takes them it answers 405 naming the methods allowed when the path is
// found, else 404, and returns nil. It is kept out of ServeHTTP, under whose frame every
// request runs: a goroutine's stack grows with the deepest it ever gets, and a stream
// holds its stack for as long as it is open.
//
//go:noinline
func (a *App) route(w http.ResponseWriter, r *http.Request, path string) *routeTarget {
	var room [4]string // the path's parameters, without a slice on the heap
	t, vals, found, allow := a.router.match(r.Method, path, room[:0])
	if t == nil {
		if found {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			a.writeError(w, r, nil, NewError(CodeMethodNotAllowed, map[string]any{
				"message": fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path), "allow": allow}))
			return nil
		}
		a.writeError(w, r, nil, NotFound("no route %s %s", r.Method, r.URL.Path))
		return nil
	}
	for i, name := range t.params {
		r.SetPathValue(name, vals[i])
	}
	return t
}

// serveEngine serves a path under /_engine/: the descriptor, an RPC call, or a route
// mounted there with [Handle]. An RPC call of a bound flow wins over a mounted route.
func (a *App) serveEngine(w http.ResponseWriter, r *http.Request, path string) {
	rest := path[len(RPCPrefix):]
	switch rest {
	case "client.json", "client.d.ts", "client.js":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			a.writeError(w, r, nil, NewError(CodeMethodNotAllowed, map[string]any{"message": "/_engine/" + rest + " is read with GET"}))
			return
		}
		if rest == "client.json" {
			a.serveDescriptor(w, r)
		} else {
			a.serveTypeScript(w, r, rest)
		}
		return
	}
	unit, flow, ok := strings.Cut(rest, "/")
	b := a.bindings[unit+"."+flow]
	rpc := ok && b != nil && !b.serverOnly && !strings.Contains(flow, "/")
	if rpc && r.Method == http.MethodPost {
		a.serveFlow(w, r, b, false)
		return
	}
	var room [4]string
	t, vals, found, allow := a.router.match(r.Method, path, room[:0])
	if t != nil {
		for i, name := range t.params {
			r.SetPathValue(name, vals[i])
		}
		t.extra.ServeHTTP(w, r)
		return
	}
	if rpc || found {
		if rpc {
			allow = append([]string{http.MethodPost}, allow...)
		}
		var def *FlowDef
		msg := fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)
		if rpc {
			def, msg = b.def, "RPC calls use POST"
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		a.writeError(w, r, def, NewError(CodeMethodNotAllowed, map[string]any{"message": msg}))
		return
	}
	a.writeError(w, r, nil, NotFound("no flow %s", strings.ReplaceAll(rest, "/", ".")))
}

// serveFlow decodes the input, runs the flow and writes its reply.
func (a *App) serveFlow(w http.ResponseWriter, r *http.Request, b *binding, rest bool) {
	fx := a.newFx(r.Context(), b.def, r)
	defer a.recoverPanic(w, r, b.def, fx)
	if !b.def.tokenEnd {
		// Refused credentials are refused on public flows too (see authenticate).
		p, err := a.authenticate(r)
		if err != nil {
			a.writeError(w, r, b.def, err)
			return
		}
		fx.principal = p
	}
	raw, err := a.readInput(w, r, b, rest)
	if err != nil {
		a.writeError(w, r, b.def, err)
		return
	}
	in, err := b.decode(raw)
	if err != nil {
		a.writeError(w, r, b.def, err)
		return
	}
	if b.def.stream && !wantsJSON(r) {
		fx.setEventStream(newEventStream(w, r))
		_, err := b.call(fx, in)
		a.endStream(w, r, fx, b.def, err)
		return
	}
	// A flow, or a streaming flow whose caller asked for its result alone: its events go
	// nowhere, and the reply is the envelope.
	out, err := b.call(fx, in)
	if err != nil {
		a.writeCallError(w, r, fx, b.def, err)
		return
	}
	a.writeOutput(w, r, fx, b.def, out)
}

// writeCallError answers a call whose handler failed: a run that parked is 202, any
// other error its envelope. It is apart from serveFlow so that the target errors.As
// needs is allocated only for a call that failed.
func (a *App) writeCallError(w http.ResponseWriter, r *http.Request, fx *Fx, def *FlowDef, err error) {
	var acc *AcceptedError
	switch {
	case errors.As(err, &acc):
		fx.SetMeta("runId", acc.RunID)
		a.writeParked(w, r, fx)
	case errors.Is(err, ErrParked):
		a.writeParked(w, r, fx)
	default:
		a.writeError(w, r, def, err)
	}
}

// wantsJSON reports whether a call of a streaming flow asks for its result as JSON
// instead of its events: an Accept header naming application/json and not
// text/event-stream. Without one, streaming flows stream.
func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, httpx.ContentTypeJSON) && !strings.Contains(accept, "text/event-stream")
}

// AcceptedError answers a call as a call whose durable run parked (202 Accepted, no
// data, meta {parked: true, runId}) where the run that waits is not the call's own: an
// agent resume (package ai) whose run parked again. The call itself succeeded, and a
// durable run of it completes.
type AcceptedError struct {
	RunID string // the run that waits
}

func (e *AcceptedError) Error() string { return "engine: run " + e.RunID + " waits for a decision" }

// writeParked answers a durable call that parked awaiting a decision: 202 Accepted, no
// data, and meta {parked: true} beside what the durable runner set (runId, so the caller
// can find the run again).
func (a *App) writeParked(w http.ResponseWriter, r *http.Request, fx *Fx) {
	fx.SetMeta("parked", true)
	meta, _ := fx.metaJSON()
	httpx.WriteEnvelope(w, http.StatusAccepted, []byte("null"), "", nil, meta)
}

func (a *App) newFx(ctx context.Context, def *FlowDef, r *http.Request) *Fx {
	fx := &Fx{ctx: ctx, app: a, flow: def, req: r, logger: a.logger}
	fx.st = &fx.own
	return fx
}

// readInput assembles the raw JSON input of a call: the body (RPC and REST bodies), the
// query string (REST GET and HEAD) and the path parameters.
func (a *App) readInput(w http.ResponseWriter, r *http.Request, b *binding, rest bool) ([]byte, error) {
	var body []byte
	if !rest || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		if r.ContentLength > a.maxBody {
			return nil, a.tooLarge() // before a byte of it is read
		}
		d := a.bodyDeadline(w, r)
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(nil, r.Body, a.maxBody))
		if d != nil {
			_ = d.SetReadDeadline(time.Time{})
		}
		if err != nil {
			return nil, a.bodyError(w, err)
		}
	}
	if !rest {
		return body, nil
	}
	return restInput(r, b.def, body)
}

// writeOutput encodes a successful reply.
func (a *App) writeOutput(w http.ResponseWriter, r *http.Request, fx *Fx, def *FlowDef, out any) {
	switch out.(type) {
	case NoContent, *NoContent:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	data, err := a.encodeOutput(r.Context(), def, out)
	if err != nil {
		a.writeError(w, r, def, err)
		return
	}
	meta, err := fx.metaJSON()
	if err != nil {
		a.writeError(w, r, def, fmt.Errorf("encoding meta of %s: %w", def.ID(), err))
		return
	}
	httpx.WriteEnvelope(w, http.StatusOK, data, "", nil, meta)
}

// writeError turns err into the envelope. Declared codes keep their status; framework
// codes use theirs; anything else is logged with detail and answered as InternalError.
func (a *App) writeError(w http.ResponseWriter, r *http.Request, def *FlowDef, err error) {
	e := a.publicError(r.Context(), def, err)
	if e == nil {
		return // the client is gone; nothing to write
	}
	data, mErr := json.Marshal(orEmpty(e.Data))
	if mErr != nil {
		a.logger.ErrorContext(r.Context(), "engine: encoding error payload", "code", e.Code, "err", mErr)
		e = NewError(CodeInternal, map[string]any{"message": "internal error"})
		data = []byte(`{"message":"internal error"}`)
	}
	h := w.Header()
	for k, vs := range e.header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	httpx.WriteEnvelope(w, e.HTTPStatus(), nil, e.Code, data, nil)
}

// publicError maps err to what a caller may see, logging what it hides. It returns nil
// when the call was cancelled because the client went away.
func (a *App) publicError(ctx context.Context, def *FlowDef, err error) *Error {
	flowID := ""
	if def != nil {
		flowID = def.ID()
	}
	if e := AsError(err); e != nil {
		if spec, ok := declared(def, e.Code); ok {
			if e.Status == 0 {
				e.Status = spec.Status()
			}
			return e
		}
		if IsFrameworkCode(e.Code) {
			return e
		}
		a.logger.ErrorContext(ctx, "engine: flow returned an undeclared error code", "flow", flowID, "code", e.Code, "err", err)
		return internalError()
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	a.logger.ErrorContext(ctx, "engine: flow failed", "flow", flowID, "err", err)
	return internalError()
}

func declared(def *FlowDef, code string) (ErrorSpec, bool) {
	if def == nil {
		return nil, false
	}
	return def.ErrorSpec(code)
}

func internalError() *Error {
	return NewError(CodeInternal, map[string]any{"message": "internal error"})
}

func orEmpty(v any) any {
	if v == nil {
		return struct{}{}
	}
	return v
}

// recoverPanic answers a panic as InternalError and logs its stack; the process goes on.
// A streaming call whose stream has begun is cut short instead (no [DONE]): an envelope
// there would corrupt it.
func (a *App) recoverPanic(w http.ResponseWriter, r *http.Request, def *FlowDef, fx *Fx) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	flowID := ""
	if def != nil {
		flowID = def.ID()
	}
	a.logger.ErrorContext(r.Context(), "engine: panic in flow", "flow", flowID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if fx != nil && def != nil && def.stream {
		if s := fx.eventStream(); s.opened() {
			s.close(false)
			return
		}
	}
	a.writeError(w, r, def, NewError(CodeInternal, map[string]any{"message": "internal error"}))
}

// Invoke calls a bound flow in-process with a JSON input as principal p (nil for an
// anonymous call): the same validation, gates and handler as over HTTP, without a
// request. Agents call their tools through it. A failure is an *Error as a caller would
// see it (internal detail is logged, not returned); a durable flow whose run parks
// answers an [*AcceptedError] naming the run, as the 202 reply over HTTP does.
func (a *App) Invoke(ctx context.Context, id string, p *Principal, input json.RawMessage) (json.RawMessage, error) {
	b, ok := a.bindings[id]
	if !ok {
		return nil, NotFound("no flow %s", id)
	}
	out, err := a.invoke(ctx, b, p, input)
	if err != nil {
		return nil, err
	}
	data, mErr := a.encodeOutput(ctx, b.def, out)
	if mErr != nil {
		return nil, a.publicError(ctx, b.def, mErr)
	}
	return data, nil
}

func (a *App) invoke(ctx context.Context, b *binding, p *Principal, input json.RawMessage) (out any, err error) {
	if sc := callkey.From(ctx); sc != nil {
		// Called by a durable run: the call's key comes from the caller's step (or run)
		// and the order of its calls, the same on every execution.
		ctx = callkey.With(ctx, callkey.ForCall(sc.Next()))
	}
	fx := a.newFx(ctx, b.def, nil)
	fx.principal = p
	defer func() {
		if v := recover(); v != nil {
			a.logger.ErrorContext(ctx, "engine: panic in flow", "flow", b.def.ID(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			out, err = nil, internalError()
		}
	}()
	in, err := b.decode(input)
	if err != nil {
		return nil, a.publicError(ctx, b.def, err)
	}
	out, err = b.call(fx, in)
	if err != nil {
		if errors.Is(err, ErrParked) {
			// The call's durable run waits for a decision: the caller is told which, as
			// the 202 reply over HTTP names it.
			if id, ok := fx.metaValue("runId").(string); ok && id != "" {
				return nil, &AcceptedError{RunID: id}
			}
			return nil, err
		}
		if e := a.publicError(ctx, b.def, err); e != nil {
			return nil, e
		}
		return nil, err
	}
	return out, nil
}

// WriteData writes a success envelope carrying data (and the call's meta): a route
// mounted with [Handle] answers with it.
func WriteData(fx *Fx, w http.ResponseWriter, r *http.Request, data any) {
	fx.app.writeOutput(w, r, fx, fx.flow, data)
}

// WriteError writes err as the envelope, exactly as a handler's returned error would be.
func WriteError(fx *Fx, w http.ResponseWriter, r *http.Request, err error) {
	var def *FlowDef
	var a *App
	if fx != nil {
		def, a = fx.flow, fx.app
	}
	if a == nil {
		a = &App{logger: slog.Default()}
	}
	a.writeError(w, r, def, err)
}
