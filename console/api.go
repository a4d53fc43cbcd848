package console

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
)

// The operator API. Every handler runs behind [console.op]: the caller is an operator.

func (c *console) me(fx *engine.Fx, _ *http.Request) (any, error) {
	p := fx.Principal()
	return map[string]any{"email": p.Email, "tenant": p.Tenant, "operator": p.Operator,
		"signIn": c.opts.SignIn, "journal": durable.JournalOf(fx.App()) != nil}, nil
}

func (c *console) flows(fx *engine.Fx, _ *http.Request) (any, error) {
	return fx.App().Descriptor(), nil
}

// journalOf is the app's journal, or an error an operator can read.
func journalOf(fx *engine.Fx) (*journal.Journal, error) {
	j := durable.JournalOf(fx.App())
	if j == nil {
		return nil, engine.NotFound("the app has no journal (durable.With)")
	}
	return j, nil
}

// cursor is the wire form of a [journal.Cursor]: opaque to the page.
type cursor struct {
	T   int64  `json:"t"`
	ID  string `json:"i"`
	Key string `json:"k,omitempty"`
}

func encodeCursor(c journal.Cursor) string {
	b, _ := json.Marshal(cursor{T: c.CreatedAt.UnixNano(), ID: c.ID, Key: c.Key})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (journal.Cursor, error) {
	if s == "" {
		return journal.Cursor{}, nil
	}
	bad := engine.Invalid(engine.ValidationIssue{Path: "cursor", Message: "not a cursor of this listing"})
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return journal.Cursor{}, bad
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" || c.T <= 0 {
		return journal.Cursor{}, bad
	}
	return journal.Cursor{CreatedAt: time.Unix(0, c.T).UTC(), ID: c.ID, Key: c.Key}, nil
}

// limit reads the limit parameter: 1..200, default 50.
func limit(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 200 {
		return 0, engine.Invalid(engine.ValidationIssue{Path: "limit", Message: "must be a whole number from 1 to 200"})
	}
	return n, nil
}

// runView is a run as the console lists it.
type runView struct {
	ID        string    `json:"id"`
	Flow      string    `json:"flow"`
	Status    string    `json:"status"`
	Tenant    string    `json:"tenant"`
	Principal string    `json:"principal"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// DurationMs is the time from start to end, or to now while the run is not final.
	DurationMs int64  `json:"durationMs"`
	Error      string `json:"error,omitempty"`
}

func viewRun(r journal.RunRecord, now time.Time) runView {
	var p engine.Principal
	_ = json.Unmarshal(r.Principal, &p) // a run without a principal shows none
	who := p.Email
	if who == "" {
		who = p.ID
	}
	end := now
	if r.Status.Final() || !moving(r.Status) {
		end = r.UpdatedAt
	}
	return runView{ID: r.ID, Flow: r.Flow, Status: string(r.Status), Tenant: r.Tenant, Principal: who,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, DurationMs: end.Sub(r.CreatedAt).Milliseconds(), Error: r.Error}
}

// moving reports whether a run in status s may still move (running or parked).
func moving(s journal.Status) bool {
	return s == journal.StatusRunning || s == journal.StatusParked
}

func (c *console) runs(fx *engine.Fx, r *http.Request) (any, error) {
	j, err := journalOf(fx)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	n, err := limit(r)
	if err != nil {
		return nil, err
	}
	after, err := decodeCursor(q.Get("cursor"))
	if err != nil {
		return nil, err
	}
	recs, err := j.Driver().ListRuns(fx.Context(), journal.RunQuery{Status: journal.Status(q.Get("status")),
		Flow: q.Get("flow"), Tenant: q.Get("tenant"), After: after, Limit: n})
	if err != nil {
		return nil, err
	}
	now := j.Now()
	out := struct {
		Runs       []runView `json:"runs"`
		NextCursor string    `json:"nextCursor,omitempty"`
	}{Runs: []runView{}}
	for _, rec := range recs {
		out.Runs = append(out.Runs, viewRun(rec, now))
	}
	if len(recs) == n {
		last := recs[len(recs)-1]
		out.NextCursor = encodeCursor(journal.Cursor{CreatedAt: last.CreatedAt, ID: last.ID})
	}
	return out, nil
}

// parkView is a park as the console shows it.
type parkView struct {
	RunID     string            `json:"runId"`
	Key       string            `json:"key"`
	Deadline  time.Time         `json:"deadline"`
	Payload   json.RawMessage   `json:"payload,omitempty"`
	Topic     string            `json:"topic,omitempty"`
	Decision  *journal.Decision `json:"decision,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
}

