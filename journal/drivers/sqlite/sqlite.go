// Package sqlite is the [journal.Driver] for development and single-process deployments,
// on a *bun.DB (sqlitedialect) the application owns. It imports no SQLite implementation:
// open the database yourself, in WAL mode with immediate transactions so lease claims
// never fail with SQLITE_BUSY, e.g. with the pure-Go modernc.org/sqlite:
//
//	sqldb, _ := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)"+
//		"&_pragma=busy_timeout(5000)&_pragma=synchronous(NORMAL)&_txlock=immediate")
//	sqldb.SetMaxOpenConns(4)
//	sqldb.SetMaxIdleConns(4)
//	drv, _ := sqlite.New(bun.NewDB(sqldb, sqlitedialect.New()), sqlite.Options{})
//
// Cap the pool. SQLite has one writer at a time, so more connections only queue on its
// lock, and database/sql's default is no cap: a burst of concurrent journal writes (500
// streams ending at once) opens a connection each, whose file I/O holds an OS thread
// apiece; one such burst in the agent benchmark left 450 threads behind and a third more
// memory per idle durable stream. With four connections it left nine.
//
// Keep as many connections idle as open. database/sql keeps two by default, so under load
// it closes the others and opens new ones, and every new SQLite connection reads the
// schema and prepares the driver's statements again: in the agent benchmark that was
// 10-15 % of the CPU of an unpaced run.
//
// Writes are committed in groups. SQLite commits one write transaction at a time, so
// the driver queues every write this process makes and runs the writes that queued while
// one transaction ran in the next, each under a savepoint of its own: one write's failure
// undoes only that write, and each returns once its group is committed. Concurrent
// writers share a BEGIN, a COMMIT and the WAL writes of the pages they change, and none
// waits in SQLite's busy handler, which sleeps in whole milliseconds. busy_timeout still
// matters when another process writes the same file.
//
// Statements are prepared once per connection, inside transactions too.
//
// Wake-ups are in-process: followers in this process are woken after every commit.
package sqlite

import (
	"github.com/uptrace/bun"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/internal/sqlstore"
)

// Options configure the driver.
type Options struct {
	// TablePrefix prefixes every table name. Default "engine_"; [a-z_][a-z0-9_]*.
	TablePrefix string
}

// Driver is the SQLite journal driver.
type Driver struct {
	*sqlstore.Store
}

var _ journal.Driver = (*Driver)(nil)

// New wraps db. The schema is created by Migrate (journal.New calls it).
func New(db *bun.DB, opts Options) (*Driver, error) {
	if opts.TablePrefix == "" {
		opts.TablePrefix = "engine_"
	}
	st, err := sqlstore.New(db, opts.TablePrefix, sqlstore.Dialect{Caps: journal.CapDurable | journal.CapBlockingIO, Prepare: true, GroupWrites: true})
	if err != nil {
		return nil, err
	}
	return &Driver{Store: st}, nil
}
