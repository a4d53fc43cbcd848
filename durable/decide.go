package durable

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/journal"
	"github.com/google/jsonschema-go/jsonschema"
)

// DecideIn decides a park of a durable run: the run id from the 202 reply's
// meta.runId, and the key the handler gave [Park].
type DecideIn struct {
	RunID string `json:"runId"`
	Key   string `json:"key"`
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// Payload is handed to the handler as the decision's payload (any JSON value).
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Decided is the reply of a decision that was stored.
type Decided struct {
	OK bool `json:"ok"`
}

var runsUnit = engine.NewUnit("runs")

// DecideFlow decides a parked durable run over HTTP (RPC: POST /_engine/runs/decide).
// It is bound by [Decisions]; a Go client calls it with clientx.Call like any flow.
var DecideFlow = engine.Define[DecideIn, Decided](runsUnit, "decide",
	engine.Describe("Decide a parked durable run (operators of the run's tenant)."),
	engine.InputSchema(func(s *jsonschema.Schema) {
		s.Properties["decision"].Enum = []any{"approve", "deny"}
		s.Properties["payload"] = &jsonschema.Schema{Description: "any JSON value, handed to the handler"}
		s.Required = []string{"runId", "key", "decision"}
	}))

// Decisions binds [DecideFlow], the HTTP way to decide the park of a durable flow that
// [Park]ed (agent approvals have their own routes in package ai). Only operators decide
// (anyone else signed in gets Forbidden {gate: "operator"} before any run is looked up),
// and only runs of their own tenant: another tenant's run is NotFound exactly as an
// unknown one, so run ids reveal nothing. The flow is gated, so the app needs an
// authenticator; opts add gates of your own (a scope, a rate limit).
// Replies: {ok: true}; NotFound for an unknown run or key, one that is not parked
// under it, or a wait for a signal or a channel's message (set or publish instead); Conflict when already decided; JournalLeaseBusy (with Retry-After) when
// another worker holds the run. A decision wakes the run on whichever instance claims it.
func Decisions(opts ...engine.BindOption) engine.Option {
	return engine.Bind(DecideFlow, decide, opts...)
}

func decide(fx *engine.Fx, in DecideIn) (Decided, error) {
	j := JournalOf(fx.App())
	if j == nil {
		return Decided{}, errors.New("durable: Decisions needs durable.With")
	}
	var kind journal.DecisionKind
	switch in.Decision {
	case "approve":
		kind = journal.DecisionApprove
	case "deny":
		kind = journal.DecisionDeny
	default:
		return Decided{}, engine.Invalid(engine.ValidationIssue{Path: "decision",
			Message: fmt.Sprintf("must be approve or deny, got %q", in.Decision)})
	}
	if in.RunID == "" || in.Key == "" {
		return Decided{}, engine.Invalid(engine.ValidationIssue{Message: "runId and key are required"})
	}
	if in.Payload != nil && !json.Valid(in.Payload) {
		return Decided{}, engine.Invalid(engine.ValidationIssue{Path: "payload", Message: "must be JSON"})
	}
	notFound := engine.NewError(engine.CodeNotFound, map[string]any{"message": "no such parked run"})
	p := fx.Principal()
	if p == nil || !p.Operator {
		return Decided{}, engine.Forbidden("operator", "only operators decide parked runs")
	}
	rec, err := j.GetRun(fx.Context(), in.RunID)
	if errors.Is(err, journal.ErrNotFound) || (err == nil && rec.Tenant != p.Tenant) {
		return Decided{}, notFound
	}
	if err != nil {
		return Decided{}, err
	}
	// A wait for a signal or a message is decided by setting the signal or publishing,
	// never by an operator's approve or deny (which the wait would take for the value).
	parks, err := j.Driver().ListParks(fx.Context(), in.RunID)
	if err != nil {
		return Decided{}, MapError(err)
	}
	for _, pk := range parks {
		if pk.Key == in.Key && pk.Topic != "" {
			return Decided{}, engine.NewError(engine.CodeNotFound, map[string]any{
				"message": "the run waits there for a signal or a message, not a decision"})
		}
	}
	if err := j.Decide(fx.Context(), in.RunID, in.Key, journal.Decision{Kind: kind, Payload: in.Payload}); err != nil {
		return Decided{}, MapError(err)
	}
	return Decided{OK: true}, nil
}
