// Package postgres is the production [journal.Driver]: several application instances
// share one PostgreSQL database through a *bun.DB (pgdialect) the application owns.
// Leases and fencing hold across processes (row locks and conditional updates), and
// followers are woken across processes with LISTEN/NOTIFY: NOTIFY is sent after the write
// transaction commits, and LISTEN runs on a dedicated connection (Options.Listener) that
// reconnects on failure, with a slow poll as a backstop for missed notifications. The
// writes an instance makes at the same moment share one transaction, each under a
// savepoint of its own (see [Options.CommitEachWrite]).
package postgres

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/internal/sqlstore"
)

// Options configure the driver.
type Options struct {
	// TablePrefix prefixes every table name and the NOTIFY channel. Default "engine_".
	TablePrefix string
	// Listener opens the dedicated LISTEN connection. When nil, ListenDSN is dialled.
	Listener func(ctx context.Context) (*pgx.Conn, error)
	// ListenDSN is used when Listener is nil. Without either, wake-ups are in-process
	// only (plus the backstop poll) and CapCrossProcessWakeups is not declared.
	ListenDSN string
	// PollInterval is the backstop: subscribers are woken this often even without a
	// notification. Default 5s.
	PollInterval time.Duration
	// CommitEachWrite gives every write a transaction of its own. By default the
	// writes an instance makes at the same moment (runs' records, steps, parks, ends,
	// and the batched event log) share one transaction, each under a savepoint of its
	// own, so one write's failure undoes only that write: the database's commits then
	// grow with the instance's moments of writing, not with its conversations (see
	// docs/capacity.md). Each instance then writes on four connections at a time at
	// most; a write waiting for a row lock another instance holds delays the writes
	// queued behind it.
	CommitEachWrite bool
}

// Driver is the PostgreSQL journal driver.
type Driver struct {
	*sqlstore.Store
	db      *bun.DB
	opts    Options
	channel string
	// batchChannel carries the notifications of batched appends, each a JSON array of
	// stream ids led by origin.
	batchChannel string
	// origin marks this driver's own batch notifications: their subscribers on this
	// instance were woken at the commit, so the listener skips them when they come back.
	// originJSON is it encoded, as each notification begins.
	origin     string
	originJSON []byte

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	idle   *time.Timer // stops the listener when nobody subscribed again within the grace
}

var _ journal.Driver = (*Driver)(nil)

// New wraps db. The schema is created by Migrate (journal.New calls it). The listener
// runs only while someone is subscribed; [Driver.Close] stops it.
func New(db *bun.DB, opts Options) (*Driver, error) {
	if opts.TablePrefix == "" {
		opts.TablePrefix = "engine_"
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 5 * time.Second
	}
	if opts.Listener == nil && opts.ListenDSN != "" {
		dsn := opts.ListenDSN
		opts.Listener = func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }
	}
	caps := journal.CapDurable | journal.CapMultiProcess | journal.CapBlockingIO
	if opts.Listener != nil {
		caps |= journal.CapCrossProcessWakeups
	}
	d := &Driver{db: db, opts: opts, channel: opts.TablePrefix + "events", batchChannel: opts.TablePrefix + "events_batch",
		origin: originMark + rand.Text()}
	d.originJSON, _ = json.Marshal(d.origin) // a string always encodes
	st, err := sqlstore.New(db, opts.TablePrefix, sqlstore.Dialect{
		LockShare: " FOR SHARE", LockUpdate: " FOR UPDATE", Dollar: true, Caps: caps, AfterCommit: d.notify, NotifyBatch: d.notifyBatch,
		GroupWrites: !opts.CommitEachWrite, MaxGroup: maxGroup, Lanes: writeLanes, MultiStatement: true,
		Undone: undone,
	})
	if err != nil {
		return nil, err
	}
	d.Store = st
	st.Hub().OnChange = d.reconcile
	return d, nil
}

// notify sends NOTIFY after a commit; a failure only delays followers until the poll.
func (d *Driver) notify(ctx context.Context, streamID string) {
	if d.opts.Listener == nil {
		return
	}
	_, _ = d.db.DB.ExecContext(ctx, `SELECT pg_notify($1, $2)`, d.channel, streamID)
}

// notifyBatch queues, inside a write's transaction, the notifications of the streams
// (or topics) it wakes, sent when it commits: on the batch channel, each payload a JSON
// array of as many ids as fit Postgres' payload limit, so every listener receives one
// notification a commit rather than one a stream, and the write needs no transaction of
// its own for them. One statement sends them all. Each array begins with the driver's
// origin, which no stream or topic id can be (it starts with a NUL, which Postgres text
// cannot hold): the store wakes this instance's subscribers itself at the commit, so
// its listener skips its own notifications rather than wake every follower twice (and
// send the second, which finds nothing new, to the database).
func (d *Driver) notifyBatch(ctx context.Context, tx sqlstore.Execer, ids []string) error {
	if d.opts.Listener == nil {
		return nil
	}
	origin := d.originJSON
	var payloads []string
	b := append([]byte{'['}, origin...)
	for _, id := range ids {
		q, err := json.Marshal(id)
		if err != nil {
			return err
		}
		if len(b) > 1+len(origin) && len(b)+len(q)+2 > maxPayload {
			payloads = append(payloads, string(append(b, ']')))
			b = b[:1+len(origin)]
		}
		b = append(b, ',')
		b = append(b, q...)
	}
	payloads = append(payloads, string(append(b, ']')))
	_, err := tx.ExecContext(ctx, `SELECT pg_notify(?, x) FROM unnest(CAST(? AS TEXT[])) AS x`, d.batchChannel, textArray(payloads))
	return err
}

