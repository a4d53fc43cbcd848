package ai_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/postgres"
)

// apSQLiteDriver is a journal driver on a fresh SQLite file (modernc, WAL).
func apSQLiteDriver(t *testing.T) journal.Driver {
	t.Helper()
	d, _ := testenv.SQLiteJournal(t)
	return d
}

// apPostgresDriver is a journal driver on ENGINE_TEST_POSTGRES_DSN with tables of a
// unique prefix (dropped at cleanup); it skips, saying why, when the variable is unset.
func apPostgresDriver(t *testing.T) journal.Driver {
	t.Helper()
	return apPostgresDriverAt(t, "ap_"+testenv.RandomHex(5)+"_", true)
}

// apPostgresDriverAt opens a driver (its own pool and LISTEN connection, as another
// process would) on the tables of prefix, dropping them at cleanup when owner.
func apPostgresDriverAt(t *testing.T, prefix string, owner bool) *postgres.Driver {
	t.Helper()
	// Registered before the app's cleanups, so it runs after the app closed.
	d, _ := testenv.PostgresJournal(t, testenv.PostgresDSN(t, "the Postgres approval path"), prefix, owner)
	return d
}

// The approval happy path on the SQL drivers, through the client helpers: park, approve
// with agent.Approve, follow with agent.Follow to the end of the resumed run.
func TestApprovalHappyPathOnDrivers(t *testing.T) {
	t.Parallel()
	drivers := []struct {
		name string
		open func(t *testing.T) journal.Driver
	}{
		{"sqlite", apSQLiteDriver},
		{"postgres", apPostgresDriver},
	}
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := newApEnv(t, apConfig{turns: apTransferTurns("500"), driver: d.open(t)})
			_, stream, in := e.parkedRun(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := e.client(t, apAlice)
			if err := agent.Approve(ctx, c, in.ID, nil); err != nil {
				t.Fatalf("Approve: %v", err)
			}
			var frames []agent.Frame
			for f, err := range agent.Follow(ctx, e.client(t, apAlice), stream, agent.FollowOptions{}) {
				if err != nil {
					t.Fatalf("Follow: %v after %v", err, apTypes(frames))
				}
				frames = append(frames, f)
			}
			apCheckSeqs(t, frames, 1)
			var result agui.ToolCallResult
			for _, f := range frames {
				if r, ok := f.Event.(agui.ToolCallResult); ok {
					result = r
				}
			}
			if result.ToolCallID != "call_pay" || !strings.Contains(result.Content, `"ok":true`) {
				t.Fatalf("TOOL_CALL_RESULT = %+v; events %v", result, apTypes(frames))
			}
			if last, ok := frames[len(frames)-1].Event.(agui.RunFinished); !ok || last.Outcome != nil {
				t.Fatalf("follow did not end with the final RUN_FINISHED: %v", apTypes(frames))
			}
			if got := e.Transfers(); len(got) != 1 || got[0].Amount != 500 {
				t.Fatalf("transfers = %+v", got)
			}
		})
	}
}

// Two instances share one Postgres database: the run parks on the first, the decision
// goes to the second (which resumes the run), and a follower of the first sees the
// resumed run through cross-process wake-ups.
func TestApprovalAcrossInstancesOnPostgres(t *testing.T) {
	t.Parallel()
	prefix := "ap_" + testenv.RandomHex(5) + "_"
	first := newApEnv(t, apConfig{turns: apTransferTurns("500"), driver: apPostgresDriverAt(t, prefix, true),
		jopts: journal.Options{Owner: "first"}})
	second := newApEnv(t, apConfig{model: first.model, driver: apPostgresDriverAt(t, prefix, false),
		jopts: journal.Options{Owner: "second"}})
	_, stream, in := first.parkedRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	frames, rawc := apLiveFollow(t, ctx, first, stream)
	if err := agent.Approve(ctx, second.client(t, apAlice), in.ID, nil); err != nil {
		t.Fatalf("Approve on the second instance: %v", err)
	}
	var got []agent.Frame
	for f := range frames {
		got = append(got, f)
	}
	<-rawc
	apCheckSeqs(t, got, 1)
	if last, ok := got[len(got)-1].Event.(agui.RunFinished); !ok || last.Outcome != nil {
		t.Fatalf("the first instance's follower ended with %v", apTypes(got))
	}
	if a, b := len(first.Transfers()), len(second.Transfers()); a != 0 || b != 1 {
		t.Fatalf("transfers ran %d times on the first instance and %d on the second; want 0 and 1", a, b)
	}
}
