// Package sqlstore is the bun-based implementation the sqlite and postgres drivers share.
// The SQL is portable between the two (ON CONFLICT, RETURNING, BIGINT nanosecond times,
// TEXT JSON); the differences (row locks, wake-ups, capabilities) come in through [Dialect].
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/internal/wake"
)

// Dialect carries what differs between databases.
type Dialect struct {
	// LockShare and LockUpdate are appended to SELECTs that must hold the run row for
	// the rest of the transaction (" FOR SHARE", " FOR UPDATE" on Postgres). SQLite takes
	// a database lock at BEGIN IMMEDIATE and leaves them empty.
	LockShare, LockUpdate string
	// Caps is what the driver declares.
	Caps journal.Capability
	// Dollar selects $1, $2 placeholders (Postgres) instead of ?.
	Dollar bool
	// AfterCommit is called with a stream id after rows were committed (Postgres NOTIFY).
	AfterCommit func(ctx context.Context, streamID string)
	// NotifyBatch, when set, is called inside a write transaction (an append, a batch of
	// them, a step, a stream's end, a signal or a publish) with the ids whose
	// subscribers it wakes, and queues their notifications to other processes, sent at
	// its commit: no transaction of their own, one statement for a batch of any size.
	// AfterCommit then serves only the writes made outside a transaction. Statements it
	// runs use ? placeholders.
	NotifyBatch func(ctx context.Context, tx Execer, ids []string) error
	// Prepare keeps one prepared statement per statement text for the calls made outside
	// transactions. It pays where the driver would parse the SQL on every call (SQLite);
	// pgx already caches prepared statements per connection.
	Prepare bool
	// GroupWrites sends every write of the process through one queue and commits the
	// writes that queue together, each under a savepoint of its own (see writeQueue):
	// on SQLite, which commits one write transaction at a time, and on Postgres, where
	// every commit is a flush of its log to disk.
	GroupWrites bool
	// MaxGroup bounds the writes of one grouped transaction; 0 means 128.
	MaxGroup int
	// Lanes is how many grouped transactions may run at once; 0 means 1.
	Lanes int
	// MultiStatement says a call without arguments may hold several statements, which
	// the group commit uses to move its savepoint in one round trip.
	MultiStatement bool
	// Undone, when set, says a grouped write's error means the database undid the write
	// and it may simply run again (Postgres: it was a deadlock's victim, or a
	// serialization failure). The group commit then runs it again, in a later group,
	// instead of returning the error (see writeQueue.enqueue).
	Undone func(err error) bool
}

// Store implements journal.Driver on a *bun.DB the application owns.
type Store struct {
	db  *bun.DB
	dia Dialect
	hub *wake.Hub

	stmts sync.Map    // statement text → *sql.Stmt, when Dialect.Prepare
	wq    *writeQueue // when Dialect.GroupWrites

	runs, steps, parks, leases, streams, events, topics, messages string
	stops, threads                                                string // stop requests and thread runs (stop.go)
}

var prefixRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// New validates the table prefix and returns a store.
func New(db *bun.DB, prefix string, dia Dialect) (*Store, error) {
	if db == nil {
		return nil, errors.New("journal: nil *bun.DB")
	}
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("journal: table prefix %q must match %s", prefix, prefixRE)
	}
	s := &Store{db: db, dia: dia, hub: wake.New(),
		runs: prefix + "runs", steps: prefix + "steps", parks: prefix + "parks", leases: prefix + "leases",
		streams: prefix + "streams", events: prefix + "events", topics: prefix + "topics", messages: prefix + "messages",
		stops: prefix + "stops", threads: prefix + "threads"}
	if dia.GroupWrites {
		s.wq = &writeQueue{s: s, max: cmp.Or(dia.MaxGroup, 128), lanes: cmp.Or(dia.Lanes, 1)}
	}
	return s, nil
}

// Tables returns the table names, for tests that drop them.
func (s *Store) Tables() []string {
	return []string{s.events, s.streams, s.steps, s.parks, s.leases, s.runs, s.topics, s.messages, s.stops, s.threads}
}

// DB returns the handle the store runs on.
func (s *Store) DB() *bun.DB { return s.db }

// Capabilities implements journal.Driver.
func (s *Store) Capabilities() journal.Capability { return s.dia.Caps }

