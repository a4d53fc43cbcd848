package bench_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/bench/internal/agentbench"
	"github.com/bbc28f59/engine/bench/internal/flowbench"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
)

type (
	stepIn struct {
		N int `json:"n"`
	}
	stepOut struct {
		N int `json:"n"`
	}
)

// stepFlow is a durable flow whose handler runs one journal step.
var stepFlow = engine.Define[stepIn, stepOut](elemUnit, "step", engine.Durable(), engine.Public())

// stepBody is every call's input, and stepWant a fragment of every reply.
const (
	stepBody = `{"n":41}`
	stepWant = `"n":42`
)

// BenchmarkDurableStep calls, over HTTP, a durable flow whose handler runs one journal
// step, against a raw net/http handler that makes the same three write transactions by
// hand on the same database (insert the run with its lease; check the lease and insert
// the step in one transaction; complete the run under its lease), decoding the same
// input and writing the same envelope. Before measuring, it checks that the flow makes
// exactly those three writes.
//
//   - p50: serial calls, the two sides taking turns in batches of 32, the order swapped
//     every round; x-hand is the flow's median latency over the hand-written one's
//     (target ≤ 1.15), flow-p50-µs and hand-p50-µs the medians.
//   - throughput: 8 concurrent callers, in batches, with flowbench.Measure: flow-x-hand
//     is the flow's throughput as a fraction of the hand-written one's.
func BenchmarkDurableStep(b *testing.B) {
	for _, driver := range []string{agentbench.SQLite, agentbench.Postgres} {
		b.Run(driver+"/p50", func(b *testing.B) {
			flow, hand := durableStepSubjects(b, driver)
			var fl, hd []time.Duration
			timed := func(call func() error, into *[]time.Duration) {
				for range 32 {
					start := time.Now()
					if err := call(); err != nil {
						b.Fatal(err)
					}
					*into = append(*into, time.Since(start))
				}
			}
			for range 4 { // warm both sides
				timed(flow.Call, new([]time.Duration))
				timed(hand.Call, new([]time.Duration))
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					timed(flow.Call, &fl)
					timed(hand.Call, &hd)
				} else {
					timed(hand.Call, &hd)
					timed(flow.Call, &fl)
				}
			}
			f, h := median(fl), median(hd)
			b.ReportMetric(float64(f.Nanoseconds())/1e3, "flow-p50-µs")
			b.ReportMetric(float64(h.Nanoseconds())/1e3, "hand-p50-µs")
			b.ReportMetric(float64(f)/float64(h), "x-hand")
		})
		b.Run(driver+"/throughput", func(b *testing.B) {
			flow, hand := durableStepSubjects(b, driver)
			flowbench.Measure(b, flowbench.Options{Callers: 8, Batch: 128}, hand, flow)
		})
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// durableStepSubjects starts, on a fresh database, the app with the durable flow and
// the hand-written handler on one loopback server, checks that the flow writes what the
// hand does, and returns the two checked calls.
func durableStepSubjects(b *testing.B, driver string) (flow, hand flowbench.Subject) {
	b.Helper()
	e := openElementsDB(b, driver)
	rec := &writeRecorder{Driver: e.driver}
	j, err := journal.New(rec, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	app, err := engine.New(durable.With(j),
		engine.Bind(stepFlow, func(fx *engine.Fx, in stepIn) (stepOut, error) {
			n, err := durable.Step(fx, "add", func(context.Context) (int, error) { return in.N + 1, nil })
			return stepOut{N: n}, err
		}))
	if err != nil {
		b.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = app.Close(context.Background()) })
	h, err := newHandStep(e, j.Owner())
	if err != nil {
		b.Fatal(err)
	}
	engineHandler := app.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/raw/step" {
			h.ServeHTTP(w, r)
			return
		}
		engineHandler.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	s := &flowbench.Server{URL: srv.URL, App: app, Client: client}
	flow = flowbench.Subject{Name: "flow", Call: s.Call(http.MethodPost, "/_engine/elements/step", []byte(stepBody), stepWant)}
	hand = flowbench.Subject{Name: "hand", Call: s.Call(http.MethodPost, "/raw/step", []byte(stepBody), stepWant)}
	rec.start()
	if err := flow.Call(); err != nil {
		b.Fatal(err)
	}
	if got, want := rec.stop(), []string{"InsertRun", "InsertStep", "UpdateRun"}; !slices.Equal(got, want) {
		b.Fatalf("the durable flow wrote %v, the hand-written handler writes %v: not the same work", got, want)
	}
	return flow, hand
}

// writeRecorder is the journal's driver, noting the run writes and reads a call makes
// while recording.
type writeRecorder struct {
	journal.Driver
	mu    sync.Mutex
	on    bool
	calls []string
}

func (w *writeRecorder) start() { w.mu.Lock(); w.on, w.calls = true, nil; w.mu.Unlock() }

func (w *writeRecorder) stop() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	return w.calls
}

func (w *writeRecorder) note(name string) {
	w.mu.Lock()
	if w.on {
		w.calls = append(w.calls, name)
	}
	w.mu.Unlock()
}

func (w *writeRecorder) InsertRun(ctx context.Context, r journal.RunRecord) error {
	w.note("InsertRun")
	return w.Driver.InsertRun(ctx, r)
}

func (w *writeRecorder) GetRun(ctx context.Context, id string) (journal.RunRecord, error) {
	w.note("GetRun")
	return w.Driver.GetRun(ctx, id)
}

func (w *writeRecorder) LoadSteps(ctx context.Context, runID string) ([]journal.StepRecord, error) {
	w.note("LoadSteps")
	return w.Driver.LoadSteps(ctx, runID)
}

