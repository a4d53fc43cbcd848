package ai

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/google/jsonschema-go/jsonschema"
)

// Options configure the agent routes installed by [Install].
type Options struct {
	// ApprovalWait is how long a parked tool waits for a decision before it is denied
	// with reason timeout. Default 24h.
	ApprovalWait time.Duration
	// FollowPoll is the slowest a follower waits for new rows when no wake-up arrives (a
	// backstop for drivers without cross-process wake-ups). Default 500ms.
	FollowPoll time.Duration
	// Heartbeat is the idle time after which a follow stream sends a comment. Default 15s.
	Heartbeat time.Duration
	// PublicApprovals acknowledges that a tool needing approval is public with no gate
	// (a demo without sign-in): anyone who holds one of its interrupt ids may then decide
	// it. Without it, [Install] logs a warning for every such tool when the app is built.
	PublicApprovals bool
}

var configKey = engine.NewKey[Options]("ai.Install")

func configOf(app *engine.App) Options {
	if o, ok := configKey.App(app); ok {
		return o
	}
	return Options{}.withDefaults()
}

func (o Options) withDefaults() Options {
	if o.ApprovalWait == 0 {
		o.ApprovalWait = 24 * time.Hour
	}
	if o.FollowPoll == 0 {
		o.FollowPoll = 500 * time.Millisecond
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = 15 * time.Second
	}
	return o
}

func approvalWait(app *engine.App) time.Duration { return configOf(app).ApprovalWait }

// The unit of the built-in agent routes.
var agentUnit = engine.NewUnit("agent")

// ApproveIn is the body of POST /agent/approvals/approve. ID is required (a body
// without it is a ValidationError); an ID nobody waits on is NotFound.
type ApproveIn struct {
	ID   string          `json:"id"`
	Args json.RawMessage `json:"args,omitempty"`
}

// DenyIn is the body of POST /agent/approvals/deny. ID is required, as in [ApproveIn].
type DenyIn struct {
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// Decided is the reply of the approval routes: {ok: true}.
type Decided struct {
	OK bool `json:"ok"`
}

// The built-in approval flows. They are public so the request can arrive; authorization
// is the tool's gate and the tenant check.
var (
	ApproveFlow = engine.Define[ApproveIn, Decided](agentUnit, "approve", engine.POST("/agent/approvals/approve"), engine.Public(),
		engine.Describe("Approve a tool call waiting for approval; args, when given, replace the tool input."),
		engine.InputSchema(func(s *jsonschema.Schema) {
			s.Properties["args"] = &jsonschema.Schema{Type: "object", Description: "replaces the tool input"}
		}))
	DenyFlow = engine.Define[DenyIn, Decided](agentUnit, "deny", engine.POST("/agent/approvals/deny"), engine.Public(),
		engine.Describe("Deny a tool call waiting for approval; reason is what the model sees."))
)

// FollowPath is the follow route's trigger.
const FollowPath = "/agent/runs/:runId/events"

// Install adds the agent routes: POST /agent/approvals/approve, POST
// /agent/approvals/deny, GET /agent/runs/:runId/events, POST /agent/runs/:runId/stop and
// GET /agent/threads/:threadId/events. Durable agent runs and
// following need the app to have a journal (durable.With).
func Install(opts Options) engine.Option {
	if opts.ApprovalWait < 0 || opts.FollowPoll < 0 || opts.Heartbeat < 0 {
		return engine.InvalidOption(errors.New("ai: Install: durations must not be negative"))
	}
	opts = opts.withDefaults()
	return engine.Options(
		configKey.Option(opts),
		engine.Bind(ApproveFlow, func(fx *engine.Fx, in ApproveIn) (Decided, error) {
			if len(in.Args) > 0 && (in.Args[0] != '{') {
				return Decided{}, engine.Invalid(engine.ValidationIssue{Path: "args", Message: "expected object"})
			}
			if err := Approve(fx, in.ID, in.Args); err != nil {
				return Decided{}, err
			}
			return Decided{OK: true}, nil
		}),
		engine.Bind(DenyFlow, func(fx *engine.Fx, in DenyIn) (Decided, error) {
			if err := Deny(fx, in.ID, in.Reason); err != nil {
				return Decided{}, err
			}
			return Decided{OK: true}, nil
		}),
		engine.Handle(http.MethodGet, FollowPath, serveFollow),
		engine.Handle(http.MethodGet, ThreadFollowPath, serveThread),
		bindStop(),
		bindThreadMessages(),
		engine.Validate(func(app *engine.App) error {
			if !opts.PublicApprovals {
				warnPublicApprovals(app)
			}
			// The journal's retention closes a run's log with RUN_ERROR ([LogPolicy]).
			// Checks run once every option is applied, so the journal is known here
			// whatever the order of the options.
			if j := durable.JournalOf(app); j != nil {
				return j.SetLogPolicy(logPolicy)
			}
			return nil
		}),
	)
}

// warnPublicApprovals warns about each tool that needs approval and that anyone may
// decide: the approval routes are public and check the tool's gates for the decider, so
// a public tool with no gate lets whoever holds an interrupt id of it (it travels in the
// run's stream) approve the call.
func warnPublicApprovals(app *engine.App) {
	for _, def := range app.Flows() {
		if _, ok := approvalKey.Flow(app, def.ID()); !ok || !def.Public() || app.HasGates(def.ID()) {
			continue
		}
		app.Logger().Warn("ai: tool "+def.ID()+" needs approval but is public with no gate: anyone who holds one of its interrupt ids can approve it. Gate the tool (for example gate.Scopes) or, for a demo without sign-in, set ai.Options.PublicApprovals",
			"tool", def.ID())
	}
}