// Migrate implements journal.Driver with idempotent CREATE ... IF NOT EXISTS statements.
func (s *Store) Migrate(ctx context.Context) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + s.runs + ` (id TEXT PRIMARY KEY, flow TEXT NOT NULL, input TEXT, principal TEXT,
			tenant TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, output TEXT, error TEXT NOT NULL DEFAULT '',
			lease_owner TEXT NOT NULL DEFAULT '', lease_expires BIGINT NOT NULL DEFAULT 0, epoch BIGINT NOT NULL DEFAULT 0,
			created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + s.runs + `_status_idx ON ` + s.runs + ` (status, lease_expires)`,
		`CREATE TABLE IF NOT EXISTS ` + s.steps + ` (run_id TEXT NOT NULL, position BIGINT NOT NULL, name TEXT NOT NULL,
			result TEXT, error TEXT NOT NULL DEFAULT '', created_at BIGINT NOT NULL, PRIMARY KEY (run_id, position))`,
		`CREATE TABLE IF NOT EXISTS ` + s.parks + ` (run_id TEXT NOT NULL, park_key TEXT NOT NULL, deadline BIGINT NOT NULL,
			payload TEXT, decision_kind TEXT NOT NULL DEFAULT '', decision_payload TEXT, decided_at BIGINT NOT NULL DEFAULT 0,
			created_at BIGINT NOT NULL, PRIMARY KEY (run_id, park_key))`,
		`CREATE INDEX IF NOT EXISTS ` + s.parks + `_pending_idx ON ` + s.parks + ` (decision_kind, deadline)`,
		`CREATE TABLE IF NOT EXISTS ` + s.leases + ` (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + s.streams + ` (id TEXT PRIMARY KEY, run_id TEXT NOT NULL DEFAULT '', flow TEXT NOT NULL DEFAULT '',
			principal_id TEXT NOT NULL DEFAULT '', tenant TEXT NOT NULL DEFAULT '', created_at BIGINT NOT NULL, finished_at BIGINT)`,
		`CREATE INDEX IF NOT EXISTS ` + s.streams + `_finished_idx ON ` + s.streams + ` (finished_at, created_at)`,
		`CREATE TABLE IF NOT EXISTS ` + s.events + ` (stream_id TEXT NOT NULL, seq BIGINT NOT NULL, event TEXT NOT NULL,
			PRIMARY KEY (stream_id, seq))`,
	}
	for _, q := range stmts {
		if _, err := s.db.DB.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	// Added after the first release: a stream's seq reservation; topics (signals and
	// channels) and the parks that wait for them.
	if err := s.addColumn(ctx, s.streams, "reserved", "BIGINT NOT NULL DEFAULT 0"); err != nil {
		return err
	}
	if err := s.addColumn(ctx, s.parks, "topic", "TEXT NOT NULL DEFAULT ''"); err != nil {
		return err
	}
	if err := s.addColumn(ctx, s.parks, "after_version", "BIGINT NOT NULL DEFAULT 0"); err != nil {
		return err
	}
	// Added for tracing: the trace context of the execution that parked a run and of the
	// decision's maker, so a tracer links the resumed run to both.
	if err := s.addColumn(ctx, s.parks, "trace", "TEXT NOT NULL DEFAULT ''"); err != nil {
		return err
	}
	if err := s.addColumn(ctx, s.parks, "decision_trace", "TEXT NOT NULL DEFAULT ''"); err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE INDEX IF NOT EXISTS ` + s.parks + `_topic_idx ON ` + s.parks + ` (topic, decision_kind)`,
		`CREATE TABLE IF NOT EXISTS ` + s.topics + ` (topic TEXT PRIMARY KEY, version BIGINT NOT NULL, value TEXT,
			updated_at BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + s.messages + ` (topic TEXT NOT NULL, seq BIGINT NOT NULL, payload TEXT NOT NULL,
			created_at BIGINT NOT NULL, PRIMARY KEY (topic, seq))`,
		`CREATE INDEX IF NOT EXISTS ` + s.messages + `_created_idx ON ` + s.messages + ` (created_at)`,
	} {
		if _, err := s.db.DB.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	// Added with the operator queries (the console): their indexes.
	if err := s.migrateQueries(ctx); err != nil {
		return err
	}
	// Added with run control: stop requests and conversation threads.
	return s.migrateStops(ctx)
}

// addColumn adds a column to a table created by an earlier version, unless it is there.
func (s *Store) addColumn(ctx context.Context, table, column, def string) error {
	rows, err := s.db.DB.QueryContext(ctx, `SELECT `+column+` FROM `+table+` WHERE 1 = 0`)
	if err == nil {
		return rows.Close()
	}
	_, err = s.db.DB.ExecContext(ctx, `ALTER TABLE `+table+` ADD COLUMN `+column+` `+def)
	return err
}

// ns converts a time to stored nanoseconds; the zero time is 0.
func ns(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// tm converts stored nanoseconds back; 0 is the zero time.
func tm(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// js passes JSON as a string (bun would format []byte as a binary literal); nil is NULL.
func js(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// raw turns a scanned nullable text into JSON; NULL is nil.
func raw(ns sql.NullString) json.RawMessage {
	if !ns.Valid {
		return nil
	}
	return json.RawMessage(ns.String)
}

const runCols = `id, flow, input, principal, tenant, status, output, error, lease_owner, lease_expires, epoch, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (journal.RunRecord, error) {
	var rs runScan
	if err := sc.Scan(rs.dest()...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return journal.RunRecord{}, journal.ErrNotFound
		}
		return journal.RunRecord{}, err
	}
	return rs.record(), nil
}

// runScan holds what a row's runCols scan into.
type runScan struct {
	r           journal.RunRecord
	in, pr, out sql.NullString
	st          string
	exp, ca, ua int64
}

func (rs *runScan) dest() []any {
	r := &rs.r
	return []any{&r.ID, &r.Flow, &rs.in, &rs.pr, &r.Tenant, &rs.st, &rs.out, &r.Error, &r.LeaseOwner, &rs.exp, &r.Epoch, &rs.ca, &rs.ua}
}

func (rs *runScan) record() journal.RunRecord {
	r := rs.r
	r.Input, r.Principal, r.Output, r.Status = raw(rs.in), raw(rs.pr), raw(rs.out), journal.Status(rs.st)
	r.LeaseExpires, r.CreatedAt, r.UpdatedAt = tm(rs.exp), tm(rs.ca), tm(rs.ua)
	return r
}

// InsertRun implements journal.Driver.
func (s *Store) InsertRun(ctx context.Context, r journal.RunRecord) error {
	res, err := s.exec(ctx, `INSERT INTO `+s.runs+` (`+runCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING`,
		r.ID, r.Flow, js(r.Input), js(r.Principal), r.Tenant, string(r.Status), js(r.Output), r.Error,
		r.LeaseOwner, ns(r.LeaseExpires), r.Epoch, ns(r.CreatedAt), ns(r.UpdatedAt))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return journal.ErrConflict
	}
	return nil
}

// GetRun implements journal.Driver.
func (s *Store) GetRun(ctx context.Context, id string) (journal.RunRecord, error) {
	return scanRun(s.queryRow(ctx, `SELECT `+runCols+` FROM `+s.runs+` WHERE id = ?`, id))
}

// ClaimRun implements journal.Driver with one conditional UPDATE ... RETURNING.
func (s *Store) ClaimRun(ctx context.Context, id, owner string, now, expires time.Time) (journal.RunRecord, error) {
	c, err := s.claim(ctx, id, owner, now, expires, false)
	return c.Run, err
}

// ClaimRunLoaded implements journal.RunClaimLoader: the run's steps and parks are read
// in the claim's transaction, after it, so a claim is one transaction, not three.
func (s *Store) ClaimRunLoaded(ctx context.Context, id, owner string, now, expires time.Time) (journal.ClaimedRun, error) {
	return s.claim(ctx, id, owner, now, expires, true)
}

// claim is ClaimRun, and with load ClaimRunLoaded.
func (s *Store) claim(ctx context.Context, id, owner string, now, expires time.Time, load bool) (journal.ClaimedRun, error) {
	for range 3 {
		const claim = `UPDATE %s SET lease_owner = ?, lease_expires = ?, epoch = epoch + 1,
			status = 'running', updated_at = ? WHERE id = ? AND status IN ('running', 'parked')
			AND (lease_owner = '' OR lease_owner = ? OR lease_expires <= ?) RETURNING %s`
		q, args := fmt.Sprintf(claim, s.runs, runCols), []any{owner, ns(expires), ns(now), id, owner, ns(now)}
		var c journal.ClaimedRun
		var err error
		if s.wq != nil || load {
			err = s.tx(ctx, func(ctx context.Context, tx *txq) error {
				var werr error
				if c.Run, werr = scanRun(tx.QueryRowContext(ctx, q, args...)); werr != nil || !load {
					return werr
				}
				if c.Steps, werr = s.loadSteps(ctx, tx.QueryContext, id); werr != nil {
					return werr
				}
				c.Parks, werr = s.listParks(ctx, tx.QueryContext, id)
				return werr
			})
		} else {
			c.Run, err = scanRun(s.queryRow(ctx, q, args...))
		}
		if !errors.Is(err, journal.ErrNotFound) {
			return c, err
		}
		cur, err := s.GetRun(ctx, id)
		if err != nil {
			return journal.ClaimedRun{Run: cur}, err
		}
		if cur.Status.Final() {
			return journal.ClaimedRun{}, journal.ErrRunFinished
		}
		if cur.LeaseOwner != "" && cur.LeaseOwner != owner && cur.LeaseExpires.After(now) {
			return journal.ClaimedRun{}, journal.BusyError(id, cur.LeaseOwner, cur.LeaseExpires, now)
		}
		// The lease changed between the two statements; try again.
	}
	return journal.ClaimedRun{}, journal.BusyError(id, "", now, now)
}

// fencedExec runs a conditional UPDATE on the run row; no row means the lease is lost.
func (s *Store) fencedExec(ctx context.Context, db execer, f journal.Fence, set string, args ...any) error {
	args = append(args, f.RunID, f.Owner, f.Epoch)
	res, err := db.ExecContext(ctx, `UPDATE `+s.runs+` SET `+set+` WHERE id = ? AND lease_owner = ? AND epoch = ? AND lease_owner <> ''`, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return journal.ErrLeaseLost
	}
	return nil
}

// checkFence holds the run row for the rest of tx when f still owns it.
func (s *Store) checkFence(ctx context.Context, tx *txq, f journal.Fence) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+s.runs+` WHERE id = ? AND lease_owner = ? AND epoch = ? AND lease_owner <> ''`+s.dia.LockShare,
		f.RunID, f.Owner, f.Epoch).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return journal.ErrLeaseLost
	}
	return err
}

