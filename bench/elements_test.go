package bench_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/bench/internal/agentbench"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/internal/rebind"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// elementsDB is a fresh journal driver with, for the SQL drivers, the database it is on
// and the names of its tables, so a baseline can issue the same statements by hand.
type elementsDB struct {
	driver   journal.Driver
	db       *sql.DB // nil on the memory driver
	dollar   bool    // $n placeholders (Postgres)
	notify   string  // the NOTIFY channel after a commit, Postgres only
	topics   string
	messages string
	parks    string
}

// openElementsDB opens driver on a fresh database (a temp SQLite file in WAL mode with
// the pool the driver's doc advises, or Postgres tables with a random prefix dropped at
// cleanup), or skips when Postgres is not configured.
func openElementsDB(tb testing.TB, driver string) *elementsDB {
	tb.Helper()
	switch driver {
	case agentbench.Memory:
		return &elementsDB{driver: memory.New()}
	case agentbench.SQLite:
		d, sqldb := testenv.SQLiteJournal(tb)
		return &elementsDB{driver: d, db: sqldb, topics: "engine_topics", messages: "engine_messages", parks: "engine_parks"}
	case agentbench.Postgres:
		prefix := "elbench_" + testenv.RandomHex(4) + "_"
		d, sqldb := testenv.PostgresJournal(tb, testenv.PostgresDSN(tb, "the Postgres benchmark"), prefix, true)
		return &elementsDB{driver: d, db: sqldb, dollar: true, notify: prefix + "events",
			topics: prefix + "topics", messages: prefix + "messages", parks: prefix + "parks"}
	}
	tb.Fatalf("unknown driver %q", driver)
	return nil
}

// q rewrites ? placeholders to $n on Postgres.
func (e *elementsDB) q(s string) string {
	if e.dollar {
		return rebind.Dollar(s)
	}
	return s
}

type (
	elemIn  struct{}
	elemOut struct {
		Value string `json:"value"`
	}
)

var (
	elemUnit    = engine.NewUnit("elements")
	signalFlow  = engine.Define[elemIn, elemOut](elemUnit, "signal", engine.Durable(), engine.Public())
	parkFlow    = engine.Define[elemIn, elemOut](elemUnit, "park", engine.Durable(), engine.Public())
	benchSignal = durable.NewSignal[string]("bench")
)

// BenchmarkSignalResume times one signal set until the durable run waiting for it is
// running again with the value (signal-µs), against the same run parked with
// [durable.Park] and approved with journal.Decide (decide-µs), alternating on one
// journal. x-decide is decide time ÷ signal time: 1.0 is as fast as a decision, above 1
// faster. Starting each run until it parks is outside the timings; every resumed run
// must complete with the value it was sent.
func BenchmarkSignalResume(b *testing.B) {
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) { benchSignalResume(b, driver) })
	}
}