func viewPark(p journal.ParkRecord) parkView {
	return parkView{RunID: p.RunID, Key: p.Key, Deadline: p.Deadline, Payload: p.Payload, Topic: p.Topic,
		Decision: p.Decision, CreatedAt: p.CreatedAt}
}

func (c *console) run(fx *engine.Fx, r *http.Request) (any, error) {
	j, err := journalOf(fx)
	if err != nil {
		return nil, err
	}
	ctx, id := fx.Context(), r.PathValue("runId")
	rec, parks, err := j.GetRunParks(ctx, id)
	if err != nil {
		return nil, durable.MapError(err)
	}
	d := j.Driver()
	steps, err := d.LoadSteps(ctx, id)
	if err != nil {
		return nil, err
	}
	streams, err := d.RunStreams(ctx, id)
	if err != nil {
		return nil, err
	}
	type stepView struct {
		Position  int             `json:"position"`
		Name      string          `json:"name"`
		Result    json.RawMessage `json:"result,omitempty"`
		Error     string          `json:"error,omitempty"`
		CreatedAt time.Time       `json:"createdAt"`
	}
	type streamView struct {
		ID         string     `json:"id"`
		Flow       string     `json:"flow"`
		CreatedAt  time.Time  `json:"createdAt"`
		FinishedAt *time.Time `json:"finishedAt,omitempty"`
	}
	out := struct {
		Run          runView         `json:"run"`
		Input        json.RawMessage `json:"input,omitempty"`
		Output       json.RawMessage `json:"output,omitempty"`
		LeaseOwner   string          `json:"leaseOwner,omitempty"`
		LeaseExpires *time.Time      `json:"leaseExpires,omitempty"`
		Epoch        int64           `json:"epoch"`
		Steps        []stepView      `json:"steps"`
		Parks        []parkView      `json:"parks"`
		Streams      []streamView    `json:"streams"`
		TraceURL     string          `json:"traceUrl,omitempty"`
	}{Run: viewRun(rec, j.Now()), Input: rec.Input, Output: rec.Output, LeaseOwner: rec.LeaseOwner, Epoch: rec.Epoch,
		Steps: []stepView{}, Parks: []parkView{}, Streams: []streamView{}}
	if rec.LeaseOwner != "" {
		out.LeaseExpires = &rec.LeaseExpires
	}
	if c.opts.TraceURL != "" {
		out.TraceURL = strings.ReplaceAll(c.opts.TraceURL, "{runId}", id)
	}
	for _, s := range steps {
		out.Steps = append(out.Steps, stepView{Position: s.Position, Name: s.Name, Result: s.Result, Error: s.Error, CreatedAt: s.CreatedAt})
	}
	for _, p := range parks {
		out.Parks = append(out.Parks, viewPark(p))
	}
	for _, s := range streams {
		out.Streams = append(out.Streams, streamView{ID: s.ID, Flow: s.Flow, CreatedAt: s.CreatedAt, FinishedAt: s.FinishedAt})
	}
	return out, nil
}

// events returns the rows of a stream after the seq ?after (up to 500), and whether the
// stream is finished and nothing follows them.
func (c *console) events(fx *engine.Fx, r *http.Request) (any, error) {
	j, err := journalOf(fx)
	if err != nil {
		return nil, err
	}
	after := int64(0)
	if s := r.URL.Query().Get("after"); s != "" {
		if after, err = strconv.ParseInt(s, 10, 64); err != nil || after < 0 {
			return nil, engine.Invalid(engine.ValidationIssue{Path: "after", Message: "must be a seq (a whole number >= 0)"})
		}
	}
	const max = 500
	st, rows, err := j.ReadStream(fx.Context(), r.PathValue("streamId"), after, max)
	if err != nil {
		return nil, durable.MapError(err)
	}
	if rows == nil {
		rows = []journal.EventRow{}
	}
	return map[string]any{"rows": rows, "finished": st.FinishedAt != nil && len(rows) < max}, nil
}