// RenewLease implements journal.Driver.
func (s *Store) RenewLease(ctx context.Context, f journal.Fence, expires time.Time) error {
	return s.fencedExec(ctx, s, f, `lease_expires = ?`, ns(expires))
}

// renewChunk bounds the runs of one renewal statement: a statement holds the rows it
// renewed, or the one writer, for about 2 ms a hundred runs, a pause the writes of those
// runs' conversations would otherwise wait out.
const renewChunk = 100

// Where rows are locked, RenewLeases tries the fences whose rows were held renewPasses
// times in all, renewPause apart, before it renews the rest one by one.
const (
	renewPasses = 3
	renewPause  = 20 * time.Millisecond
)

// Sleep waits d or until ctx ends; false when ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RenewLeases implements journal.LeaseRenewer: renewChunk fences to a statement, the
// runs renewed coming back from the same statement.
//
// Where rows are locked (Postgres), each statement runs on its own, outside the write
// queue, and skips the rows another transaction holds (SKIP LOCKED): it waits for no
// write, and no write waits long for it. A row is held when its run is writing (a step,
// its log's end), a few milliseconds: the fences a statement skipped are tried again
// (renewPasses), and those still skipped are read back without a lock, and one that
// still holds is renewed on its own, after that write, as RenewLease does. A
// statement that waited instead, inside the group commit, held hundreds of run rows
// while it waited for one: under load the writes of other groups queued behind those
// rows and Postgres found deadlocks among them, each a second long.
//
// With one writer at a time (SQLite), nothing holds a row while the queue runs a write:
// each statement is a write of its own there, so other writes run between them.
func (s *Store) RenewLeases(ctx context.Context, fences []journal.Fence, expires time.Time) ([]journal.Fence, error) {
	var lost, skipped []journal.Fence
	if s.dia.LockUpdate == "" {
		for chunk := range slices.Chunk(fences, renewChunk) {
			var renewed map[journal.Fence]bool
			err := s.tx(ctx, func(ctx context.Context, tx *txq) (err error) {
				q, args := s.renewSQL(chunk, expires, false)
				renewed, err = scanFences(tx.queryText(ctx, q, args...))
				return err
			})
			if err != nil {
				return lost, err
			}
			lost = appendMissing(lost, chunk, renewed)
		}
		return lost, nil
	}
	// A row held by a write is free again once that write commits, a few milliseconds
	// on: the fences a statement skipped are tried again, in one statement a chunk,
	// after a pause; only those still held after the last pass are read back and renewed
	// one by one.
	pending := fences
	for pass := range renewPasses {
		if pass > 0 {
			if !Sleep(ctx, renewPause) {
				return lost, ctx.Err()
			}
		}
		var missing []journal.Fence
		for chunk := range slices.Chunk(pending, renewChunk) {
			q, args := s.renewSQL(chunk, expires, true)
			renewed, err := scanFences(s.db.DB.QueryContext(ctx, s.rebind(q), args...))
			if err != nil {
				return lost, err
			}
			missing = appendMissing(missing, chunk, renewed)
		}
		if pending = missing; len(pending) == 0 {
			return lost, nil
		}
	}
	for chunk := range slices.Chunk(pending, renewChunk) {
		var in strings.Builder
		args := make([]any, 0, len(chunk))
		for k, f := range chunk {
			if k > 0 {
				in.WriteByte(',')
			}
			in.WriteByte('?')
			args = append(args, f.RunID)
		}
		holding, err := scanFences(s.db.DB.QueryContext(ctx, s.rebind(`SELECT id, lease_owner, epoch FROM `+s.runs+
			` WHERE id IN (`+in.String()+`) AND lease_owner <> ''`), args...))
		if err != nil {
			return lost, err
		}
		for _, f := range chunk {
			if holding[f] {
				skipped = append(skipped, f)
			} else {
				lost = append(lost, f)
			}
		}
	}
	for _, f := range skipped {
		switch err := s.RenewLease(ctx, f, expires); {
		case errors.Is(err, journal.ErrLeaseLost):
			lost = append(lost, f)
		case err != nil:
			return lost, err
		}
	}
	return lost, nil
}

