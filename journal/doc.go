// Package journal makes flows durable: it records what a handler did so a later execution
// — after an approval, a timeout, or a crash of the instance that ran it — continues where
// the first one stopped without repeating side effects. It also keeps durable event logs
// that followers read, such as an agent run's.
//
// # The story of a durable run
//
// When a request for a durable flow arrives, the application calls [Journal.Begin], which
// stores the run (flow, input, principal, tenant) with this instance's lease before the
// handler starts. The handler then goes through [Run.Step] for every side effect:
//
//	run, err := j.Begin(ctx, journal.NewRun{Flow: "refund", Input: in, Principal: who, Tenant: t})
//	out, err := run.Step(ctx, "model-1", func(ctx context.Context) (json.RawMessage, error) {
//		return callModel(ctx) // runs once; replays return the recorded result
//	})
//
// Steps are counted per execution. A replay that asks for another step name at a
// recorded position fails with [ErrNonDeterministic]. Ordinary step errors are recorded
// (replayed as [*StepError]); cancellation and lease loss are not.
//
// A tool that needs approval parks the run. Several parks may be open at once; the run
// becomes runnable when all are decided:
//
//	d, err := run.Park(ctx, toolCallID, time.Time{}, payload) // zero deadline: 24 h
//	if d == nil {
//		return run.Suspend(ctx) // status parked, lease released; the handler returns
//	}
//
// A decision arrives through [Journal.Decide] (HTTP approval routes call it). It is stored
// exactly once ([ErrConflict] for a second one; [*LeaseBusyError] with RetryAfter while
// another instance holds the run). When it makes the run runnable, this instance claims
// the lease and calls the resumer registered with [Journal.SetResumer], which executes the
// handler again: recorded steps replay, [Run.Park] now returns the decision, and the run
// ends with [Run.Complete] or [Run.Fail].
//
// # Leases and recovery
//
// Every write is fenced by the run's lease (owner plus an epoch incremented on each
// claim): a writer whose lease expired and was claimed elsewhere gets [ErrLeaseLost], so
// two instances never both advance a run. [Journal.Start] runs the background work until
// [Journal.Close]: lease renewal (every LeaseTTL/3), the recovery loop (timeouts are
// stored as decisions so they survive restarts; runs whose owner died are taken over) and,
// on the one instance holding the scheduler lease, retention. Tests drive the same work
// with [Journal.RenewOnce], [Journal.RecoverOnce] and [Journal.CleanupOnce] and a fake
// clock in [Options.Now]. [New] starts nothing.
//
// # Under faults
//
// A step's function runs again only when its execution died (or lost the lease) after it
// started and before its result was recorded; every execution sees the same idempotency
// key in its context ("<run id>-<position>"), and a flow called from it gets a key
// derived from the step and the order of its calls ([Run.CallContext] gives the same
// outside steps), which a durable flow takes as its run id so a replay attaches to the
// run it started. A write of a result already produced (a step, a run's end, a park, log
// rows) that fails while the database is away is retried ([Options.WriteRetry]); a
// retry that meets its own earlier, unacknowledged write counts it as landed. After a
// database fault an instance claims nothing for one lease TTL, so owners cut off too can
// renew; and one instance never claims a run twice at once. A step's record is written
// together with the rows its run's log writers queued before it, and every log commit
// stores a seq reservation ([Stream.Reserved], [LogOptions.ReserveAhead]) so a writer
// that takes a stream over continues past every seq the dead one may have sent.
//
// # The event log
//
// An event stream is recorded under its own id ([Journal.CreateLog] creates it and opens
// its writer; [Journal.NewLogWriter] continues an existing one). The journal stores events
// as opaque JSON objects; a [LogPolicy] says what they mean to the log: which are deltas
// (pieces of text continuing the one before), which end a run's part of the log, and what
// the journal stores when it truncates or expires a log. The agent package gives its
// policy for its event logs; the zero policy coalesces nothing. A [LogWriter] turns live
// events into rows: structural events one row each (Write returns the seq for the SSE
// id: field), deltas of one type and key coalesced (about every 100 ms or 1 KiB), commits
// batched to at most ten a second, a cap of 5,000 rows marked by one truncation row.
// [LogWriter.WriteEnd] stores a run's last event with the queued rows and ends the stream
// in one write. Followers read with [Journal.ReadStream] (the stream record and a batch
// of rows in one consistent read) and wait with [Journal.Subscribe]. Rows of streams
// finished 24 h ago are deleted; streams left unfinished for 7 days are closed with the
// policy's expiry event.
//
// Reads of rows this instance committed, or read of another instance's stream, recently
// are answered from its follow tail ([Options.TailBytes], [Options.TailTTL]) without a
// database round trip. The tail holds
// only committed rows, contiguous by seq; a read it cannot answer exactly (older rows,
// rows another instance appended after taking a run over, a read past the last row of a
// stream not finished here) goes to the driver, so a follower sees the same rows on any
// instance.
//
// # Drivers
//
// Storage is a [Driver]: journal/drivers/memory (tests), journal/drivers/sqlite (one
// process, WAL) and journal/drivers/postgres (several instances, LISTEN/NOTIFY). All pass
// the conformance suite in journal/journaltest; callers ask [Capability] bits, never names.
package journal
