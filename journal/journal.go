package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Options configure a [Journal]. Zero values take the documented defaults.
type Options struct {
	// Owner names this instance in leases. Default: hostname plus a random suffix.
	Owner string
	// LeaseTTL is how long a claim lasts without renewal. Default 15s; renewed every TTL/3.
	LeaseTTL time.Duration
	// Now is the clock of leases, deadlines and records. Default time.Now. Tests pass a
	// fake clock and drive [Journal.RecoverOnce] and [Journal.CleanupOnce] themselves. The
	// log writer's coalescing intervals run on the wall clock ([LogOptions]).
	Now func() time.Time
	// PollInterval is how often the recovery loop runs after [Journal.Start]. Default 1s.
	PollInterval time.Duration
	// CleanupInterval is how often the scheduler lease holder runs retention. Default 1m.
	CleanupInterval time.Duration
	// ApprovalDeadline is the default park deadline. Default 24h.
	ApprovalDeadline time.Duration
	// FinishedRetention is how long event rows of a finished stream are kept. Default 24h.
	FinishedRetention time.Duration
	// ChannelRetention is how long channel messages are kept ([Journal.Publish]); older
	// ones are deleted by retention. Seqs are never reused. Default 7 days.
	ChannelRetention time.Duration
	// UnfinishedMaxAge is the age after which an unfinished stream is closed with the
	// expiry event of LogPolicy. Default 7 days.
	UnfinishedMaxAge time.Duration
	// Resumer is called with a claimed run whenever the journal resumes one; see
	// [Journal.SetResumer].
	Resumer func(ctx context.Context, run *Run)
	// SkipMigrate leaves the schema alone in [New] (the application migrates itself).
	SkipMigrate bool
	// TailBytes is the budget of the in-process follow tail: the event rows this instance
	// committed to the streams it writes, and those it read of streams other instances
	// write, kept so [Journal.ReadStream] answers a follower on this instance without a
	// database round trip. Reads the tail cannot answer exactly (older rows, rows past
	// those it holds of a stream not seen to end and no [LogWriter] of this instance
	// holds) go to the driver. Default 16 MiB for drivers
	// with [CapBlockingIO] and off for the others, whose reads are already in memory;
	// negative turns it off.
	TailBytes int
	// TailTTL is how long a stream's tail is kept after its last append or finish.
	// Default 1m, and always below half of FinishedRetention and of UnfinishedMaxAge, so a
	// tail never outlives rows another instance's retention may delete.
	TailTTL time.Duration
	// WriteRetry is how long a write whose result a run already produced (a step's result,
	// a run's end, rows of its log) is tried again while the database fails, before the
	// error is returned. The retries stop earlier when the lease is lost to another owner.
	// Default 1m.
	WriteRetry time.Duration
	// Logger receives the journal's warnings: failed writes it retries or gives up on.
	// Default: discarded.
	Logger *slog.Logger
	// LogPolicy is the vocabulary of the journal's event logs: retention closes an
	// expired log with its expiry event, and a [LogWriter] whose [LogOptions] name no
	// policy uses it. Default: the zero [LogPolicy]. See [Journal.SetLogPolicy].
	LogPolicy *LogPolicy
}

// Journal runs durable flows on a [Driver]: it begins and claims runs, records steps and
// parks, stores decisions exactly once, resumes runs, and keeps event logs.
// A Journal starts nothing until [Journal.Start]; [Journal.Close] stops it.
type Journal struct {
	d     Driver
	opts  Options
	tails *tails
	batch *logBatch // the log writers' timed commits, together
	// batchObserver, when set, is told of every batch of log appends the journal stores.
	batchObserver atomic.Pointer[func(appends int, d time.Duration)]

	mu        sync.Mutex
	resumer   func(ctx context.Context, run *Run)
	policy    atomic.Pointer[LogPolicy] // nil: the zero policy
	held      map[string]*Run
	claiming  map[string]bool // claims under way, so one instance never claims a run twice at once
	started   bool
	closed    bool
	lastFault time.Time // when the database last failed a write or a recovery read

	baseCtx    context.Context
	cancelBase context.CancelFunc
	loops      sync.WaitGroup
	resumers   sync.WaitGroup
	stopLoops  context.CancelFunc
}