// renewSQL is RenewLeases' UPDATE of chunk, and its arguments. The ids are listed on
// their own as well as in the (id, owner, epoch) values: with the values alone, or joined
// as UPDATE ... FROM, one of Postgres and SQLite scans the whole runs table. With
// skipLocked, the rows to renew are locked first, those another transaction holds left
// out.
func (s *Store) renewSQL(chunk []journal.Fence, expires time.Time, skipLocked bool) (string, []any) {
	var q strings.Builder
	args := make([]any, 0, 1+4*len(chunk))
	if skipLocked {
		q.WriteString(`WITH held AS (SELECT id FROM ` + s.runs)
	} else {
		q.WriteString(`UPDATE ` + s.runs + ` SET lease_expires = ?`)
		args = append(args, ns(expires))
	}
	q.WriteString(` WHERE id IN (`)
	for k, f := range chunk {
		if k > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('?')
		args = append(args, f.RunID)
	}
	q.WriteString(`) AND lease_owner <> '' AND (id, lease_owner, epoch) IN (VALUES `)
	for k, f := range chunk {
		if k > 0 {
			q.WriteByte(',')
		}
		q.WriteString(`(?, ?, CAST(? AS BIGINT))`)
		args = append(args, f.RunID, f.Owner, f.Epoch)
	}
	q.WriteString(`)`)
	if skipLocked {
		q.WriteString(s.dia.LockUpdate + ` SKIP LOCKED) UPDATE ` + s.runs + ` AS r SET lease_expires = ? FROM held
			WHERE r.id = held.id RETURNING r.id, r.lease_owner, r.epoch`)
		args = append(args, ns(expires))
	} else {
		q.WriteString(` RETURNING id, lease_owner, epoch`)
	}
	return q.String(), args
}