// approvalView is a pending approval: the park, its run's flow, and for an agent's tool
// call (a park whose payload names a tool) the tool, its arguments and input schema.
type approvalView struct {
	parkView
	Flow   string          `json:"flow"`
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Schema any             `json:"schema,omitempty"`
}

// toolCall is what an agent's approval park carries (package ai).
type toolCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

func (c *console) approvals(fx *engine.Fx, r *http.Request) (any, error) {
	j, err := journalOf(fx)
	if err != nil {
		return nil, err
	}
	n, err := limit(r)
	if err != nil {
		return nil, err
	}
	after, err := decodeCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		return nil, err
	}
	ctx := fx.Context()
	parks, err := j.Driver().PendingParks(ctx, journal.ParkQuery{Tenant: fx.Principal().Tenant, After: after, Limit: n})
	if err != nil {
		return nil, err
	}
	schemas := inputSchemas(fx.App())
	out := struct {
		Approvals  []approvalView `json:"approvals"`
		NextCursor string         `json:"nextCursor,omitempty"`
	}{Approvals: []approvalView{}}
	for _, p := range parks {
		v := approvalView{parkView: viewPark(p)}
		if rec, err := j.GetRun(ctx, p.RunID); err == nil {
			v.Flow = rec.Flow
		}
		var tc toolCall
		if json.Unmarshal(p.Payload, &tc) == nil && tc.Tool != "" {
			v.Tool, v.Args, v.Schema = tc.Tool, tc.Args, schemas[tc.Tool]
		}
		out.Approvals = append(out.Approvals, v)
	}
	if len(parks) == n {
		last := parks[len(parks)-1]
		out.NextCursor = encodeCursor(journal.Cursor{CreatedAt: last.CreatedAt, ID: last.RunID, Key: last.Key})
	}
	return out, nil
}

// inputSchemas maps flow ids to their input schemas, from the descriptor.
func inputSchemas(app *engine.App) map[string]any {
	out := map[string]any{}
	for _, u := range app.Descriptor().Units {
		for _, f := range u.Flows {
			out[f.ID] = f.Input
		}
	}
	return out
}

// DecideIn is the body of POST <path>/api/approvals/decide.
type DecideIn struct {
	RunID string `json:"runId"`
	Key   string `json:"key"`
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	// Args, on an approval of a tool call, replace the arguments the model chose; they
	// are checked against the tool's input schema first.
	Args json.RawMessage `json:"args,omitempty"`
	// Reason, on a denial, is what the model (or the handler) is told.
	Reason string `json:"reason,omitempty"`
}

// decide stores an operator's decision through [durable.Decide]. The payload is
// {args, reason}, the shape package ai reads for its tool calls.
func (c *console) decide(fx *engine.Fx, r *http.Request) (any, error) {
	var in DecideIn
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err := dec.Decode(&in); err != nil {
		return nil, engine.Invalid(engine.ValidationIssue{Message: "the body must be a JSON object: " + err.Error()})
	}
	var kind journal.DecisionKind
	switch in.Decision {
	case "approve":
		kind = journal.DecisionApprove
	case "deny":
		kind = journal.DecisionDeny
	default:
		return nil, engine.Invalid(engine.ValidationIssue{Path: "decision", Message: "must be approve or deny"})
	}
	if in.RunID == "" || in.Key == "" {
		return nil, engine.Invalid(engine.ValidationIssue{Message: "runId and key are required"})
	}
	if len(in.Args) > 0 && (kind != journal.DecisionApprove || !json.Valid(in.Args)) {
		return nil, engine.Invalid(engine.ValidationIssue{Path: "args", Message: "only an approval takes args, as JSON"})
	}
	if _, err := journalOf(fx); err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(struct {
		Args   json.RawMessage `json:"args,omitempty"`
		Reason string          `json:"reason,omitempty"`
	}{in.Args, in.Reason})
	app := fx.App()
	err := durable.Decide(fx.Context(), app, fx.Principal(), in.RunID, in.Key, journal.Decision{Kind: kind, Payload: payload},
		durable.DecideOptions{NotFound: "no approval is waiting under this run and key", Check: func(p journal.ParkRecord) error {
			var tc toolCall
			if len(in.Args) == 0 || json.Unmarshal(p.Payload, &tc) != nil || tc.Tool == "" {
				return nil
			}
			_, err := app.DecodeInput(tc.Tool, in.Args) // the tool's schema, as the model's arguments are checked
			return err
		}})
	if err != nil {
		return nil, err
	}
	return map[string]bool{"ok": true}, nil
}