// maxGroup bounds the writes of one grouped transaction: each is a subtransaction, and
// a transaction with more than 64 of them that wrote makes other sessions' snapshots
// consult Postgres' subtransaction log while it runs.
const maxGroup = 64

// writeLanes is how many grouped write transactions an instance runs at once: as many
// as pgxpool's default connections on a small machine. With one, a durable
// conversation's start (three writes one after the other) waited behind every group,
// and the capacity benchmark's durable conversations started later than 1 s at p99 from
// 863 at a time, where they held with each write committed on its own. With two, eight
// callers of a durable flow made 0.84–0.85 of the calls a second they made with each
// write committed on its own; with four, as many (BenchmarkDurableStep), and the
// capacity benchmark's durable commits at the knee still fell to about a third.
const writeLanes = 4

// originMark begins a batch notification's origin.
const originMark = "\x00origin:"

// maxPayload keeps a batch notification under Postgres' 8,000-byte payload limit.
const maxPayload = 7900

// textArray writes ss as a Postgres array literal, every element quoted.
func textArray(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range s {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// reconcile runs the listener while anyone is subscribed, and stops it one PollInterval
// after the last subscriber left: followers that come one after another (a client
// reconnecting, a dashboard polling runs) reuse the LISTEN connection instead of dialling
// a new Postgres backend each time.
func (d *Driver) reconcile() {
	d.mu.Lock()
	defer d.mu.Unlock()
	active := d.Hub().Active()
	if active && d.idle != nil {
		d.idle.Stop()
		d.idle = nil
	}
	if active && d.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		prev, done := d.done, make(chan struct{})
		d.cancel, d.done = cancel, done
		go func() {
			if prev != nil {
				<-prev // one listener at a time; Close waits on the newest only
			}
			d.listen(ctx, done)
		}()
		return
	}
	if !active && d.cancel != nil && d.idle == nil {
		d.idle = time.AfterFunc(d.opts.PollInterval, d.stopIdle)
	}
}

// stopIdle stops the listener if still nobody is subscribed.
func (d *Driver) stopIdle() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.idle = nil
	if !d.Hub().Active() && d.cancel != nil {
		d.cancel()
		d.cancel = nil // the goroutine exits on its own; Close waits for it
	}
}

// Close stops the listener (if running) and waits for it. It does not close the *bun.DB.
func (d *Driver) Close() error {
	d.mu.Lock()
	cancel, done := d.cancel, d.done
	d.cancel = nil
	if d.idle != nil {
		d.idle.Stop()
		d.idle = nil
	}
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if done != nil {
		<-done
	}
	return nil
}

// listen keeps a LISTEN connection open until ctx ends, waking subscribers on each
// notification, after every (re)connect, and every PollInterval as a backstop.
func (d *Driver) listen(ctx context.Context, done chan struct{}) {
	defer close(done)
	hub := d.Hub()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		var conn *pgx.Conn
		var err error
		if d.opts.Listener != nil {
			conn, err = d.opts.Listener(ctx)
			if err == nil {
				_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{d.channel}.Sanitize()+"; LISTEN "+pgx.Identifier{d.batchChannel}.Sanitize())
				if err != nil {
					_ = conn.Close(context.Background())
				}
			}
		} else {
			err = errors.New("no listener configured")
		}
		if err != nil {
			hub.NotifyAll()
			if !sqlstore.Sleep(ctx, min(backoff, d.opts.PollInterval)) {
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		hub.NotifyAll() // rows committed while we were not listening
		d.receive(ctx, conn)
		_ = conn.Close(context.Background())
	}
}

// receive waits for notifications until the connection breaks or ctx ends.
func (d *Driver) receive(ctx context.Context, conn *pgx.Conn) {
	hub := d.Hub()
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, d.opts.PollInterval)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil && n.Channel == d.batchChannel:
			var ids []string
			if json.Unmarshal([]byte(n.Payload), &ids) != nil {
				hub.NotifyAll() // not ours to read: wake everyone rather than miss one
			}
			if len(ids) > 0 && ids[0] == d.origin {
				continue // this instance's own commit: its subscribers were woken then
			}
			for _, id := range ids {
				if !strings.HasPrefix(id, originMark) {
					hub.Notify(id)
				}
			}
		case err == nil:
			hub.Notify(n.Payload)
		case ctx.Err() != nil:
			return
		case conn.IsClosed():
			return
		default:
			hub.NotifyAll() // backstop poll
		}
	}
}

// undone reports whether err says Postgres undid the statement's transaction work and it
// may run again as it was: it was chosen to end a deadlock (40P01), or failed to
// serialize with another transaction (40001).
func undone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