func benchSignalResume(b *testing.B, driver string) {
	ctx := context.Background()
	e := openElementsDB(b, driver)
	j, err := journal.New(e.driver, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	resumed := make(chan string, 1)
	app, err := engine.New(durable.With(j),
		engine.Bind(signalFlow, func(fx *engine.Fx, _ elemIn) (elemOut, error) {
			v, err := benchSignal.Wait(fx, durable.RunOf(fx).ID, time.Time{})
			if err != nil {
				return elemOut{}, err
			}
			resumed <- v
			return elemOut{Value: v}, nil
		}),
		engine.Bind(parkFlow, func(fx *engine.Fx, _ elemIn) (elemOut, error) {
			d, err := durable.Park(fx, "go", time.Time{}, nil)
			if err != nil {
				return elemOut{}, err
			}
			var v string
			if err := json.Unmarshal(d.Payload, &v); err != nil {
				return elemOut{}, err
			}
			resumed <- v
			return elemOut{Value: v}, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = app.Close(context.Background()) })
	c, err := clientx.New("http://bench", clientx.WithDoer(clientx.InProcess(app.Handler())))
	if err != nil {
		b.Fatal(err)
	}
	park := func(f *engine.Flow[elemIn, elemOut]) string {
		r := clientx.Call(ctx, c, f, elemIn{})
		if !r.Meta.Parked || r.Meta.RunID == "" {
			b.Fatalf("%s did not park: %+v %v", f.ID(), r.Meta, r.Error)
		}
		return r.Meta.RunID
	}
	// finish waits for the handler to have the value, then (untimed) for the run's record
	// to say completed with it.
	finish := func(runID, want string, start time.Time) time.Duration {
		got := <-resumed
		d := time.Since(start)
		if got != want {
			b.Fatalf("run %s resumed with %q, want %q", runID, got, want)
		}
		for {
			rec, err := j.GetRun(ctx, runID)
			if err != nil {
				b.Fatal(err)
			}
			if rec.Status.Final() {
				if rec.Status != journal.StatusCompleted || !bytes.Contains(rec.Output, []byte(want)) {
					b.Fatalf("run %s ended %s with %s", runID, rec.Status, rec.Output)
				}
				return d
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	viaSignal := func(i int) time.Duration {
		id := park(signalFlow)
		v := fmt.Sprintf("s%d", i)
		start := time.Now()
		if err := benchSignal.SetApp(ctx, app, id, v); err != nil {
			b.Fatal(err)
		}
		return finish(id, v, start)
	}
	viaDecide := func(i int) time.Duration {
		id := park(parkFlow)
		v := fmt.Sprintf("d%d", i)
		raw, _ := json.Marshal(v)
		start := time.Now()
		if err := j.Decide(ctx, id, "go", journal.Decision{Kind: journal.DecisionApprove, Payload: raw}); err != nil {
			b.Fatal(err)
		}
		return finish(id, v, start)
	}
	var sigT, decT time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			sigT += viaSignal(i)
			decT += viaDecide(i)
		} else {
			decT += viaDecide(i)
			sigT += viaSignal(i)
		}
		n++
	}
	b.ReportMetric(decT.Seconds()/sigT.Seconds(), "x-decide")
	b.ReportMetric(float64(sigT.Microseconds())/float64(n), "signal-µs")
	b.ReportMetric(float64(decT.Microseconds())/float64(n), "decide-µs")
}

// BenchmarkChannelPublish publishes one message to a channel and reads it back after the
// seq before it, as a receiver does (journal Publish then Messages), against the same
// statements written by hand on the same database in the same run: one transaction that
// numbers the message on the channel's row, inserts it and wakes the parked receivers
// (an UPDATE of the parks waiting on it), then a SELECT of the message (and, on Postgres,
// the NOTIFY after the commit that wakes other instances). x-hand is hand time ÷ journal
// time (1.0 is as fast as the hand-written statements). Every read must return the
// message just published, with its seq.
func BenchmarkChannelPublish(b *testing.B) {
	for _, driver := range []string{agentbench.SQLite, agentbench.Postgres} {
		b.Run(driver, func(b *testing.B) { benchChannelPublish(b, driver) })
	}
}

func benchChannelPublish(b *testing.B, driver string) {
	ctx := context.Background()
	e := openElementsDB(b, driver)
	j, err := journal.New(e.driver, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = j.Close(context.Background()) })
	const channel = "room/bench"
	topic := journal.ChannelTopic(channel)
	handTopic := topic + "/hand" // its own channel row, so each side numbers its own

	upsert := e.q(`INSERT INTO ` + e.topics + ` (topic, version, value, updated_at) VALUES (?, 1, NULL, ?)
		ON CONFLICT (topic) DO UPDATE SET version = ` + e.topics + `.version + 1, updated_at = excluded.updated_at RETURNING version`)
	insert := e.q(`INSERT INTO ` + e.messages + ` (topic, seq, payload, created_at) VALUES (?,?,?,?)`)
	wake := e.q(`UPDATE ` + e.parks + ` SET decision_kind = ?, decision_payload = ?, decided_at = ?
		WHERE topic = ? AND decision_kind = '' AND after_version < ? RETURNING run_id`)
	read := e.q(`SELECT seq, payload, created_at FROM ` + e.messages + ` WHERE topic = ? AND seq > ? ORDER BY seq LIMIT ?`)
	notify := e.q(`SELECT pg_notify(?, ?)`)
	// On SQLite the statements are prepared once, as the driver does; pgx caches the
	// prepared statements of a Postgres connection by itself (a database/sql statement
	// would be prepared again on every transaction's connection).
	var stmts map[string]*sql.Stmt
	if !e.dollar {
		stmts = map[string]*sql.Stmt{}
		for _, q := range []string{upsert, insert, wake, read} {
			st, err := e.db.PrepareContext(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			stmts[q] = st
		}
	}
	txRow := func(tx *sql.Tx, q string, args ...any) *sql.Row {
		if st := stmts[q]; st != nil {
			return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
		}
		return tx.QueryRowContext(ctx, q, args...)
	}
	txExec := func(tx *sql.Tx, q string, args ...any) (sql.Result, error) {
		if st := stmts[q]; st != nil {
			return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
		return tx.ExecContext(ctx, q, args...)
	}
	txQuery := func(tx *sql.Tx, q string, args ...any) (*sql.Rows, error) {
		if st := stmts[q]; st != nil {
			return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
		}
		return tx.QueryContext(ctx, q, args...)
	}
	dbRow := func(q string, args ...any) *sql.Row {
		if st := stmts[q]; st != nil {
			return st.QueryRowContext(ctx, args...)
		}
		return e.db.QueryRowContext(ctx, q, args...)
	}

	check := func(seq, got int64, payload, want string) {
		if got != seq || payload != want {
			b.Fatalf("read seq %d %s, want seq %d %s", got, payload, seq, want)
		}
	}
	viaJournal := func(i int) time.Duration {
		p := fmt.Sprintf(`{"text":"message %d"}`, i)
		start := time.Now()
		seq, err := j.Publish(ctx, channel, json.RawMessage(p))
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := j.Messages(ctx, channel, seq-1, 1)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if len(msgs) != 1 {
			b.Fatalf("read %d messages after seq %d", len(msgs), seq-1)
		}
		check(seq, msgs[0].Seq, string(msgs[0].Payload), p)
		return d
	}
	viaHand := func(i int) time.Duration {
		p := fmt.Sprintf(`{"text":"message %d"}`, i)
		start := time.Now()
		now := time.Now().UnixNano()
		tx, err := e.db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		var seq int64
		if err := txRow(tx, upsert, handTopic, now).Scan(&seq); err != nil {
			b.Fatal(err)
		}
		if _, err := txExec(tx, insert, handTopic, seq, p, now); err != nil {
			b.Fatal(err)
		}
		rows, err := txQuery(tx, wake, string(journal.DecisionApprove), nil, now, handTopic, seq)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			b.Fatal("a receiver parked on the hand-written channel")
		}
		if err := errors.Join(rows.Err(), rows.Close(), tx.Commit()); err != nil {
			b.Fatal(err)
		}
		if e.notify != "" {
			if _, err := e.db.ExecContext(ctx, notify, e.notify, handTopic); err != nil {
				b.Fatal(err)
			}
		}
		var got, at int64
		var payload string
		if err := dbRow(read, handTopic, seq-1, 1).Scan(&got, &payload, &at); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		check(seq, got, payload, p)
		return d
	}
	var jT, hT time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			jT += viaJournal(i)
			hT += viaHand(i)
		} else {
			hT += viaHand(i)
			jT += viaJournal(i)
		}
		n++
	}
	b.ReportMetric(hT.Seconds()/jT.Seconds(), "x-hand")
	b.ReportMetric(float64(jT.Microseconds())/float64(n), "journal-µs")
	b.ReportMetric(float64(hT.Microseconds())/float64(n), "hand-µs")
}
