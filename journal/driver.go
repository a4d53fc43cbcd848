package journal

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// Capability is a bitmask of what a [Driver] can do. Callers (and the conformance suite)
// ask about capabilities instead of switching on driver names.
type Capability uint32

const (
	// CapMultiProcess means several processes may share the driver's storage: leases and
	// fencing hold across processes, not only across goroutines.
	CapMultiProcess Capability = 1 << iota
	// CapCrossProcessWakeups means [Driver.Subscribe] is woken by appends made in other
	// processes (Postgres LISTEN/NOTIFY), not only by appends made through this driver.
	CapCrossProcessWakeups
	// CapDurable means data survives a restart of the process.
	CapDurable
	// CapBlockingIO means calls block on I/O through deep call stacks (database/sql):
	// the journal runs them on a few worker goroutines (or, when all are busy, on a
	// goroutine of their own), so a long-lived caller (an agent stream idling between
	// tokens) does not keep a grown stack.
	CapBlockingIO
)

// Has reports whether all bits of want are set.
func (c Capability) Has(want Capability) bool { return c&want == want }

// Status is the state of a durable run.
type Status string

// Run statuses. Running and parked runs can be claimed; completed, failed and cancelled
// are final. A run is cancelled when it was stopped ([Driver.RequestStop]) and ended
// because of it.
const (
	StatusRunning   Status = "running"
	StatusParked    Status = "parked"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Final reports whether no further transition is possible.
func (s Status) Final() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// DecisionKind is the outcome stored for a park.
type DecisionKind string

// Decision kinds. Timeout is stored by the recovery loop when a park's deadline passed.
const (
	DecisionApprove DecisionKind = "approve"
	DecisionDeny    DecisionKind = "deny"
	DecisionTimeout DecisionKind = "timeout"
	// DecisionCancel is stored by [Driver.RequestStop] on every pending park of the run
	// it stops: the run resumes only to end, and a later decision is ErrConflict.
	DecisionCancel DecisionKind = "cancel"
)

// Decision is the single stored outcome of a park.
type Decision struct {
	Kind      DecisionKind    `json:"kind"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	DecidedAt time.Time       `json:"decidedAt"`
	// Trace is the trace context of the decision's maker (see [WithTracer]), "" for none.
	Trace string `json:"-"`
}

// Fence identifies the lease a write is made under. A fenced write succeeds only while the
// run's lease owner and epoch are still these; otherwise the driver returns [ErrLeaseLost].
type Fence struct {
	RunID string
	Owner string
	Epoch int64
}

// RunRecord is the stored form of a durable run.
type RunRecord struct {
	ID           string
	Flow         string
	Input        json.RawMessage
	Principal    json.RawMessage
	Tenant       string
	Status       Status
	Output       json.RawMessage
	Error        string
	LeaseOwner   string // empty when released
	LeaseExpires time.Time
	Epoch        int64 // fencing token, incremented on every claim
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// StepRecord is one recorded step of a run, keyed by (RunID, Position).
type StepRecord struct {
	RunID     string
	Position  int
	Name      string
	Result    json.RawMessage
	Error     string // non-empty when the step's first execution failed
	CreatedAt time.Time
}

// ParkRecord is a run waiting for a decision under Key.
type ParkRecord struct {
	RunID     string
	Key       string
	Deadline  time.Time
	Payload   json.RawMessage
	Decision  *Decision // nil while pending
	CreatedAt time.Time
	// Topic, when set, makes the park a wait for a topic (a signal or a channel): the
	// driver stores the approve decision itself as soon as the topic's version is above
	// After, at [Driver.InsertPark] when it already is, otherwise in the write of
	// [Driver.SetSignal] or [Driver.Publish] that raises it.
	Topic string
	After int64
	// Trace is the trace context of the execution that parked (see [WithTracer]), "" for
	// none: with the decision's, what lets a tracer tie the resumed run to both requests.
	Trace string
}

// TopicValue is the stored state of a topic: its version (the count of values set on a
// signal, the last seq of a channel) and a signal's latest value.
type TopicValue struct {
	Topic     string
	Version   int64
	Value     json.RawMessage
	UpdatedAt time.Time
}

// Message is one stored message of a channel; Seq numbers a channel's messages from 1
// with no gap, in the order they were committed.
type Message struct {
	Seq       int64           `json:"seq"`
	Payload   json.RawMessage `json:"payload"`
	CreatedAt time.Time       `json:"createdAt"`
}

// RunUpdate is the terminal or parking write of a run; it always releases the lease.
type RunUpdate struct {
	Status Status
	Output json.RawMessage
	Error  string
}

// DecideResult tells the journal what a stored decision did to its run.
type DecideResult struct {
	// Runnable is true when the run is parked and none of its parks is still pending.
	Runnable bool
}

// Stream is the record of one agent event stream (the follow log). ID is the agent
// run/stream id; RunID is the durable run that owns it, empty for non-durable flows.
type Stream struct {
	ID          string
	RunID       string
	Flow        string
	PrincipalID string
	Tenant      string
	CreatedAt   time.Time
	FinishedAt  *time.Time
	// Reserved is the highest seq a writer of the stream may have handed out (and a live
	// client may have been sent as an SSE id) without storing its row yet. A new writer
	// continues after the larger of it and the last stored seq, so a seq once sent never
	// names another event. At or below the last stored seq it reserves nothing.
	Reserved int64
	// ThreadID, on a stream being created, records the stream as the next run of that
	// conversation thread in the same write ([Journal.AddThreadRun]; a driver wakes the
	// thread's subscribers at its commit). The thread's runs are the record of it
	// ([Journal.ThreadRuns]): a stream read back has no ThreadID.
	ThreadID string
}

// Append is one write of rows to a stream, and the reservation stored with them.
type Append struct {
	StreamID string
	// Rows continue the stream: the first seq is the last stored seq plus one, or, when
	// the stream's reservation is above its last seq, the reservation plus one (a writer
	// that takes over after one that died skips what that one may have handed out).
	// Rows are contiguous from there. ErrSeqExists when a seq is already stored,
	// ErrSeqGap when one is skipped otherwise.
	Rows []EventRow
	// Reserve replaces the stream's reservation ([Stream.Reserved]) in the same write.
	Reserve int64
}

// FencedAppend is one append of a batch ([Driver.AppendBatch]) and the fence it is made
// under: nil for a stream that belongs to no durable run. It may also create its stream
// or end it in the same write, so that a conversation's start and end join the commit
// the batch makes for every live stream's rows.
type FencedAppend struct {
	Fence *Fence
	Append
	// Open, when set, creates the stream first, as [Driver.CreateStream] does (Open.ID
	// is StreamID): ErrConflict, and nothing else of this append stored, when it exists.
	// An append with Open and nothing else to store (no rows, no Finish, Reserve equal to
	// Open.Reserved) is a creation alone, unfenced as CreateStream is.
	Open *Stream
	// Finish, when not zero, ends the stream after the rows, as [Driver.FinishStream]
	// does at that time, keeping the reservation (Reserve is then ignored). The journal
	// sends it only with rows, so the stream's last seq afterwards is the last row's.
	Finish time.Time
}

// StepWrites is what a step's write stores with the step, all or nothing.
type StepWrites struct {
	// Opens are streams the step begins (see [Run.CreateLogStep]).
	Opens []Stream
	// Appends are rows of the run's streams queued before the step ended, so a
	// recorded step never lacks the events it produced.
	Appends []Append
}

// EventRow is one stored event of a stream.
type EventRow struct {
	Seq   int64           `json:"seq"`
	Event json.RawMessage `json:"event"`
}

// Cursor is a position in a newest-first listing ([Driver.ListRuns], [Driver.PendingParks]):
// the creation time, run id and (for parks) key of the last record of the previous page.
// A listing continues strictly after it. The zero Cursor starts at the newest record.
type Cursor struct {
	CreatedAt time.Time
	ID        string
	Key       string
}

// IsZero reports whether c starts a listing.
func (c Cursor) IsZero() bool { return c.CreatedAt.IsZero() && c.ID == "" && c.Key == "" }

// RunQuery selects a page of runs for [Driver.ListRuns]. An empty field matches any run;
// Status may be any value a driver stores, not only the constants of this package.
type RunQuery struct {
	Status Status
	Flow   string
	Tenant string
	After  Cursor
	Limit  int
}

// ParkQuery selects a page of pending parks for [Driver.PendingParks]. An empty Tenant
// matches runs of every tenant.
type ParkQuery struct {
	Tenant string
	After  Cursor
	Limit  int
}

// LeaseRecord is a named lease ([Driver.ClaimLease]) held at the time of the query.
type LeaseRecord struct {
	Name    string
	Owner   string
	Expires time.Time
}

// OwnerRecord is an owner (an instance) holding run leases at the time of the query.
type OwnerRecord struct {
	Owner string
	// Runs is how many runs it holds; Expires the latest expiry among their leases.
	Runs    int
	Expires time.Time
}

// Driver is the storage a [Journal] runs on. It is deliberately narrow: every method is a
// single atomic operation whose decision (claim, fence, conflict) is taken inside the
// storage, so several journals sharing one database stay correct. Times are passed in by
// the journal (from [Options.Now]) so tests control the clock.
//
// The drivers in journal/drivers (memory, sqlite, postgres) are the supported ones.
// Outsiders may implement Driver, but must pass [journaltest.Run] and expect the interface
// to grow in minor releases; embed an existing driver to stay source compatible.
type Driver interface {
	// Capabilities declares what the driver supports.
	Capabilities() Capability
	// Migrate creates or upgrades the schema. Idempotent; safe to call on every start.
	Migrate(ctx context.Context) error

	// InsertRun stores a new run with the lease fields already set. ErrConflict if the id exists.
	InsertRun(ctx context.Context, rec RunRecord) error
	// GetRun loads a run. ErrNotFound if missing.
	GetRun(ctx context.Context, id string) (RunRecord, error)
	// ClaimRun atomically takes the lease of a running or parked run when it is released,
	// expired at now, or already held by owner: sets owner and expires, increments Epoch,
	// sets status running and returns the updated record. ErrNotFound if missing,
	// ErrRunFinished if final, *LeaseBusyError (RetryAfter = remaining time) otherwise.
	ClaimRun(ctx context.Context, id, owner string, now, expires time.Time) (RunRecord, error)
	// RenewLease extends a held lease. ErrLeaseLost when the fence no longer matches.
	RenewLease(ctx context.Context, f Fence, expires time.Time) error
	// ReleaseRun clears the lease owner without changing the status, so any instance may
	// claim the run at once. ErrLeaseLost when the fence no longer matches.
	ReleaseRun(ctx context.Context, f Fence) error
	// UpdateRun sets the status (parked, completed or failed), output and error, and
	// releases the lease, fenced. ErrLeaseLost when the fence no longer matches.
	UpdateRun(ctx context.Context, f Fence, u RunUpdate, now time.Time) error

	// LoadSteps returns the recorded steps of a run ordered by position.
	LoadSteps(ctx context.Context, runID string) ([]StepRecord, error)
	// InsertStep records a step, fenced, and in the same write creates the streams of
	// w.Opens and stores the rows of w.Appends as AppendEvents does (the appended streams
	// belong to the run). In order: ErrLeaseLost when the fence no longer matches,
	// ErrStepExists if the position is taken, ErrConflict if a stream id exists, the
	// errors of AppendEvents; on any error nothing is stored.
	InsertStep(ctx context.Context, f Fence, s StepRecord, w StepWrites) error

	// InsertPark records a park, fenced and idempotent: when (run, key) exists the stored
	// park (with its decision, if any) is returned unchanged. A park with a Topic whose
	// version is already above After is stored approved in the same write, with the
	// topic's value as the payload and p.CreatedAt as the time: a wait never misses a
	// value set before it, nor one set while it was being written.
	InsertPark(ctx context.Context, f Fence, p ParkRecord) (ParkRecord, error)
	// ListParks returns every park of a run ordered by key.
	ListParks(ctx context.Context, runID string) ([]ParkRecord, error)
	// Decide atomically stores the one decision of a park. In order: ErrNotFound for an
	// unknown run or park; ErrConflict when a decision is already stored; *LeaseBusyError
	// when another owner than owner holds an unexpired lease at now (nothing stored).
	Decide(ctx context.Context, runID, key, owner string, d Decision, now time.Time) (DecideResult, error)
	// ExpiredParks lists pending parks whose deadline is at or before now.
	ExpiredParks(ctx context.Context, now time.Time, limit int) ([]ParkRecord, error)
	// RecoverableRuns lists ids of runs that need an owner: parked with no pending park,
	// or running with a released or expired lease.
	RecoverableRuns(ctx context.Context, now time.Time, limit int) ([]string, error)

	// SetSignal stores value as the latest value of topic and raises its version by one,
	// and in the same write approves every pending park on topic (payload: value,
	// time: now) whose After is below the new version. With once, a topic that already
	// has a value is ErrConflict and nothing is stored. It returns the topic after the
	// write and the ids of the runs it made runnable (parked, no park still pending).
	// Subscribers of topic are woken after the commit.
	SetSignal(ctx context.Context, topic string, value json.RawMessage, once bool, now time.Time) (TopicValue, []string, error)
	// GetSignal loads a topic's latest value. ErrNotFound when none was ever set.
	GetSignal(ctx context.Context, topic string) (TopicValue, error)
	// Publish appends payload to the channel topic with the next seq (its version plus
	// one; concurrent publishes get consecutive seqs in commit order, so a reader never
	// sees a later seq before an earlier one) and in the same write approves every
	// pending park on topic (no payload, time: now) whose After is below the new seq. It
	// returns the seq and the ids of the runs it made runnable. Subscribers of topic are
	// woken after the commit.
	Publish(ctx context.Context, topic string, payload json.RawMessage, now time.Time) (int64, []string, error)
	// ReadMessages returns up to limit messages of topic with seq > after, ordered by seq.
	ReadMessages(ctx context.Context, topic string, after int64, limit int) ([]Message, error)
	// DeleteMessages deletes up to limit messages created before before (any channel) and
	// returns how many it deleted. A channel's seqs go on from its version, never reused.
	DeleteMessages(ctx context.Context, before time.Time, limit int) (int, error)

	// ClaimLease takes or renews the named lease (e.g. the scheduler lease) when it is
	// free, expired at now, or held by owner. Reports whether owner holds it afterwards.
	ClaimLease(ctx context.Context, name, owner string, now, expires time.Time) (bool, error)
	// ReleaseLease frees the named lease if owner holds it.
	ReleaseLease(ctx context.Context, name, owner string) error

	// CreateStream stores a stream record. ErrConflict if the id exists.
	CreateStream(ctx context.Context, s Stream) error
	// GetStream loads a stream. ErrNotFound if missing.
	GetStream(ctx context.Context, id string) (Stream, error)
	// FinishStream ends a stream in one atomic write: it stores rows as AppendEvents
	// does (none is fine; the reservation stays as it is, so a writer opened on the
	// finished stream still skips what another may have handed out), sets FinishedAt (first call wins), and returns the stream's
	// last stored seq afterwards. With rows, or with f set, the write is fenced as
	// AppendEvents is (a durable run's stream without its current lease: ErrLeaseLost,
	// nothing stored); with neither it is not (retention ends abandoned streams so).
	// ErrNotFound if missing. Subscribers are woken after the commit.
	FinishStream(ctx context.Context, id string, f *Fence, rows []EventRow, now time.Time) (last int64, err error)
	// AppendEvents stores a.Rows atomically (all or none) and sets the stream's
	// reservation to a.Reserve; no rows is fine. Seqs continue the stream as [Append]
	// says. When the stream belongs to a durable run, f must carry that run's current
	// lease (ErrLeaseLost otherwise). Subscribers are woken after the commit.
	AppendEvents(ctx context.Context, f *Fence, a Append) error
	// ReadEvents returns up to limit rows with seq > after, ordered by seq.
	ReadEvents(ctx context.Context, streamID string, after int64, limit int) ([]EventRow, error)
	// ReadStream loads a stream together with up to limit of its rows with seq > after,
	// ordered by seq, as one consistent read: when the stream it returns is finished and
	// fewer than limit rows came back, no row follows them. A follower needs nothing else
	// to catch up, so it costs one statement. ErrNotFound if the stream is missing.
	ReadStream(ctx context.Context, id string, after int64, limit int) (Stream, []EventRow, error)
	// LastSeq returns the highest stored seq, 0 when none.
	LastSeq(ctx context.Context, streamID string) (int64, error)
	// Subscribe returns a channel that receives (coalesced) wake-ups after rows of the
	// stream are committed, and a function that ends the subscription.
	Subscribe(streamID string) (<-chan struct{}, func())
	// DeleteFinishedStreams deletes streams (and their rows) finished before before.
	DeleteFinishedStreams(ctx context.Context, before time.Time, limit int) (int, error)
	// StaleStreams lists unfinished streams created before before.
	StaleStreams(ctx context.Context, before time.Time, limit int) ([]Stream, error)
	// CloseStream atomically appends event after the larger of the last stored seq and
	// the stream's reservation (unfenced: used by retention), marks the stream finished at
	// now and deletes its earlier rows.
	CloseStream(ctx context.Context, id string, event json.RawMessage, now time.Time) error

	// Methods added after the first release. A driver written before one of them can
	// embed an existing driver, or implement it with the helper named in its comment.

	// AppendBatch stores every append of batch as AppendEvents would, each fenced by its
	// own Fence, in as few commits as the storage allows (one transaction on the SQL
	// drivers), and returns one error per append, nil for a stored one. An append that
	// fails on its own (ErrLeaseLost, ErrSeqExists, ErrSeqGap, ErrNotFound) stores
	// nothing and keeps no other append from being stored; a failure of the write as a
	// whole (the database away) is every append's error. Appends of the same stream are
	// stored in batch order, as if one after the other. Subscribers are woken after the
	// commit. An append with Open or Finish creates or ends its stream in the same
	// write; subscribers of an ended stream, and of a created stream's thread, are woken
	// too. [AppendEach] implements it with the single-stream writes.
	AppendBatch(ctx context.Context, batch []FencedAppend) []error

	// Operator queries (the console): pages in a stable order whose cost does not grow with
	// the size of the journal (each is served by an index, with no sort of the table). A
	// Limit of 0 or less returns nothing.

	// ListRuns returns up to q.Limit runs matching q, newest first (CreatedAt, then ID,
	// both descending), strictly after q.After when it is set.
	ListRuns(ctx context.Context, q RunQuery) ([]RunRecord, error)
	// PendingParks returns up to q.Limit undecided parks waiting for a decision (no
	// Topic), of runs of q.Tenant when set, newest first (CreatedAt, RunID, Key, all
	// descending), strictly after q.After when it is set.
	PendingParks(ctx context.Context, q ParkQuery) ([]ParkRecord, error)
	// RunStreams returns the streams a durable run owns ([Stream.RunID]), oldest first.
	RunStreams(ctx context.Context, runID string) ([]Stream, error)
	// HeldLeases returns the named leases held at now (owner set, not expired), by name,
	// and the owners holding run leases at now, by owner.
	HeldLeases(ctx context.Context, now time.Time) ([]LeaseRecord, []OwnerRecord, error)

	// Run control: stopping a run from any instance. A driver implemented outside this
	// module gets these by embedding an existing driver.

	// RequestStop stores a stop request for the stream streamID (an agent run's event
	// log) at now, and in the same write decides every pending park of the stream's
	// durable run (if any) with DecisionCancel at now, so a decision that comes later is
	// ErrConflict. A second request keeps the first one's time. Subscribers of
	// [StopTopic](streamID) are woken after the commit (across processes where the
	// driver has CapCrossProcessWakeups). It reports the run runnable when it is parked
	// and none of its parks is still pending. ErrNotFound when no such stream;
	// ErrRunFinished when the stream is finished (nothing stored).
	RequestStop(ctx context.Context, streamID string, now time.Time) (DecideResult, error)
	// StopRequested returns when a stop of the stream was requested; the zero time when
	// none was.
	StopRequested(ctx context.Context, streamID string) (time.Time, error)
	// AddThreadRun records the stream streamID (an agent run's event log) as the next run
	// of the conversation threadID and returns its position: 1 for a thread's first run,
	// then one more than the last, with no gap. Recording a stream the thread already has
	// returns its position and stores nothing. Subscribers of [ThreadTopic](threadID) are
	// woken after the commit.
	AddThreadRun(ctx context.Context, threadID, streamID string, now time.Time) (int64, error)
	// ThreadRuns returns up to limit runs of the thread with a position above after, in
	// order; none for an unknown thread.
	ThreadRuns(ctx context.Context, threadID string, after int64, limit int) ([]ThreadRun, error)
}

// Optional driver methods. A driver may implement these to do in one round trip what
// the journal otherwise does with several calls of [Driver]'s methods; the journal uses
// them when the driver has them (the SQL drivers do), and each must answer exactly as the
// calls it replaces. On Postgres every statement outside a transaction is a transaction
// of its own, so each read these save is a transaction the database no longer runs. A
// driver that wraps another and must see every call (to trace or count them) embeds the
// [Driver] interface, which hides these methods, or implements them itself: a wrapper
// that embeds a driver's struct would let them bypass it.

// ClaimedRun is a run a claim took, with what its execution replays.
type ClaimedRun struct {
	Run   RunRecord
	Steps []StepRecord
	Parks []ParkRecord
}

// RunClaimLoader claims a run and reads what its execution replays in the same write.
type RunClaimLoader interface {
	// ClaimRunLoaded is [Driver.ClaimRun] followed, in the claim's own write, by
	// [Driver.LoadSteps] and [Driver.ListParks] of the run: with any error nothing is
	// stored, and the run's lease is as it was.
	ClaimRunLoaded(ctx context.Context, id, owner string, now, expires time.Time) (ClaimedRun, error)
}

// RunSuspender parks a run and reads whether it is runnable in the same write.
type RunSuspender interface {
	// SuspendRun is [Driver.UpdateRun] with status parked, and reports whether, after
	// it, none of the run's parks is still pending, read in the same write: a decision
	// stored before the update took the run's row is counted, and one stored after it
	// sees the run parked (see [Driver.Decide]), so no decision is left unanswered.
	SuspendRun(ctx context.Context, f Fence, now time.Time) (runnable bool, err error)
}

// StreamEndReader reads a stream with its last stored row.
type StreamEndReader interface {
	// ReadStreamEnd is [Driver.GetStream] and the stream's last stored row (none when it
	// has no rows) as one consistent read. ErrNotFound if the stream is missing.
	ReadStreamEnd(ctx context.Context, id string) (Stream, []EventRow, error)
}

// claimRunLoaded claims a run for owner and loads its steps and parks: in one write when
// d is a [RunClaimLoader], else with three calls, releasing the claim when a read fails.
func claimRunLoaded(ctx context.Context, d Driver, id, owner string, now, expires time.Time) (ClaimedRun, error) {
	if l, ok := d.(RunClaimLoader); ok {
		return l.ClaimRunLoaded(ctx, id, owner, now, expires)
	}
	rec, err := d.ClaimRun(ctx, id, owner, now, expires)
	if err != nil {
		return ClaimedRun{}, err
	}
	c := ClaimedRun{Run: rec}
	if c.Steps, err = d.LoadSteps(ctx, id); err == nil {
		if c.Parks, err = d.ListParks(ctx, id); err == nil {
			return c, nil
		}
	}
	_ = d.ReleaseRun(context.WithoutCancel(ctx), Fence{RunID: rec.ID, Owner: owner, Epoch: rec.Epoch})
	return ClaimedRun{}, err
}

// suspendRun parks a run and reports whether it is runnable: in one write when d is a
// [RunSuspender], else with [Driver.UpdateRun] and [Driver.ListParks] (parks it could not
// read count as pending: the recovery loop finds a runnable parked run).
func suspendRun(ctx context.Context, d Driver, f Fence, now time.Time) (runnable bool, err error) {
	if s, ok := d.(RunSuspender); ok {
		return s.SuspendRun(ctx, f, now)
	}
	if err := d.UpdateRun(ctx, f, RunUpdate{Status: StatusParked}, now); err != nil {
		return false, err
	}
	parks, err := d.ListParks(ctx, f.RunID)
	return err == nil && !slices.ContainsFunc(parks, func(p ParkRecord) bool { return p.Decision == nil }), nil
}

// RunParksReader reads a run with its parks.
type RunParksReader interface {
	// GetRunParks is [Driver.GetRun] and [Driver.ListParks] of the run as one consistent
	// read (nil parks when it has none). ErrNotFound if the run is missing.
	GetRunParks(ctx context.Context, id string) (RunRecord, []ParkRecord, error)
}

// getRunParks reads a run and its parks: in one call when d is a [RunParksReader], else
// with GetRun and ListParks.
func getRunParks(ctx context.Context, d Driver, id string) (RunRecord, []ParkRecord, error) {
	if r, ok := d.(RunParksReader); ok {
		return r.GetRunParks(ctx, id)
	}
	rec, err := d.GetRun(ctx, id)
	if err != nil {
		return RunRecord{}, nil, err
	}
	parks, err := d.ListParks(ctx, id)
	if err != nil {
		return RunRecord{}, nil, err
	}
	return rec, parks, nil
}

// LeaseRenewer extends many leases at once.
type LeaseRenewer interface {
	// RenewLeases is [Driver.RenewLease] of every fence, to the same expiry, in as few
	// statements as the driver can: it returns the fences that no longer hold (their
	// leases were lost, or their runs ended), each renewal that held being stored. On an
	// error the fences it returns are those found lost before it; the leases of the rest
	// may or may not have been extended.
	RenewLeases(ctx context.Context, fences []Fence, expires time.Time) (lost []Fence, err error)
}

// renewLeases extends the leases of fences: in one call when d is a [LeaseRenewer], else
// with [Driver.RenewLease] for each, going on after an error and returning the first.
func renewLeases(ctx context.Context, d Driver, fences []Fence, expires time.Time) (lost []Fence, err error) {
	if r, ok := d.(LeaseRenewer); ok {
		return r.RenewLeases(ctx, fences, expires)
	}
	for _, f := range fences {
		switch rerr := d.RenewLease(ctx, f, expires); {
		case errors.Is(rerr, ErrLeaseLost):
			lost = append(lost, f)
		case rerr != nil && err == nil:
			err = rerr
		}
	}
	return lost, err
}

// readStreamEnd reads a stream and its last stored row: in one statement when d is a
// [StreamEndReader], else with up to three reads.
func readStreamEnd(ctx context.Context, d Driver, id string) (Stream, []EventRow, error) {
	if r, ok := d.(StreamEndReader); ok {
		return r.ReadStreamEnd(ctx, id)
	}
	s, err := d.GetStream(ctx, id)
	if err != nil {
		return Stream{}, nil, err
	}
	last, err := d.LastSeq(ctx, id)
	if err != nil || last == 0 {
		return s, nil, err
	}
	rows, err := d.ReadEvents(ctx, id, last-1, 1)
	return s, rows, err
}

// AppendEach implements [Driver.AppendBatch] for d with one [Driver.AppendEvents] (or,
// for an append with Finish, [Driver.FinishStream]) per append, after a
// [Driver.CreateStream] for one with Open: for storage that commits nothing cheaper
// together, and for a driver that wraps another and must see every append. An Open and
// its rows are then two writes; the journal sends an Open without rows.
func AppendEach(ctx context.Context, d Driver, batch []FencedAppend) []error {
	errs := make([]error, len(batch))
	for i, a := range batch {
		errs[i] = appendOne(ctx, d, a)
	}
	return errs
}

// appendOne stores one append of a batch with the driver's single-stream writes: its
// creation, then its rows (and its end) in one write.
func appendOne(ctx context.Context, d Driver, a FencedAppend) error {
	if a.Open != nil {
		if err := d.CreateStream(ctx, *a.Open); err != nil {
			return err
		}
	}
	if !a.Finish.IsZero() {
		_, err := d.FinishStream(ctx, a.StreamID, a.Fence, a.Rows, a.Finish)
		return err
	}
	if a.Open != nil && len(a.Rows) == 0 && a.Reserve == a.Open.Reserved {
		return nil
	}
	return d.AppendEvents(ctx, a.Fence, a.Append)
}

// ThreadRun is one run of a conversation thread: its position in the thread and its
// event log's stream id.
type ThreadRun struct {
	Pos       int64
	StreamID  string
	CreatedAt time.Time
}
