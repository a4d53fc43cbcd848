package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
)

// responseSchema is the interrupts' responseSchema: the payload of a resume entry the
// engine reads (see [ResumePayload]).
var responseSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"args":{"type":"object","description":"with status resolved: replaces the tool input; validated against the tool's input schema"},` +
	`"reason":{"type":"string","description":"with status cancelled: why the call was denied, which the model sees"}}}`)

// resumePoint is where the response to a resume input starts reading the parked run's
// log: recorded as a step of the flow that received it, so a replay of that flow does
// not decide again.
type resumePoint struct {
	Stream string `json:"stream"`
	After  int64  `json:"after"`
}

// resume answers the interrupts of a parked agent run (RunAgentInput.resume) and returns
// a run whose response streams the parked run's log from there on: the run resumes on
// whichever instance claims it, under its own run id and log. Every entry is checked
// before anything is decided, and every error comes before any event.
//
// Since the response shows the parked run's events, a resume is a read of that run as
// well as a decision: the interrupts must be those of a run of the flow called, and the
// caller must be allowed to follow the run (the follow route's rules: its tenant, its
// starter or an operator, the flow's gates). Any other caller gets the same 404 as for an
// unknown interrupt. Who may approve a call but not read the run decides through the
// approval routes (or [Approve] and [Deny]), which show no events.
//
// The checks, the tools' gates among them, all pass before the first decision is
// stored, but the decisions are not one transaction: a concurrent resume, or an approval
// route racing this one, can still decide an interrupt of the set first, and then this
// resume fails with Conflict after storing the decisions before it.
//
// Without streaming the run returns when the resumed run ends: with its [RunResult]
// when it finishes, or, when it parks again, with [AgentRun.Interrupts] set and the
// response the parked reply (202, meta parked and runId) of a run that parks. Run returns
// no error then: this flow's own run is over, and the parked run waits under its own id.
func resume(fx *engine.Fx, agent *AgentDef, entries []ResumeEntry, opts RunOptions) (*AgentRun, error) {
	p, err := durable.Step(fx, "agent-resume:"+agent.name, func(ctx context.Context) (resumePoint, error) {
		return decideResume(ctx, fx.App(), fx.Principal(), fx.Flow().ID(), entries)
	})
	if err != nil {
		return nil, err
	}
	return &AgentRun{fx: fx, agent: agent, opts: opts, id: p.Stream, follow: &p}, nil
}

// decidedEntry is one checked resume entry, ready to be stored.
type decidedEntry struct {
	id      string
	kind    journal.DecisionKind
	payload decisionPayload
}

// decideResume checks every entry as the approval routes check one decision, and the
// caller's right to read the run as the follow route does, then stores the decisions.
// It returns the parked run's log and its last seq before them.
func decideResume(ctx context.Context, app *engine.App, p *engine.Principal, flow string, entries []ResumeEntry) (resumePoint, error) {
	j := durable.JournalOf(app)
	if j == nil {
		return resumePoint{}, engine.NotFound("no approval is waiting under this id")
	}
	var runID string
	seen := map[string]bool{}
	decided := make([]decidedEntry, 0, len(entries))
	for i, e := range entries {
		path := fmt.Sprintf("resume[%d]", i)
		var kind journal.DecisionKind
		switch e.Status {
		case ResumeResolved:
			kind = journal.DecisionApprove
		case ResumeCancelled:
			kind = journal.DecisionDeny
		default:
			return resumePoint{}, invalid(fmt.Errorf("ai: status must be resolved or cancelled, got %q", e.Status), path+".status")
		}
		var dp ResumePayload
		if len(e.Payload) > 0 && string(e.Payload) != "null" {
			if err := json.Unmarshal(e.Payload, &dp); err != nil {
				return resumePoint{}, invalid(errors.New("ai: payload must be an object {args} or {reason}"), path+".payload")
			}
		}
		if kind == journal.DecisionApprove && len(dp.Args) > 0 && !isJSONObject(string(dp.Args)) {
			return resumePoint{}, invalid(errors.New("ai: args must be an object"), path+".payload.args")
		}
		if seen[e.InterruptID] {
			return resumePoint{}, invalid(errors.New("ai: the interrupt is answered twice"), path+".interruptId")
		}
		seen[e.InterruptID] = true
		run, _, err := agui.ParseInterruptID(e.InterruptID)
		if err != nil {
			return resumePoint{}, engine.NotFound("no approval is waiting under this id")
		}
		if runID != "" && run != runID {
			return resumePoint{}, invalid(errors.New("ai: resume answers the interrupts of one run at a time"), path+".interruptId")
		}
		runID = run
		d := decidedEntry{id: e.InterruptID, kind: kind}
		if kind == journal.DecisionApprove {
			d.payload.Args = dp.Args
		} else {
			d.payload.Reason = dp.Reason
		}
		decided = append(decided, d)
	}
	parks, err := pendingParks(ctx, app, p, runID)
	if err != nil {
		return resumePoint{}, err
	}
	now := j.Now()
	var stream string
	readable := map[string]bool{}
	for i, d := range decided {
		park, ok := parks[d.id]
		if !ok {
			return resumePoint{}, engine.NotFound("no approval is waiting under this id")
		}
		if !readable[park.payload.StreamID] {
			if err := mayRelay(ctx, app, p, flow, park.payload.StreamID); err != nil {
				return resumePoint{}, err
			}
			readable[park.payload.StreamID] = true
		}
		expired := durable.Lapsed(park.record, now)
		if expired {
			// The timeout is the decision: it is stored as the approval routes store it.
			_ = durable.TimeOut(ctx, app, runID, park.record.Key)
		}
		if expired || park.record.Decision != nil && park.record.Decision.Kind == journal.DecisionTimeout {
			return resumePoint{}, engine.Conflict("interrupt %s expired at %s; the call was denied with reason timeout",
				d.id, park.record.Deadline.UTC().Format(time.RFC3339Nano))
		}
		if park.record.Decision != nil {
			return resumePoint{}, engine.Conflict("interrupt %s is already decided", d.id)
		}
		if len(d.payload.Args) > 0 {
			if err := checkToolInput(app, park.payload.Tool, d.payload.Args, fmt.Sprintf("resume[%d].payload.args", i)); err != nil {
				return resumePoint{}, err
			}
		}
		// Before anything is stored, so that a denial leaves every interrupt undecided.
		if err := toolGates(ctx, app, p, park.payload, d.payload); err != nil {
			return resumePoint{}, err
		}
		stream = park.payload.StreamID
	}
	// An unanswered park past its deadline is decided already: it timed out, whether or
	// not the recovery loop has swept it yet.
	var missing, timedOut []string
	for id, park := range parks {
		switch {
		case seen[id] || park.record.Decision != nil:
		case durable.Lapsed(park.record, now):
			timedOut = append(timedOut, park.record.Key)
		default:
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return resumePoint{}, invalid(fmt.Errorf("ai: resume must answer every interrupt of the run; not answered: %s", strings.Join(missing, ", ")), "resume")
	}
	after, err := j.LastSeq(ctx, stream)
	if err != nil {
		return resumePoint{}, fmt.Errorf("ai: reading run %s: %w", stream, err)
	}
	// The timeouts first, so that the run wakes when the last answer is stored.
	for _, key := range timedOut {
		if err := durable.TimeOut(ctx, app, runID, key); err != nil {
			return resumePoint{}, err
		}
	}
	// Stored as checked: the gates ran above, once, as they run once for an approval route.
	for _, d := range decided {
		payload, _ := json.Marshal(d.payload)
		err := durable.Decide(ctx, app, p, runID, parks[d.id].record.Key, journal.Decision{Kind: d.kind, Payload: payload},
			durable.DecideOptions{NotFound: noApproval})
		if err != nil {
			return resumePoint{}, err
		}
	}
	return resumePoint{Stream: stream, After: after}, nil
}

// mayRelay checks that the caller may see the events of the agent run logged under
// stream, which a resume's response relays: it must be a run of flow, the flow called,
// and the caller must pass the follow route's access rules ([mayFollow]). Every refusal
// is the 404 of an unknown interrupt, so a resume tells no more than a follow does.
func mayRelay(ctx context.Context, app *engine.App, p *engine.Principal, flow, stream string) error {
	unknown := engine.NotFound("no approval is waiting under this id")
	st, err := durable.JournalOf(app).GetStream(ctx, stream)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		return fmt.Errorf("ai: reading run %s: %w", stream, err)
	}
	found := err == nil
	if found && st.Flow != flow {
		return unknown
	}
	err = mayFollow(ctx, app, p, st, found, unknown)
	if e := engine.AsError(err); e != nil && e.HTTPStatus() < http.StatusInternalServerError {
		return unknown
	}
	return err
}

// park is one park of an agent run, with what it is about.
type park struct {
	record  journal.ParkRecord
	payload parkPayload
}

// pendingParks returns the approval parks of a durable run by interrupt id, if the run
// is the caller's tenant's ([durable.Parks]): another tenant's run is NotFound, as an
// unknown one.
func pendingParks(ctx context.Context, app *engine.App, p *engine.Principal, runID string) (map[string]park, error) {
	records, err := durable.Parks(ctx, app, p, runID, noApproval)
	if err != nil {
		return nil, err
	}
	out := map[string]park{}
	for _, rec := range records {
		var pp parkPayload
		if json.Unmarshal(rec.Payload, &pp) != nil || pp.StreamID == "" {
			continue // not an agent approval
		}
		id, err := agui.NewInterruptID(runID, rec.Key)
		if err != nil {
			continue
		}
		out[id] = park{record: rec, payload: pp}
	}
	return out, nil
}

// checkToolInput validates args against the input schema of the tool flow.
func checkToolInput(app *engine.App, tool string, args json.RawMessage, path string) error {
	def, ok := app.Lookup(tool)
	if !ok || def.InputSchema() == nil {
		return nil
	}
	resolved, err := def.InputSchema().Resolve(nil)
	if err != nil {
		return fmt.Errorf("ai: input schema of tool %s: %w", tool, err)
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return invalid(err, path)
	}
	if err := resolved.Validate(v); err != nil {
		return invalid(fmt.Errorf("ai: args do not fit the input of tool %s: %w", tool, err), path)
	}
	return nil
}

// relay streams the parked run's log after the resume point until the resumed run ends
// (RUN_FINISHED, parked again or done, or RUN_ERROR), with the same seq ids a follower
// sees. Without sse it reads the log from its start, to learn the text of the run's
// result (which may come from a turn before the park) and how the run ended.
func (r *AgentRun) relay(ctx context.Context, sse wire) {
	j := durable.JournalOf(r.fx.App())
	cfg := configOf(r.fx.App())
	after := r.follow.After
	var text resultText
	collect := sse == nil || !r.live // nobody sees the events: the result's text is read from the log
	if collect {
		after = 0
	}
	wake, unsubscribe := j.Subscribe(r.follow.Stream)
	defer unsubscribe()
	poll := time.NewTimer(cfg.FollowPoll)
	defer poll.Stop()
	for {
		st, rows, err := j.ReadStream(ctx, r.follow.Stream, after, followBatch)
		if err != nil {
			r.err = err
			return
		}
		for _, row := range rows {
			if !collect {
				if err := sse.stored(row.Seq, row.Event); err != nil {
					r.err = err
					return
				}
			} else {
				text.add(row.Event)
			}
			after = row.Seq
			if row.Seq > r.follow.After && endsRun(row.Event) {
				r.relayed(row.Event, text.String())
				return
			}
		}
		if len(rows) == followBatch {
			continue
		}
		if st.FinishedAt != nil {
			r.finished = true
			return
		}
		poll.Reset(cfg.FollowPoll)
		select {
		case <-ctx.Done():
			r.err = ctx.Err()
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// relayed records how the relayed run ended, from its last event; text is the text of
// its result.
func (r *AgentRun) relayed(ev json.RawMessage, text string) {
	var end struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    string          `json:"code"`
		Result  *agui.RunResult `json:"result"`
		Usage   []agui.Usage    `json:"usage"`
		Outcome *agui.Outcome   `json:"outcome"`
	}
	if err := json.Unmarshal(ev, &end); err != nil {
		r.err = err
		return
	}
	switch {
	case end.Type == string(agui.TypeRunError):
		r.err = &RunError{Code: end.Code, Message: end.Message}
	case end.Outcome != nil && end.Outcome.Type == agui.OutcomeInterrupt:
		r.interrupts = end.Outcome.Interrupts
		r.finished = true // this response is done; the run waits for the next resume
	default:
		r.finished = true
		if end.Result != nil {
			r.result = RunResult{Text: text, Output: end.Result.Output, Cost: end.Result.Cost, StopReason: string(end.Result.StopReason)}
			if len(end.Usage) == 1 {
				r.result.Usage = &end.Usage[0]
			}
		}
	}
}

// resultText follows a run's log to the text of its result as the loop keeps it: the
// text of the last model turn that had any. A turn is a step (STEP_STARTED reopens the
// step a run parked in, with the same name); its text is every text message it streamed,
// and a message streamed again (the turn re-run after its worker was lost) counts once.
type resultText struct {
	step  string
	ids   []string                    // the step's text messages, in order
	texts map[string]*strings.Builder // their text
	last  string                      // the text of the last step before it that had any
}

func (t *resultText) add(ev json.RawMessage) {
	var e struct {
		Type      agui.Type `json:"type"`
		StepName  string    `json:"stepName"`
		MessageID string    `json:"messageId"`
		Delta     string    `json:"delta"`
	}
	if json.Unmarshal(ev, &e) != nil {
		return
	}
	switch e.Type {
	case agui.TypeStepStarted:
		if e.StepName != t.step {
			if s := t.stepText(); s != "" {
				t.last = s
			}
			t.step, t.ids, t.texts = e.StepName, t.ids[:0], nil
		}
	case agui.TypeTextMessageStart:
		if t.texts == nil {
			t.texts = map[string]*strings.Builder{}
		}
		if _, ok := t.texts[e.MessageID]; !ok {
			t.ids = append(t.ids, e.MessageID)
		}
		t.texts[e.MessageID] = &strings.Builder{}
	case agui.TypeTextMessageContent:
		if b, ok := t.texts[e.MessageID]; ok {
			b.WriteString(e.Delta)
		}
	}
}

// stepText returns the text the current step streamed.
func (t *resultText) stepText() string {
	var b strings.Builder
	for _, id := range t.ids {
		b.WriteString(t.texts[id].String())
	}
	return b.String()
}

// String returns the text of the last turn that had any.
func (t *resultText) String() string {
	if s := t.stepText(); s != "" {
		return s
	}
	return t.last
}