func (w *writeRecorder) InsertStep(ctx context.Context, f journal.Fence, st journal.StepRecord, sw journal.StepWrites) error {
	w.note("InsertStep")
	return w.Driver.InsertStep(ctx, f, st, sw)
}

func (w *writeRecorder) RenewLease(ctx context.Context, f journal.Fence, expires time.Time) error {
	w.note("RenewLease")
	return w.Driver.RenewLease(ctx, f, expires)
}

func (w *writeRecorder) ReleaseRun(ctx context.Context, f journal.Fence) error {
	w.note("ReleaseRun")
	return w.Driver.ReleaseRun(ctx, f)
}

func (w *writeRecorder) UpdateRun(ctx context.Context, f journal.Fence, u journal.RunUpdate, now time.Time) error {
	w.note("UpdateRun")
	return w.Driver.UpdateRun(ctx, f, u, now)
}

// handStep is the hand-written durable call: the journal's three write transactions,
// with its statements, on its tables. On SQLite the statements are prepared once, as the
// journal prepares its own; on Postgres pgx caches them on each connection, for both.
type handStep struct {
	db    *sql.DB
	owner string
	qs    [4]string    // insert the run, check the lease, insert the step, complete
	stmts [4]*sql.Stmt // prepared (SQLite), else nil
}

func newHandStep(e *elementsDB, owner string) (*handStep, error) {
	runs, steps := e.table("runs"), e.table("steps")
	h := &handStep{db: e.db, owner: owner, qs: [4]string{
		e.q(`INSERT INTO ` + runs + ` (id, flow, input, principal, tenant, status, output, error, lease_owner, lease_expires, epoch, created_at, updated_at)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING`),
		e.q(`SELECT 1 FROM ` + runs + ` WHERE id = ? AND lease_owner = ? AND epoch = ? AND lease_owner <> ''` + e.lockShare()),
		e.q(`INSERT INTO ` + steps + ` (run_id, position, name, result, error, created_at) VALUES (?,?,?,?,?,?)
			ON CONFLICT (run_id, position) DO NOTHING`),
		e.q(`UPDATE ` + runs + ` SET status = ?, output = ?, error = ?, lease_owner = '', updated_at = ?
			WHERE id = ? AND lease_owner = ? AND epoch = ? AND lease_owner <> ''`),
	}}
	if e.dollar {
		return h, nil
	}
	for i, q := range h.qs {
		st, err := e.db.Prepare(q)
		if err != nil {
			return nil, err
		}
		h.stmts[i] = st
	}
	return h, nil
}

// exec runs statement i on the database, or on tx when it is not nil.
func (h *handStep) exec(ctx context.Context, tx *sql.Tx, i int, args ...any) (sql.Result, error) {
	switch st := h.stmts[i]; {
	case st != nil && tx != nil:
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	case st != nil:
		return st.ExecContext(ctx, args...)
	case tx != nil:
		return tx.ExecContext(ctx, h.qs[i], args...)
	}
	return h.db.ExecContext(ctx, h.qs[i], args...)
}

func (h *handStep) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var in stepIn
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		http.Error(w, `{"data":null,"error":{"code":"ValidationError","data":{}}}`, http.StatusBadRequest)
		return
	}
	out, err := h.run(r.Context(), body, in)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	data, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(append([]byte(`{"data":`), data...), `,"error":null}`+"\n"...))
}

var errHandLease = errors.New("hand: the lease is not ours")

func (h *handStep) run(ctx context.Context, input []byte, in stepIn) (stepOut, error) {
	id := uuid.Must(uuid.NewV7()).String()
	now := time.Now()
	// 1. Begin: the run with its lease.
	res, err := h.exec(ctx, nil, 0, id, stepFlow.ID(), string(input), nil, "", "running", nil, "",
		h.owner, now.Add(time.Minute).UnixNano(), 1, now.UnixNano(), now.UnixNano())
	if err != nil {
		return stepOut{}, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return stepOut{}, errors.New("hand: run exists")
	}
	// 2. The step, under the lease, which the share lock holds for the transaction.
	out := in.N + 1
	result, _ := json.Marshal(out)
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return stepOut{}, err
	}
	var one int
	row := func() *sql.Row {
		if h.stmts[1] != nil {
			return tx.StmtContext(ctx, h.stmts[1]).QueryRowContext(ctx, id, h.owner, 1)
		}
		return tx.QueryRowContext(ctx, h.qs[1], id, h.owner, 1)
	}
	if err := row().Scan(&one); err != nil {
		_ = tx.Rollback()
		return stepOut{}, err
	}
	if _, err := h.exec(ctx, tx, 2, id, 0, "add", string(result), "", time.Now().UnixNano()); err != nil {
		_ = tx.Rollback()
		return stepOut{}, err
	}
	if err := tx.Commit(); err != nil {
		return stepOut{}, err
	}
	// 3. Complete, releasing the lease.
	output, _ := json.Marshal(stepOut{N: out})
	res, err = h.exec(ctx, nil, 3, "completed", string(output), "", time.Now().UnixNano(), id, h.owner, 1)
	if err != nil {
		return stepOut{}, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return stepOut{}, errHandLease
	}
	return stepOut{N: out}, nil
}

// table is the name of one of the journal's tables.
func (e *elementsDB) table(name string) string {
	return strings.TrimSuffix(e.parks, "parks") + name
}

// lockShare is the row lock the journal takes on the run while it writes a step.
func (e *elementsDB) lockShare() string {
	if e.dollar {
		return " FOR SHARE"
	}
	return ""
}
