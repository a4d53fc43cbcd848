package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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
	p := fx.Principal()
	if p == nil || !p.Operator {
		return Decided{}, engine.Forbidden("operator", "only operators decide parked runs")
	}
	if JournalOf(fx.App()) == nil {
		return Decided{}, errors.New("durable: Decisions needs durable.With")
	}
	err := Decide(fx.Context(), fx.App(), p, in.RunID, in.Key, journal.Decision{Kind: kind, Payload: in.Payload},
		DecideOptions{NotFound: "no such parked run"})
	if err != nil {
		return Decided{}, err
	}
	return Decided{OK: true}, nil
}

// DecideOptions are the options of [Decide].
type DecideOptions struct {
	// Check, when set, runs with the park before the decision is stored: checks of the
	// decider's own (an approval route runs the gates of the parked tool for whoever
	// decides). Its error is returned as it is.
	Check func(park journal.ParkRecord) error
	// NotFound is the message of the NotFound answer. Default: "no decision is waiting
	// under this run and key".
	NotFound string
}

// Parks returns the parks of durable run runID, decided or not, when principal p may
// decide them: the run must be of p's tenant (the tenant of an anonymous caller is "").
// An unknown run and another tenant's are NotFound alike (with message notFound), so run
// ids reveal nothing.
func Parks(ctx context.Context, app *engine.App, p *engine.Principal, runID, notFound string) ([]journal.ParkRecord, error) {
	j := JournalOf(app)
	unknown := noPark(notFound)
	if j == nil || runID == "" {
		return nil, unknown
	}
	rec, parks, err := j.GetRunParks(ctx, runID)
	if errors.Is(err, journal.ErrNotFound) {
		return nil, unknown
	}
	if err != nil {
		// The database, not the run: a 404 here would tell the caller to give up on a
		// decision a retry can still make.
		return nil, fmt.Errorf("durable: reading run %s: %w", runID, err)
	}
	tenant := ""
	if p != nil {
		tenant = p.Tenant
	}
	if rec.Tenant != tenant {
		return nil, unknown
	}
	return parks, nil
}

// noPark is the NotFound of a decision with nothing to decide.
func noPark(msg string) error {
	if msg == "" {
		msg = "no decision is waiting under this run and key"
	}
	return engine.NewError(engine.CodeNotFound, map[string]any{"message": msg})
}

// Decide stores decision d of the park key of durable run runID, made by principal p:
// the one path every way of deciding takes (the approval routes and AG-UI resumes of
// package ai, [Decisions]).
//
// NotFound for an unknown run, a run of another tenant (alike, see [Parks]), an unknown
// key, or a wait for a signal or a channel's message (set the signal or publish
// instead). A park past its deadline has timed out, whether or not the recovery loop
// swept it yet: its timeout is stored and d is Conflict. Then [DecideOptions.Check], then
// the journal's exactly-once decision: Conflict when one is stored already,
// JournalLeaseBusy (with Retry-After) while another instance holds the run. The run
// wakes at once on whichever instance claims it.
func Decide(ctx context.Context, app *engine.App, p *engine.Principal, runID, key string, d journal.Decision, opts DecideOptions) error {
	parks, err := Parks(ctx, app, p, runID, opts.NotFound)
	if err != nil {
		return err
	}
	var park *journal.ParkRecord
	for i := range parks {
		if parks[i].Key == key {
			park = &parks[i]
		}
	}
	if park == nil {
		return noPark(opts.NotFound)
	}
	if park.Topic != "" {
		return engine.NewError(engine.CodeNotFound, map[string]any{
			"message": "the run waits there for a signal or a message, not a decision"})
	}
	j := JournalOf(app)
	if Lapsed(*park, j.Now()) {
		if err := TimeOut(ctx, app, runID, key); err != nil {
			return err
		}
		return MapError(journal.ErrConflict)
	}
	if opts.Check != nil {
		if err := opts.Check(*park); err != nil {
			return err
		}
	}
	if err := j.Decide(ctx, runID, key, d); err != nil {
		return MapError(err)
	}
	if t := journal.TracerOf(ctx); t != nil {
		t.Decided(ctx, *park, d)
	}
	return nil
}

// Lapsed reports whether park is undecided and past its deadline: timed out, whether or
// not the recovery loop has swept it yet.
func Lapsed(park journal.ParkRecord, now time.Time) bool {
	return park.Decision == nil && !park.Deadline.After(now)
}

// TimeOut stores the timeout decision of a lapsed park, as the recovery loop would; a
// park decided meanwhile is left as it is.
func TimeOut(ctx context.Context, app *engine.App, runID, key string) error {
	timeout, _ := json.Marshal(map[string]string{"reason": "timeout"})
	err := JournalOf(app).Decide(ctx, runID, key, journal.Decision{Kind: journal.DecisionTimeout, Payload: timeout})
	if err != nil && !errors.Is(err, journal.ErrConflict) {
		return MapError(err)
	}
	return nil
}