func (c *console) health(fx *engine.Fx, _ *http.Request) (any, error) {
	type scheduled struct {
		Flow     string     `json:"flow"`
		Schedule string     `json:"schedule"`
		NextTick *time.Time `json:"nextTick,omitempty"`
	}
	type lease struct {
		Name    string    `json:"name"`
		Owner   string    `json:"owner"`
		Expires time.Time `json:"expires"`
	}
	type instance struct {
		Owner   string    `json:"owner"`
		Runs    int       `json:"runs"`
		Expires time.Time `json:"expires"`
	}
	type retention struct {
		FinishedStreamsMs   int64 `json:"finishedStreamsMs"`
		UnfinishedStreamsMs int64 `json:"unfinishedStreamsMs"`
		ChannelMessagesMs   int64 `json:"channelMessagesMs"`
	}
	out := struct {
		Journal     bool        `json:"journal"`
		Owner       string      `json:"owner,omitempty"`
		Caps        []string    `json:"capabilities"`
		Retention   *retention  `json:"retention,omitempty"`
		Leases      []lease     `json:"leases"`
		Instances   []instance  `json:"instances"`
		Recoverable []string    `json:"recoverable"`
		Scheduled   []scheduled `json:"scheduled"`
		Now         time.Time   `json:"now"`
	}{Caps: []string{}, Leases: []lease{}, Instances: []instance{}, Recoverable: []string{}, Scheduled: []scheduled{}}
	j := durable.JournalOf(fx.App())
	now := time.Now()
	if j != nil {
		now = j.Now()
	}
	out.Now = now
	for _, s := range fx.App().Descriptor().Server {
		spec, _ := s.Tags["schedule"].(string)
		if spec == "" {
			continue
		}
		sc := scheduled{Flow: s.ID, Schedule: spec}
		if next, ok := nextTick(spec, now); ok {
			sc.NextTick = &next
		}
		out.Scheduled = append(out.Scheduled, sc)
	}
	if j == nil {
		return out, nil
	}
	ctx := fx.Context()
	out.Journal, out.Owner = true, j.Owner()
	ret := j.Retention()
	out.Retention = &retention{ret.FinishedStreams.Milliseconds(), ret.UnfinishedStreams.Milliseconds(), ret.ChannelMessages.Milliseconds()}
	caps := j.Driver().Capabilities()
	for _, c := range []struct {
		c    journal.Capability
		name string
	}{{journal.CapDurable, "durable"}, {journal.CapMultiProcess, "multi-process"},
		{journal.CapCrossProcessWakeups, "cross-process wake-ups"}, {journal.CapBlockingIO, "blocking I/O"}} {
		if caps.Has(c.c) {
			out.Caps = append(out.Caps, c.name)
		}
	}
	leases, owners, err := j.Driver().HeldLeases(ctx, now)
	if err != nil {
		return nil, err
	}
	for _, l := range leases {
		out.Leases = append(out.Leases, lease{Name: l.Name, Owner: l.Owner, Expires: l.Expires})
	}
	for _, o := range owners {
		out.Instances = append(out.Instances, instance{Owner: o.Owner, Runs: o.Runs, Expires: o.Expires})
	}
	rec, err := j.Driver().RecoverableRuns(ctx, now, 100)
	if err != nil {
		return nil, err
	}
	out.Recoverable = append(out.Recoverable, rec...)
	return out, nil
}

// nextTick reads a schedule as durable.Clock tags it ("@every 1m", or a cron expression
// followed by its time zone) and returns its next tick after now.
func nextTick(spec string, now time.Time) (time.Time, bool) {
	var s durable.Schedule
	var err error
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		every, perr := time.ParseDuration(d)
		if perr != nil {
			return time.Time{}, false
		}
		s, err = durable.Every(every)
	} else {
		i := strings.LastIndexByte(spec, ' ')
		if i < 0 {
			return time.Time{}, false
		}
		loc, lerr := time.LoadLocation(spec[i+1:])
		if lerr != nil {
			return time.Time{}, false
		}
		s, err = durable.Cron(spec[:i], loc)
	}
	if err != nil {
		return time.Time{}, false
	}
	return durable.NextTick(s, now), true
}
