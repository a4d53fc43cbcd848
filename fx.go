package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/bbc28f59/engine/internal/callkey"
)

// Fx is the per-call context handed to every handler: the request's context and
// metadata, the caller, a logger, and the services of the app (journal, AI) that later
// capabilities add. An Fx is valid only during its call.
type Fx struct {
	ctx       context.Context
	app       *App
	flow      *FlowDef
	req       *http.Request
	logger    *slog.Logger
	principal *Principal

	st  *callState // &own, or the state of the Fx this one is a copy of
	own callState
}

// callState is what every copy of a call's Fx shares: one lock over one set of maps, so
// a meta member, a [Key] value or the idempotency key set through any copy is the call's.
type callState struct {
	mu   sync.Mutex
	meta map[string]any
	vals []keyValue // a call sets a few: a list costs one small allocation, a map several
	key  string     // the idempotency key of a call outside any durable run, made when asked

	stream *eventStream // a streaming flow's: opened by the engine, or nowhere when nobody listens
}

// keyValue is one [Key] value set for a call.
type keyValue struct{ k, v any }

// eventStream returns the call's event stream: the response's when the engine serves the
// call, else one whose events go nowhere.
func (fx *Fx) eventStream() *eventStream {
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stream == nil {
		st.stream = &eventStream{w: &discardResponse{}}
	}
	return st.stream
}

// setEventStream makes s the call's event stream.
func (fx *Fx) setEventStream(s *eventStream) {
	st := fx.state()
	st.mu.Lock()
	st.stream = s
	st.mu.Unlock()
}

// state returns the call's shared state.
func (fx *Fx) state() *callState {
	if fx.st == nil {
		return &fx.own // an Fx the app did not make
	}
	return fx.st
}

// Context returns the call's context: cancelled when the client goes away or the call
// ends.
func (fx *Fx) Context() context.Context { return fx.ctx }

// WithContext returns a copy of fx using ctx, for handlers that derive deadlines. The
// copy belongs to the same call: meta, [Key] values and the idempotency key set through
// either are the call's.
func (fx *Fx) WithContext(ctx context.Context) *Fx {
	return &Fx{ctx: ctx, app: fx.app, flow: fx.flow, req: fx.req, logger: fx.logger, principal: fx.principal, st: fx.state()}
}

// IdempotencyKey returns a key that is the same for every execution of this call and
// different for every other call: use it to make an external effect (a payment, an
// email) happen once although the handler may run more than once.
//
// A durable flow's handler runs again after a crash of its instance when it had started
// but its result was not yet recorded (at least once, as with Temporal's and DBOS's
// steps); every execution sees the same key, on any instance, after any restart. The key
// is the run's id for a durable call; for a flow called inside a durable run (an agent's
// tool, a flow called from a [Step]) it is derived from the calling run and the call, so
// it is the same whether or not the called flow is durable. A call outside any durable
// run has one execution and gets a fresh key.
func (fx *Fx) IdempotencyKey() string {
	if k := IdempotencyKey(fx.ctx); k != "" {
		return k
	}
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.key == "" {
		st.key = newCallKey()
	}
	return st.key
}

// IdempotencyKey returns the key of the durable step or call ctx belongs to: inside the
// function of a [Step], the step's ("<run id>-<position>"); in the context of a flow
// called within a durable run, that call's ([Fx.IdempotencyKey]). It returns "" for a
// context that belongs to neither.
func IdempotencyKey(ctx context.Context) string {
	if s := callkey.From(ctx); s != nil {
		return s.Key()
	}
	return ""
}

// ClaimRunID returns the key of a call made within a durable run (its
// [Fx.IdempotencyKey]) the first time it is asked during the call, for a durable runner
// to take as the id of the run it begins: a replay of the caller calls the flow again
// under the same key, and finds the run it began before instead of beginning another.
// It returns false for a call made outside any durable run, and after the first time.
func (fx *Fx) ClaimRunID() (string, bool) {
	if sc := callkey.From(fx.ctx); sc != nil && sc.TakeAsRun() {
		return sc.Key(), true
	}
	return "", false
}

// App returns the app serving the call.
func (fx *Fx) App() *App { return fx.app }

// Flow returns the flow being called.
func (fx *Fx) Flow() *FlowDef { return fx.flow }

// Request returns the HTTP request, or nil when the flow runs without one (a tool call by
// an agent, a resumed durable run).
func (fx *Fx) Request() *http.Request { return fx.req }

// Header returns a request header, or "" when there is no request.
func (fx *Fx) Header(name string) string {
	if fx.req == nil {
		return ""
	}
	return fx.req.Header.Get(name)
}

// Logger returns the app's logger annotated with the flow.
func (fx *Fx) Logger() *slog.Logger { return fx.logger }

// WithLogger returns a copy of fx whose [Fx.Logger] is l, for an interceptor that
// annotates the records of a call (a tracer adds the call's trace and span ids). The copy
// belongs to the same call, as with [Fx.WithContext].
func (fx *Fx) WithLogger(l *slog.Logger) *Fx {
	return &Fx{ctx: fx.ctx, app: fx.app, flow: fx.flow, req: fx.req, logger: l, principal: fx.principal, st: fx.state()}
}

// Principal returns the authenticated caller, or nil for an anonymous call of a public
// flow.
func (fx *Fx) Principal() *Principal { return fx.principal }

// Tenant returns the caller's tenant, or "".
func (fx *Fx) Tenant() string {
	if fx.principal == nil {
		return ""
	}
	return fx.principal.Tenant
}

// SetMeta sets a member of the reply's top-level meta object (for example nextCursor).
func (fx *Fx) SetMeta(key string, value any) {
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.meta == nil {
		st.meta = map[string]any{}
	}
	st.meta[key] = value
}

// metaValue returns a member of the reply's meta, or nil.
func (fx *Fx) metaValue(key string) any {
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.meta[key]
}

func (fx *Fx) metaJSON() (json.RawMessage, error) {
	st := fx.state()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.meta) == 0 {
		return nil, nil
	}
	return json.Marshal(st.meta)
}

// newCallKey returns the key of a call outside any durable run: "call_" and a UUIDv7
// (RFC 9562), time-ordered like every id the engine makes, so keys stored as a primary
// key, as the idempotency key of an effect is, insert at the right edge of its index.
// The other packages make their UUIDv7s with github.com/google/uuid; this one lays the
// same bytes out itself, because that library links database/sql/driver into every
// client (see internal/clientsize).
func newCallKey() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	b[6] = 0x70 | b[6]&0x0f // version 7
	b[8] = 0x80 | b[8]&0x3f // variant 10
	var out [41]byte
	copy(out[:], "call_")
	hex.Encode(out[5:13], b[0:4])
	out[13] = '-'
	hex.Encode(out[14:18], b[4:6])
	out[18] = '-'
	hex.Encode(out[19:23], b[6:8])
	out[23] = '-'
	hex.Encode(out[24:28], b[8:10])
	out[28] = '-'
	hex.Encode(out[29:41], b[10:16])
	return string(out[:])
}
