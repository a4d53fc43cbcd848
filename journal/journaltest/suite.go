// Package journaltest is the conformance suite every [journal.Driver] runs, and the
// matching benchmark. A driver's test calls [Run] with a factory that returns a fresh,
// migrated driver (its own storage) per case; every promise made in the journal's doc
// comments is a case here. Cases ask the driver's capabilities, never its name.
package journaltest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

// Clock is a fake clock for [journal.Options.Now]; it only moves when told to.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at a fixed instant.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the current fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testCase is one conformance case. Each case is a named function whose name is the
// case's name in lowerCamelCase without its slash ("Events/StreamRecords" is
// eventsStreamRecords), declared after the list of its file that registers it under
// that name (eventCases, stepCases...), so a failing subtest, its stack trace and its
// definition all read alike. The generated Model/Seed cases call [runModel].
type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// Run runs the whole suite; newDriver must return a fresh, migrated driver with its own
// storage each time it is called (cases run in parallel).
func Run(t *testing.T, newDriver func(t *testing.T) journal.Driver) {
	t.Helper()
	var all []testCase
	for _, group := range [][]testCase{runCases(), stepCases(), parkCases(), leaseCases(), eventCases(),
		logWriterCases(), tailCases(), retentionCases(), wakeupCases(), lifecycleCases(), faultCases(),
		reservationCases(), modelCases(), topicCases(), batchCases(), queryCases(), stopCases(), optionalCases()} {
		all = append(all, group...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newEnv(t, newDriver(t)))
		})
	}
}

// leaseTTL is the lease used by the suite's journals.
const leaseTTL = 10 * time.Second

// policy is the log vocabulary of the suite's journals. Its events are shaped like the
// agent events the journal mostly stores, so a case reads like a real log; the journal
// itself knows none of these names.
var policy = &journal.LogPolicy{
	Deltas: []journal.DeltaType{
		{Type: "TEXT_MESSAGE_CONTENT", Key: "messageId", Text: "delta"},
		{Type: "TOOL_CALL_ARGS", Key: "toolCallId", Text: "delta"},
	},
	Ends: []string{"RUN_FINISHED", "RUN_ERROR"},
	Truncated: func(maxRows int64) json.RawMessage {
		return fmt.Appendf(nil, `{"type":"CUSTOM","name":%q,"value":{"maxRows":%d}}`, truncatedName, maxRows)
	},
	Expired: func(maxAge time.Duration) json.RawMessage {
		return fmt.Appendf(nil, `{"type":"RUN_ERROR","message":"run did not finish within %s","code":"RunExpired"}`, maxAge)
	},
}

// truncatedName names the suite's truncation marker, a CUSTOM event.
const truncatedName = "journaltest.truncated"

// env is the small setup bundle every case gets.
type env struct {
	t     *testing.T
	d     journal.Driver
	clock *Clock
	ctx   context.Context
}

func newEnv(t *testing.T, d journal.Driver) *env {
	return &env{t: t, d: d, clock: NewClock(), ctx: t.Context()}
}

// journal opens a journal named owner on the shared driver and clock, closed at cleanup.
func (e *env) journal(owner string, mods ...func(*journal.Options)) *journal.Journal {
	e.t.Helper()
	return e.journalOn(e.d, owner, mods...)
}

// journalOn is [env.journal] on d, which may wrap the shared driver.
func (e *env) journalOn(d journal.Driver, owner string, mods ...func(*journal.Options)) *journal.Journal {
	e.t.Helper()
	opts := journal.Options{Owner: owner, LeaseTTL: leaseTTL, Now: e.clock.Now, LogPolicy: policy}
	for _, m := range mods {
		m(&opts)
	}
	j, err := journal.New(d, opts)
	if err != nil {
		e.t.Fatalf("journal.New: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = j.Close(ctx)
	})
	return j
}

// begin starts a run of flow "f" on j.
func (e *env) begin(j *journal.Journal) *journal.Run {
	e.t.Helper()
	r, err := j.Begin(e.ctx, journal.NewRun{Flow: "f", Input: json.RawMessage(`{"n":1}`),
		Principal: json.RawMessage(`{"id":"u1"}`), Tenant: "t1"})
	if err != nil {
		e.t.Fatalf("Begin: %v", err)
	}
	return r
}

// run loads the stored record of a run.
func (e *env) run(id string) journal.RunRecord {
	e.t.Helper()
	rec, err := e.d.GetRun(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetRun(%s): %v", id, err)
	}
	return rec
}

// waitFor polls cond until it holds or a generous deadline passes (no timing assertion:
// the deadline only turns a hang into a failure).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// must fails the test on err.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// jsonEq reports whether two JSON documents are equal after decoding.
func jsonEq(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// stepFn returns a step body that counts its executions.
func stepFn(counter *int, mu *sync.Mutex, out string) func(context.Context) (json.RawMessage, error) {
	return func(context.Context) (json.RawMessage, error) {
		mu.Lock()
		*counter++
		mu.Unlock()
		return json.RawMessage(out), nil
	}
}