// New validates opts, migrates the driver's schema (unless SkipMigrate) and returns a
// journal that has started no goroutine.
func New(d Driver, opts Options) (*Journal, error) {
	if d == nil {
		return nil, errors.New("journal: nil driver")
	}
	if opts.LeaseTTL < 0 || opts.PollInterval < 0 || opts.ApprovalDeadline < 0 ||
		opts.CleanupInterval < 0 || opts.FinishedRetention < 0 || opts.UnfinishedMaxAge < 0 || opts.TailTTL < 0 || opts.WriteRetry < 0 || opts.ChannelRetention < 0 {
		return nil, errors.New("journal: durations in Options must not be negative")
	}
	if err := opts.LogPolicy.check(); err != nil {
		return nil, err
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "engine"
		}
		opts.Owner = host + "-" + randomID(4)
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	if opts.CleanupInterval == 0 {
		opts.CleanupInterval = time.Minute
	}
	if opts.ApprovalDeadline == 0 {
		opts.ApprovalDeadline = 24 * time.Hour
	}
	if opts.FinishedRetention == 0 {
		opts.FinishedRetention = 24 * time.Hour
	}
	if opts.ChannelRetention == 0 {
		opts.ChannelRetention = 7 * 24 * time.Hour
	}
	if opts.UnfinishedMaxAge == 0 {
		opts.UnfinishedMaxAge = 7 * 24 * time.Hour
	}
	if opts.TailBytes == 0 && d.Capabilities().Has(CapBlockingIO) {
		opts.TailBytes = defaultTailBytes
	}
	if opts.TailTTL == 0 {
		opts.TailTTL = defaultTailTTL
	}
	if opts.WriteRetry == 0 {
		opts.WriteRetry = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.TailTTL = min(opts.TailTTL, opts.FinishedRetention/2, opts.UnfinishedMaxAge/2)
	if d.Capabilities().Has(CapBlockingIO) {
		d = offloaded{d}
	}
	if !opts.SkipMigrate {
		if err := d.Migrate(context.Background()); err != nil {
			return nil, fmt.Errorf("journal: migrate: %w", err)
		}
	}
	base, cancel := context.WithCancel(context.Background())
	j := &Journal{d: d, opts: opts, resumer: opts.Resumer, held: map[string]*Run{}, claiming: map[string]bool{},
		tails: newTails(opts.TailBytes, opts.TailTTL, opts.UnfinishedMaxAge), baseCtx: base, cancelBase: cancel}
	j.batch = &logBatch{j: j, group: d.Capabilities().Has(CapDurable)}
	j.policy.Store(opts.LogPolicy)
	return j, nil
}

// Driver returns the driver the journal runs on.
func (j *Journal) Driver() Driver { return j.d }

// Owner returns the name this instance uses in leases.
func (j *Journal) Owner() string { return j.opts.Owner }

// SetResumer registers the function the journal calls with a claimed run when it resumes
// one (after a decision, a timeout, or a dead owner's lease expiry). The run holds the
// lease, its steps are loaded for replay and [Run.Decision] answers. The resumer must end
// with [Run.Complete], [Run.Fail] or [Run.Suspend]; a run left open is released so the
// recovery loop retries it.
func (j *Journal) SetResumer(fn func(ctx context.Context, run *Run)) {
	j.mu.Lock()
	j.resumer = fn
	j.mu.Unlock()
}

// SetLogPolicy replaces the journal's log policy ([Options.LogPolicy]): the package that
// owns the vocabulary of the logs an application keeps installs its own, as the engine
// registers its resumer. It applies to writers opened and retention passes begun after
// it; nil restores the zero policy. A policy that cannot work is refused with an error.
func (j *Journal) SetLogPolicy(p *LogPolicy) error {
	if err := p.check(); err != nil {
		return err
	}
	j.policy.Store(p)
	return nil
}

// logPolicy returns the journal's log policy.
func (j *Journal) logPolicy() *LogPolicy {
	if p := j.policy.Load(); p != nil {
		return p
	}
	return plainPolicy
}

// NewRun is what [Journal.Begin] stores before a durable handler starts.
type NewRun struct {
	ID        string // optional; a random id when empty
	Flow      string
	Input     json.RawMessage
	Principal json.RawMessage
	Tenant    string
}

// Begin stores a run record with the lease held by this instance, before the handler
// runs, so a crash mid-handler leaves a run the recovery loop can resume.
func (j *Journal) Begin(ctx context.Context, nr NewRun) (*Run, error) {
	if nr.Flow == "" {
		return nil, errors.New("journal: Begin needs a flow name")
	}
	if err := j.checkOpen(); err != nil {
		return nil, err
	}
	if nr.ID == "" {
		nr.ID = uuid.Must(uuid.NewV7()).String()
	}
	now := j.now()
	rec := RunRecord{ID: nr.ID, Flow: nr.Flow, Input: nr.Input, Principal: nr.Principal, Tenant: nr.Tenant,
		Status: StatusRunning, LeaseOwner: j.opts.Owner, LeaseExpires: now.Add(j.opts.LeaseTTL), Epoch: 1,
		CreatedAt: now, UpdatedAt: now}
	// A retried insert that meets its own earlier attempt must not report a conflict: the
	// caller would give up on a run the recovery loop later executes.
	err := j.persist(ctx, "begin run", func() error { return j.d.InsertRun(ctx, rec) }, func(err error) bool {
		got, gerr := j.d.GetRun(ctx, rec.ID)
		return errors.Is(err, ErrConflict) && gerr == nil && got.Flow == rec.Flow && got.Epoch == 1 &&
			got.LeaseOwner == rec.LeaseOwner && got.CreatedAt.Equal(rec.CreatedAt)
	})
	if err != nil {
		return nil, err
	}
	r := newRun(j, rec, nil, nil)
	j.hold(r)
	return r, nil
}

// GetRun loads a run's stored record (no lease taken). An id that holds a NUL byte or is
// not valid UTF-8 is [ErrNotFound] on every driver, without a query.
func (j *Journal) GetRun(ctx context.Context, id string) (RunRecord, error) {
	if unstorable(id) {
		return RunRecord{}, ErrNotFound
	}
	return j.d.GetRun(ctx, id)
}

// ListParks returns every park of run runID ordered by key, decided or not.
func (j *Journal) ListParks(ctx context.Context, runID string) ([]ParkRecord, error) {
	if unstorable(runID) {
		return nil, nil
	}
	return j.d.ListParks(ctx, runID)
}

// GetRunParks returns the stored record of run id and its parks ordered by key, as
// [Journal.GetRun] and [Journal.ListParks] would, in one read where the driver can
// ([RunParksReader]). ErrNotFound if the run does not exist.
func (j *Journal) GetRunParks(ctx context.Context, id string) (RunRecord, []ParkRecord, error) {
	if unstorable(id) {
		return RunRecord{}, nil, ErrNotFound
	}
	return getRunParks(ctx, j.d, id)
}

// Claim takes the lease of a run for this instance and loads its steps and parks for
// replay. A run held elsewhere returns [*LeaseBusyError] with the remaining lease; so does
// a run an execution on this instance holds: a second claim by the same owner would bump
// the epoch under that execution and run the run twice at once.
func (j *Journal) Claim(ctx context.Context, runID string) (*Run, error) {
	if err := j.checkOpen(); err != nil {
		return nil, err
	}
	if unstorable(runID) {
		return nil, ErrNotFound
	}
	if !j.startClaim(runID) {
		return nil, &LeaseBusyError{RunID: runID, Owner: j.opts.Owner, RetryAfter: j.opts.PollInterval}
	}
	defer j.endClaim(runID)
	now := j.now()
	c, err := claimRunLoaded(ctx, j.d, runID, j.opts.Owner, now, now.Add(j.opts.LeaseTTL))
	if err != nil {
		return nil, err
	}
	r := newRun(j, c.Run, c.Steps, c.Parks)
	j.hold(r)
	return r, nil
}

// Decide stores the one decision of a park. Errors: [ErrNotFound] (unknown run or park),
// [ErrConflict] (already decided), [*LeaseBusyError] (another instance holds the run; the
// decision is not stored). When the decision makes the run runnable, this instance claims
// it and calls the resumer in a goroutine that [Journal.Close] waits for.
func (j *Journal) Decide(ctx context.Context, runID, key string, d Decision) error {
	switch d.Kind {
	case DecisionApprove, DecisionDeny, DecisionTimeout:
	default:
		return fmt.Errorf("journal: unknown decision kind %q", d.Kind)
	}
	if err := j.checkOpen(); err != nil {
		return err
	}
	if unstorable(runID) || unstorable(key) {
		return ErrNotFound
	}
	now := j.now()
	if d.DecidedAt.IsZero() {
		d.DecidedAt = now
	}
	if t := TracerOf(ctx); t != nil && d.Trace == "" {
		d.Trace = t.TraceContext(ctx)
	}
	res, err := j.d.Decide(ctx, runID, key, j.opts.Owner, d, now)
	if err != nil {
		return err
	}
	if res.Runnable {
		j.tryResume(ctx, runID)
	}
	return nil
}

// tryResume claims a runnable run and hands it to the resumer. Failing to claim is not an
// error: the holder or the recovery loop will resume it.
func (j *Journal) tryResume(ctx context.Context, runID string) bool {
	j.mu.Lock()
	fn := j.resumer
	j.mu.Unlock()
	if fn == nil {
		return false
	}
	r, err := j.Claim(context.WithoutCancel(ctx), runID)
	if err != nil {
		return false
	}
	// Add under the lock that Close takes to set closed, so Close never waits on a
	// WaitGroup that is still growing.
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		_ = r.Release(context.WithoutCancel(ctx))
		return false
	}
	j.resumers.Add(1)
	j.mu.Unlock()
	go func() {
		defer j.resumers.Done()
		defer func() {
			if !r.ended() {
				_ = r.Release(context.Background())
			}
		}()
		fn(j.baseCtx, r)
	}()
	return true
}