// appendMissing appends to out the fences of chunk that are not in found.
func appendMissing(out, chunk []journal.Fence, found map[journal.Fence]bool) []journal.Fence {
	for _, f := range chunk {
		if !found[f] {
			out = append(out, f)
		}
	}
	return out
}

// scanFences reads the rows of a RETURNING id, lease_owner, epoch.
func scanFences(rows *sql.Rows, err error) (map[journal.Fence]bool, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[journal.Fence]bool{}
	for rows.Next() {
		var f journal.Fence
		if err := rows.Scan(&f.RunID, &f.Owner, &f.Epoch); err != nil {
			return nil, err
		}
		out[f] = true
	}
	return out, rows.Err()
}

// ReleaseRun implements journal.Driver.
func (s *Store) ReleaseRun(ctx context.Context, f journal.Fence) error {
	return s.fencedExec(ctx, s, f, `lease_owner = ''`)
}

// UpdateRun implements journal.Driver.
func (s *Store) UpdateRun(ctx context.Context, f journal.Fence, u journal.RunUpdate, now time.Time) error {
	return s.updateRun(ctx, s, f, u, now)
}

func (s *Store) updateRun(ctx context.Context, db execer, f journal.Fence, u journal.RunUpdate, now time.Time) error {
	return s.fencedExec(ctx, db, f, `status = ?, output = ?, error = ?, lease_owner = '', updated_at = ?`,
		string(u.Status), js(u.Output), u.Error, ns(now))
}

