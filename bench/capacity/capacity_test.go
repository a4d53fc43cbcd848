package capacity

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"
)

// TestMain lets the test binary be a target server too: Run starts this executable
// again with ServerEnv set.
func TestMain(m *testing.M) {
	MaybeServe()
	os.Exit(m.Run())
}

// smallRamp is a ramp of seconds: short replies at a fast pace, short levels.
func smallRamp() RampOptions {
	return RampOptions{Pace: Pace{Tokens: 20, Rate: 100, Jitter: 0.2}, ToolShare: 0.5, Start: 2, Growth: 2, Refine: 1,
		Warmup: 300 * time.Millisecond, Window: 700 * time.Millisecond, Budget: 30 * time.Second}
}

// TestRampFindsTheKnee ramps against a deliberately slow raw server (every token holds a
// process-wide lock for 2 ms, so it streams at most 500 tokens/s, five conversations at
// 100 tokens/s): the ramp must find a level that fails and report the knee below it,
// with the server's figures read and the idle streams held. It asserts no timing: on a
// loaded machine the knee may be lower, but a queue that grows without bound fails a
// level past five conversations anyway.
func TestRampFindsTheKnee(t *testing.T) {
	t.Parallel()
	opts := Options{Targets: []string{"raw"}, SlowToken: 2 * time.Millisecond, Ramp: smallRamp(), Idle: 20,
		Progress: func(target, line string) { t.Logf("%s: %s", target, line) }}
	rep, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Error != "" || r.IdleError != "" {
		t.Fatalf("raw: %s %s", r.Error, r.IdleError)
	}
	if r.Ramp.Bounded || len(r.Ramp.Levels) < 2 {
		t.Fatalf("no level failed: %d levels, knee %d, stop %q", len(r.Ramp.Levels), r.Ramp.Knee, r.Ramp.Stop)
	}
	if r.Ramp.Knee >= 64 {
		t.Fatalf("knee %d: the slow server held more than it can stream", r.Ramp.Knee)
	}
	var failed bool
	for _, l := range r.Ramp.Levels {
		failed = failed || !l.OK
		if l.Tokens == 0 || !l.DelayP99.Known() || !l.ServerCores.Known() || !l.RSS.Known() || !l.Heap.Known() {
			t.Errorf("level %d: figures missing: %+v", l.Conversations, l)
		}
		if l.CommitsPerSec.Known() {
			t.Errorf("level %d: commits counted for a server without a database: %v", l.Conversations, l.CommitsPerSec)
		}
	}
	if !failed {
		t.Fatal("the ramp stopped without a failing level but says it is not bounded")
	}
	if r.Idle == nil || r.Idle.Streams != 20 || !r.Idle.RSSPerStream.Known() || !r.Idle.HeapPerStream.Known() {
		t.Fatalf("idle: %+v", r.Idle)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if !strings.Contains(table.String(), "raw") {
		t.Fatalf("the table has no raw row:\n%s", table.String())
	}
}

// TestInterleaved ramps the deliberately slow raw server and the engine without a
// journal together: both must be held at the same levels, each level on one and then
// the other with the order swapped from level to level, and the slow server's ramp must
// still find its knee. Like TestRampFindsTheKnee it asserts no timing.
func TestInterleaved(t *testing.T) {
	t.Parallel()
	ramp := smallRamp()
	ramp.Max = 16
	var mu sync.Mutex
	var order []string
	opts := Options{Targets: []string{"raw", "none"}, SlowToken: 2 * time.Millisecond, Ramp: ramp, Idle: -1, Interleave: true,
		Progress: func(target, line string) {
			t.Logf("%s: %s", target, line)
			if strings.Contains(line, " conversations: ") {
				mu.Lock()
				order = append(order, target)
				mu.Unlock()
			}
		}}
	rep, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interleaved || len(rep.Results) != 2 {
		t.Fatalf("interleaved %v, %d results", rep.Interleaved, len(rep.Results))
	}
	var levels [2][]int
	for i, r := range rep.Results {
		if r.Error != "" || r.Ramp == nil {
			t.Fatalf("%s: %s", r.Target, r.Error)
		}
		for _, l := range r.Ramp.Levels {
			levels[i] = append(levels[i], l.Conversations)
			if l.Tokens == 0 || !l.DelayP99.Known() {
				t.Errorf("%s level %d: figures missing: %+v", r.Target, l.Conversations, l)
			}
		}
	}
	if !slices.Equal(levels[0], levels[1]) || len(levels[0]) < 2 {
		t.Fatalf("the targets were held at different levels: raw %v, none %v", levels[0], levels[1])
	}
	if len(order) != 2*len(levels[0]) {
		t.Fatalf("%d levels reported for %d levels of two targets", len(order), len(levels[0]))
	}
	for k := range levels[0] {
		first, second := opts.Targets[k%2], opts.Targets[(k+1)%2]
		if order[2*k] != first || order[2*k+1] != second {
			t.Fatalf("level %d was held on %s then %s, want %s then %s (order %v)", k, order[2*k], order[2*k+1], first, second, order)
		}
	}
	raw := rep.Results[0].Ramp
	if raw.Bounded || raw.Knee >= 16 {
		t.Fatalf("the slow server's knee %d (bounded %v): it held more than it can stream", raw.Knee, raw.Bounded)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "interleaved") {
		t.Fatalf("the table does not say the ramps were interleaved:\n%s", table.String())
	}
	if _, err := Run(t.Context(), Options{Targets: []string{"raw"}, Interleave: true}); err == nil {
		t.Fatal("one target interleaved with nothing ran")
	}
}

// TestTargets runs two levels on every engine target: conversations with a tool call
// and, on durable flows, an approval given through the approval route and the resumed
// run followed, with every token accounted for, and the commits of the SQL journals
// counted.
func TestTargets(t *testing.T) {
	t.Parallel()
	for _, target := range Targets[1:] {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			if strings.HasPrefix(target, "postgres") {
				testenv.PostgresDSN(t, "the Postgres targets")
			}
			ramp := smallRamp()
			ramp.Max = 4
			if strings.HasPrefix(target, "postgres") {
				// A Postgres backend reports its commits to the statistics at most once a
				// second, and four conversations whose writes share commits make few: a
				// level must outlast a report.
				ramp.Window = 2500 * time.Millisecond
			}
			rep, err := Run(t.Context(), Options{Targets: []string{target}, Ramp: ramp, Idle: 5})
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			if r.Error != "" || r.IdleError != "" {
				t.Fatalf("%s: %s %s", target, r.Error, r.IdleError)
			}
			durable := strings.HasSuffix(target, "-durable")
			sql := strings.HasPrefix(target, "sqlite") || strings.HasPrefix(target, "postgres")
			var approvals int64
			var commits float64
			for _, l := range r.Ramp.Levels {
				if l.Errors > 0 {
					t.Fatalf("level %d: %d errors: %v", l.Conversations, l.Errors, l.ErrorText)
				}
				approvals += l.Approvals
				if l.CommitsPerSec.Known() != sql {
					t.Errorf("level %d: commits/s %v on %s", l.Conversations, l.CommitsPerSec, target)
				}
				if l.CommitsPerSec.Known() {
					commits += float64(l.CommitsPerSec)
				}
			}
			// Postgres publishes its counters about once a second, so one short level may
			// read none; the ramp as a whole must have seen commits.
			if sql && commits <= 0 {
				t.Errorf("no commits counted on %s", target)
			}
			if durable != (approvals > 0) {
				t.Errorf("%d approvals on %s", approvals, target)
			}
			if r.Idle == nil || r.Idle.Streams != 5 {
				t.Fatalf("idle: %+v", r.Idle)
			}
		})
	}
}