// hold tracks a run whose lease this instance holds, for renewal and Close.
func (j *Journal) hold(r *Run) {
	j.mu.Lock()
	j.held[r.ID] = r
	j.mu.Unlock()
}

// startClaim marks run id as being claimed here; false when an execution on this
// instance holds it or claims it already.
func (j *Journal) startClaim(id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r := j.held[id]; (r != nil && !r.ended()) || j.claiming[id] {
		return false
	}
	j.claiming[id] = true
	return true
}

func (j *Journal) endClaim(id string) {
	j.mu.Lock()
	delete(j.claiming, id)
	j.mu.Unlock()
}

// drop forgets a run once its lease is released or lost.
func (j *Journal) drop(r *Run) {
	j.mu.Lock()
	if j.held[r.ID] == r {
		delete(j.held, r.ID)
	}
	j.mu.Unlock()
}

// heldRuns snapshots the runs this instance holds.
func (j *Journal) heldRuns() []*Run {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]*Run, 0, len(j.held))
	for _, r := range j.held {
		out = append(out, r)
	}
	return out
}

func (j *Journal) now() time.Time { return j.opts.Now() }

// Now returns the journal's clock ([Options.Now]): deadlines computed by callers must use
// it, or a journal run on another clock (a test's, an injected one) disagrees with them.
func (j *Journal) Now() time.Time { return j.opts.Now() }

func (j *Journal) checkOpen() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	return nil
}

// randomID returns n random bytes as hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ObserveLogBatches has f told of every batch of event-log appends the journal stores
// in one write (the log writers' timed commits, gathered per window): how many streams'
// appends it held and how long the write took. A metric of batch sizes uses it; nil
// stops the reports.
func (j *Journal) ObserveLogBatches(f func(appends int, d time.Duration)) {
	if f == nil {
		j.batchObserver.Store(nil)
		return
	}
	j.batchObserver.Store(&f)
}