// SuspendRun implements journal.RunSuspender: the parks are counted in the update's
// transaction, after it took the run's row, where a decision stored before it is seen
// (each statement reads what was committed when it began).
func (s *Store) SuspendRun(ctx context.Context, f journal.Fence, now time.Time) (bool, error) {
	var pending int
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		if err := s.updateRun(ctx, tx, f, journal.RunUpdate{Status: journal.StatusParked}, now); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.parks+` WHERE run_id = ? AND decision_kind = ''`, f.RunID).Scan(&pending)
	})
	return err == nil && pending == 0, err
}

// LoadSteps implements journal.Driver.
func (s *Store) LoadSteps(ctx context.Context, runID string) ([]journal.StepRecord, error) {
	return s.loadSteps(ctx, s.query, runID)
}

func (s *Store) loadSteps(ctx context.Context, query reader, runID string) ([]journal.StepRecord, error) {
	rows, err := query(ctx, `SELECT position, name, result, error, created_at FROM `+s.steps+` WHERE run_id = ? ORDER BY position`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.StepRecord
	for rows.Next() {
		st := journal.StepRecord{RunID: runID}
		var res sql.NullString
		var ca int64
		if err := rows.Scan(&st.Position, &st.Name, &res, &st.Error, &ca); err != nil {
			return nil, err
		}
		st.Result, st.CreatedAt = raw(res), tm(ca)
		out = append(out, st)
	}
	return out, rows.Err()
}

// InsertStep implements journal.Driver.
func (s *Store) InsertStep(ctx context.Context, f journal.Fence, st journal.StepRecord, w journal.StepWrites) error {
	return s.txWaking(ctx, func(ctx context.Context, tx *txq) ([]string, error) {
		if err := s.checkFence(ctx, tx, f); err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO `+s.steps+` (run_id, position, name, result, error, created_at) VALUES (?,?,?,?,?,?)
			ON CONFLICT (run_id, position) DO NOTHING`, st.RunID, st.Position, st.Name, js(st.Result), st.Error, ns(st.CreatedAt))
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, journal.ErrStepExists
		}
		wake := appended(w)
		for _, o := range w.Opens {
			if wake, err = s.openStream(ctx, tx, o, wake); err != nil {
				return nil, err // the transaction rolls back: the step is not stored either
			}
		}
		for _, a := range w.Appends {
			// The fence was checked above, and holds the run row for the transaction.
			if _, err := s.appendTx(ctx, tx, &f, a, true); err != nil {
				return nil, err
			}
		}
		return wake, nil
	})
}

const parkCols = `run_id, park_key, deadline, payload, decision_kind, decision_payload, decided_at, created_at, topic, after_version, trace, decision_trace`

func scanPark(sc scanner) (journal.ParkRecord, error) {
	var ps parkScan
	if err := sc.Scan(ps.dest()...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return journal.ParkRecord{}, journal.ErrNotFound
		}
		return journal.ParkRecord{}, err
	}
	return ps.record(), nil
}

// parkScan holds what a row's parkCols scan into.
type parkScan struct {
	p          journal.ParkRecord
	pl, dp     sql.NullString
	kind, dt   string
	dl, da, ca int64
}

func (ps *parkScan) dest() []any {
	p := &ps.p
	return []any{&p.RunID, &p.Key, &ps.dl, &ps.pl, &ps.kind, &ps.dp, &ps.da, &ps.ca, &p.Topic, &p.After, &p.Trace, &ps.dt}
}

func (ps *parkScan) record() journal.ParkRecord {
	p := ps.p
	p.Deadline, p.Payload, p.CreatedAt = tm(ps.dl), raw(ps.pl), tm(ps.ca)
	if ps.kind != "" {
		p.Decision = &journal.Decision{Kind: journal.DecisionKind(ps.kind), Payload: raw(ps.dp), DecidedAt: tm(ps.da), Trace: ps.dt}
	}
	return p
}

// GetRunParks implements journal.RunParksReader: the run joined with its parks, one row
// a park (the park's columns empty for a run without one).
func (s *Store) GetRunParks(ctx context.Context, id string) (journal.RunRecord, []journal.ParkRecord, error) {
	rows, err := s.query(ctx, `SELECT `+runParkCols+` FROM `+s.runs+` r LEFT JOIN `+s.parks+` p ON p.run_id = r.id
		WHERE r.id = ? ORDER BY p.park_key`, id)
	if err != nil {
		return journal.RunRecord{}, nil, err
	}
	defer rows.Close()
	var (
		rs    runScan
		ps    parkScan
		found bool
		parks []journal.ParkRecord
		dest  = append(rs.dest(), ps.dest()...)
	)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return journal.RunRecord{}, nil, err
		}
		found = true
		if ps.p.RunID != "" {
			parks = append(parks, ps.record())
		}
	}
	if err := rows.Err(); err != nil {
		return journal.RunRecord{}, nil, err
	}
	if !found {
		return journal.RunRecord{}, nil, journal.ErrNotFound
	}
	return rs.record(), parks, nil
}

// runParkCols are runCols of r and parkCols of p, a missing park's empty rather than
// NULL where parkScan takes no NULL.
var runParkCols = "r." + strings.ReplaceAll(runCols, ", ", ", r.") + `, COALESCE(p.run_id, ''), COALESCE(p.park_key, ''),
	COALESCE(p.deadline, 0), p.payload, COALESCE(p.decision_kind, ''), p.decision_payload, COALESCE(p.decided_at, 0),
	COALESCE(p.created_at, 0), COALESCE(p.topic, ''), COALESCE(p.after_version, 0), COALESCE(p.trace, ''),
	COALESCE(p.decision_trace, '')`

// InsertPark implements journal.Driver.
func (s *Store) InsertPark(ctx context.Context, f journal.Fence, p journal.ParkRecord) (journal.ParkRecord, error) {
	var out journal.ParkRecord
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		if err := s.checkFence(ctx, tx, f); err != nil {
			return err
		}
		kind, value, decided := "", sql.NullString{}, int64(0)
		if p.Topic != "" {
			v, err := s.lockTopic(ctx, tx, p.Topic)
			if err != nil {
				return err
			}
			if v.Version > p.After {
				kind, value, decided = string(journal.DecisionApprove), v.value, ns(p.CreatedAt)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.parks+` (run_id, park_key, deadline, payload, created_at, topic, after_version,
			decision_kind, decision_payload, decided_at, trace, tenant) VALUES (?,?,?,?,?,?,?,?,?,?,?, (SELECT tenant FROM `+s.runs+` WHERE id = ?))
			ON CONFLICT (run_id, park_key) DO NOTHING`, p.RunID, p.Key, ns(p.Deadline), js(p.Payload), ns(p.CreatedAt),
			p.Topic, p.After, kind, value, decided, p.Trace, p.RunID); err != nil {
			return err
		}
		var err error
		out, err = scanPark(tx.QueryRowContext(ctx, `SELECT `+parkCols+` FROM `+s.parks+` WHERE run_id = ? AND park_key = ?`, p.RunID, p.Key))
		return err
	})
	return out, err
}

// ListParks implements journal.Driver.
func (s *Store) ListParks(ctx context.Context, runID string) ([]journal.ParkRecord, error) {
	return s.listParks(ctx, s.query, runID)
}

func (s *Store) listParks(ctx context.Context, query reader, runID string) ([]journal.ParkRecord, error) {
	return s.queryParks(ctx, query, `SELECT `+parkCols+` FROM `+s.parks+` WHERE run_id = ? ORDER BY park_key`, runID)
}

func (s *Store) queryParks(ctx context.Context, query reader, q string, args ...any) ([]journal.ParkRecord, error) {
	rows, err := query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.ParkRecord
	for rows.Next() {
		p, err := scanPark(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Decide implements journal.Driver: the run row is locked first, so concurrent deciders
// of one run serialize and exactly one stores its decision.
func (s *Store) Decide(ctx context.Context, runID, key, owner string, d journal.Decision, now time.Time) (journal.DecideResult, error) {
	var res journal.DecideResult
	err := s.tx(ctx, func(ctx context.Context, tx *txq) error {
		var status, lowner string
		var lexp int64
		err := tx.QueryRowContext(ctx, `SELECT status, lease_owner, lease_expires FROM `+s.runs+` WHERE id = ?`+s.dia.LockUpdate, runID).
			Scan(&status, &lowner, &lexp)
		if errors.Is(err, sql.ErrNoRows) {
			return journal.ErrNotFound
		}
		if err != nil {
			return err
		}
		var kind string
		err = tx.QueryRowContext(ctx, `SELECT decision_kind FROM `+s.parks+` WHERE run_id = ? AND park_key = ?`, runID, key).Scan(&kind)
		if errors.Is(err, sql.ErrNoRows) {
			return journal.ErrNotFound
		}
		if err != nil {
			return err
		}
		if kind != "" {
			return journal.ErrConflict
		}
		if lowner != "" && lowner != owner && tm(lexp).After(now) {
			return journal.BusyError(runID, lowner, tm(lexp), now)
		}
		upd, err := tx.ExecContext(ctx, `UPDATE `+s.parks+` SET decision_kind = ?, decision_payload = ?, decided_at = ?, decision_trace = ?
			WHERE run_id = ? AND park_key = ? AND decision_kind = ''`, string(d.Kind), js(d.Payload), ns(d.DecidedAt), d.Trace, runID, key)
		if err != nil {
			return err
		}
		if n, err := upd.RowsAffected(); err == nil && n == 0 {
			return journal.ErrConflict // a signal or a message decided it since the read (topic parks are not run-locked)
		}
		if status != string(journal.StatusParked) {
			return nil
		}
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+s.parks+` WHERE run_id = ? AND decision_kind = ''`, runID).Scan(&pending); err != nil {
			return err
		}
		res.Runnable = pending == 0
		return nil
	})
	return res, err
}

// ExpiredParks implements journal.Driver.
func (s *Store) ExpiredParks(ctx context.Context, now time.Time, limit int) ([]journal.ParkRecord, error) {
	return s.queryParks(ctx, s.query, `SELECT `+parkCols+` FROM `+s.parks+` WHERE decision_kind = '' AND deadline <= ? ORDER BY deadline LIMIT ?`, ns(now), limit)
}

// RecoverableRuns implements journal.Driver.
func (s *Store) RecoverableRuns(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.query(ctx, `SELECT id FROM `+s.runs+` r WHERE (r.lease_owner = '' OR r.lease_expires <= ?)
		AND (r.status = 'running' OR (r.status = 'parked' AND NOT EXISTS
			(SELECT 1 FROM `+s.parks+` p WHERE p.run_id = r.id AND p.decision_kind = '')))
		ORDER BY id LIMIT ?`, ns(now), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ClaimLease implements journal.Driver with one conditional upsert.
func (s *Store) ClaimLease(ctx context.Context, name, owner string, now, expires time.Time) (bool, error) {
	res, err := s.exec(ctx, `INSERT INTO `+s.leases+` (name, owner, expires) VALUES (?,?,?)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
		WHERE `+s.leases+`.owner = excluded.owner OR `+s.leases+`.owner = '' OR `+s.leases+`.expires <= ?`,
		name, owner, ns(expires), ns(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ReleaseLease implements journal.Driver.
func (s *Store) ReleaseLease(ctx context.Context, name, owner string) error {
	_, err := s.exec(ctx, `UPDATE `+s.leases+` SET owner = '', expires = 0 WHERE name = ? AND owner = ?`, name, owner)
	return err
}

// placeholders returns "(?,?,?),(?,?,?)..." for n rows of width w.
func placeholders(n, w int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", w), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(row+",", n), ",")
}

// Hub returns the in-process wake-up hub (Postgres feeds it from LISTEN).
func (s *Store) Hub() *wake.Hub { return s.hub }

// appended lists the streams a step's write appends to.
func appended(w journal.StepWrites) []string {
	ids := make([]string, len(w.Appends))
	for i, a := range w.Appends {
		ids[i] = a.StreamID
	}
	return ids
}
