package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
)

// approvalKey marks a tool flow that needs approval.
var approvalKey = engine.NewKey[approvalSpec]("ai.Approval")

// approvalSpec is what [Approval] stores on a tool flow's binding.
type approvalSpec struct {
	needs func(args json.RawMessage) (bool, error)
}

// Approval makes a tool flow wait for a human's decision when pred is true of the input
// the model chose. Only the approval routes and [Approve]/[Deny] can decide; nothing the
// model says can approve its own call.
//
//	engine.Bind(Transfer, transfer, ai.Approval(func(in TransferIn) bool { return in.Amount > 100 }))
func Approval[In any](pred func(in In) bool) engine.BindOption {
	return approvalKey.BindOption(approvalSpec{needs: func(args json.RawMessage) (bool, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return false, err
		}
		return pred(in), nil
	}})
}

// parkPayload is stored with each park: what the decision is about.
type parkPayload struct {
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Agent      string          `json:"agent"`
	StreamID   string          `json:"streamId"`
	ToolCallID string          `json:"toolCallId"`
}

// decisionPayload is stored with each decision.
type decisionPayload struct {
	Args   json.RawMessage `json:"args,omitempty"`
	Reason string          `json:"reason,omitempty"`
}

// approvals parks every call of the step that needs approval. It returns the decisions
// already stored; when any call is still undecided it emits the interrupt and marks the
// run parked, and no tool of the step runs.
func (s *loopState) approvals(stepName string, calls []ToolCall) (map[string]*journal.Decision, error) {
	r := s.r
	app := r.fx.App()
	decisions := map[string]*journal.Decision{}
	var pending []agui.Interrupt
	for _, c := range calls {
		tool := r.flowOf(c.Name)
		spec, _ := approvalKey.Flow(app, tool)
		if spec.needs == nil {
			continue
		}
		args := json.RawMessage(c.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		need, err := spec.needs(args)
		if err != nil || !need {
			continue // bad arguments are reported to the model when the tool is invoked
		}
		if r.durable == nil {
			return nil, &stopError{msg: fmt.Sprintf("ai: flow named %s must set durable: true to run agent named %s", r.fx.Flow().ID(), r.agent.name)}
		}
		wait := approvalWait(app)
		clock := durable.JournalOf(app).Now
		deadline, err := durable.Step(r.fx.WithContext(s.ctx), "approval-deadline:"+c.ID, func(context.Context) (time.Time, error) {
			return clock().Add(wait).UTC().Truncate(time.Millisecond), nil
		})
		if err != nil {
			return nil, err
		}
		d, err := durable.Park(r.fx.WithContext(s.ctx), c.ID, deadline,
			parkPayload{Tool: tool, Args: args, Agent: r.agent.name, StreamID: r.id, ToolCallID: c.ID})
		if err != nil && !errors.Is(err, engine.ErrParked) {
			return nil, err
		}
		if d != nil && d.Kind == journal.DecisionCancel {
			return nil, errStopped // the run was stopped while it waited
		}
		if d != nil {
			decisions[c.ID] = d
			continue
		}
		id, err := agui.NewInterruptID(r.durable.ID, c.ID)
		if err != nil {
			return nil, err
		}
		pending = append(pending, agui.Interrupt{ID: id, Reason: agui.ReasonApproval,
			Payload: agui.InterruptPayload{Tool: tool, Args: args}, ToolCallID: c.ID, ExpiresAt: deadline,
			Message:        fmt.Sprintf("Approve the call of %s with %s?", tool, args),
			ResponseSchema: responseSchema})
	}
	if len(pending) > 0 {
		s.openStep(stepName)
		s.closeStep(stepName)
		s.snapshotAt()
		s.em.emit(agui.RunFinished{ThreadID: r.threadID, RunID: r.id, Outcome: agui.InterruptOutcome(pending...)})
		r.parked = true
		r.interrupts = pending
	}
	return decisions, nil
}

// Approve decides an approval interrupt as the caller of fx, exactly like the approve
// route: args, when given, replace the tool input and are validated like model arguments.
func Approve(fx *engine.Fx, id string, args json.RawMessage) error {
	return decide(fx.Context(), fx.App(), fx.Principal(), id, journal.DecisionApprove, decisionPayload{Args: args})
}

// Deny decides an approval interrupt as the caller of fx, exactly like the deny route;
// reason is what the model sees.
func Deny(fx *engine.Fx, id, reason string) error {
	return decide(fx.Context(), fx.App(), fx.Principal(), id, journal.DecisionDeny, decisionPayload{Reason: reason})
}

// noApproval is the message of the NotFound of an unknown interrupt id.
const noApproval = "no approval is waiting under this id"

// decide checks and stores one decision through [durable.Decide]: 404 for an unknown id
// or another tenant's park, the tool's gate for the caller (401/403/429), a validation
// error for bad replacement args, then the journal's exactly-once decision (409
// Conflict or JournalLeaseBusy). The run wakes at once on the instance that claims it.
func decide(ctx context.Context, app *engine.App, p *engine.Principal, id string, kind journal.DecisionKind, dp decisionPayload) error {
	runID, callID, err := agui.ParseInterruptID(id)
	if id == "" || err != nil {
		return engine.NotFound(noApproval)
	}
	payload, _ := json.Marshal(dp)
	return durable.Decide(ctx, app, p, runID, callID, journal.Decision{Kind: kind, Payload: payload}, durable.DecideOptions{
		NotFound: noApproval,
		Check: func(park journal.ParkRecord) error {
			var pp parkPayload
			if err := json.Unmarshal(park.Payload, &pp); err != nil {
				return fmt.Errorf("ai: decoding park payload: %w", err)
			}
			return toolGates(ctx, app, p, pp, dp)
		},
	})
}

// toolGates runs the gates of the parked call's tool for p, with the input the decision
// gives the tool: the edited args when there are any, else the model's.
func toolGates(ctx context.Context, app *engine.App, p *engine.Principal, pp parkPayload, dp decisionPayload) error {
	input := pp.Args
	if len(dp.Args) > 0 {
		input = dp.Args
	}
	return app.CheckGates(ctx, pp.Tool, p, input)
}