// TestStamps checks that a token's text carries its scheduled time to the microsecond
// and that a delta of several tokens (a follower's coalesced row) gives each its own.
func TestStamps(t *testing.T) {
	t.Parallel()
	a, b := time.UnixMicro(1_700_000_000_123_456), time.UnixMicro(1_700_000_000_223_456)
	text := string(appendToken(appendToken(nil, a), b))
	var got []int64
	n, err := tokenTimes(text, func(at int64) { got = append(got, at) })
	if err != nil || n != 2 || got[0] != a.UnixMicro() || got[1] != b.UnixMicro() {
		t.Fatalf("tokenTimes(%q) = %d %v %v", text, n, got, err)
	}
	if _, err := tokenTimes("hello world", func(int64) {}); err == nil {
		t.Fatal("plain words read as scheduled tokens")
	}
	p := Pace{Tokens: 50, Rate: 100, Jitter: 0.5, FirstToken: 10, Seed: 7}
	var last time.Time
	start := time.Unix(0, 0)
	i := 0
	for at := range p.schedule(start, p.Tokens, 1) {
		if i == 0 && at != start.Add(10*time.Millisecond) {
			t.Fatalf("first token at %v, want after the first-token wait", at.Sub(start))
		}
		if i > 0 {
			if gap := at.Sub(last); gap < 5*time.Millisecond || gap > 15*time.Millisecond {
				t.Fatalf("gap %v outside 10 ms ± 50%%", gap)
			}
		}
		last = at
		i++
	}
	if i != p.Tokens {
		t.Fatalf("%d tokens scheduled, want %d", i, p.Tokens)
	}
}

// TestUnknownFiguresAreNotZero checks that a figure that could not be read is null in
// JSON and "-" in the table, and comes back unknown.
func TestUnknownFiguresAreNotZero(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Level{Conversations: 3, DelayP99: Figure(math.NaN()), CommitsPerSec: 12})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"delayP99Ms":null`) || !strings.Contains(string(b), `"commitsPerSec":12`) {
		t.Fatalf("JSON: %s", b)
	}
	var l Level
	if err := json.Unmarshal(b, &l); err != nil || l.DelayP99.Known() || l.CommitsPerSec != 12 {
		t.Fatalf("decoded %+v, %v", l, err)
	}
	if show(Figure(math.NaN()), 1) != "-" {
		t.Fatal("an unknown figure is not shown as -")
	}
}
