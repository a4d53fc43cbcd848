package journaltest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
)

func queryCases() []testCase {
	return []testCase{
		{"Queries/ListRunsPagesNewestFirstWithFilters", queriesListRunsPagesNewestFirstWithFilters},
		{"Queries/PendingParksAreUndecidedDecisionsNewestFirst", queriesPendingParksAreUndecidedDecisionsNewestFirst},
		{"Queries/RunStreamsAndHeldLeases", queriesRunStreamsAndHeldLeases},
	}
}

// queriesListRunsPagesNewestFirstWithFilters is the case "Queries/ListRunsPagesNewestFirstWithFilters": list runs pages newest first with filters.
func queriesListRunsPagesNewestFirstWithFilters(t *testing.T, e *env) {
	base := e.clock.Now()
	// 7 runs; runs 2 and 3 share a creation time, so the id breaks the tie. Statuses
	// are stored as given, including one this package does not name.
	statuses := []journal.Status{journal.StatusRunning, journal.StatusParked, journal.StatusCompleted,
		journal.StatusFailed, "cancelled", journal.StatusCompleted, journal.StatusCompleted}
	var want []string // newest first
	for i, st := range statuses {
		at := base.Add(time.Duration(i) * time.Second)
		if i == 3 {
			at = base.Add(2 * time.Second)
		}
		rec := journal.RunRecord{ID: fmt.Sprintf("run-%d", i), Flow: []string{"a.x", "b.y"}[i%2],
			Tenant: []string{"t1", "t2"}[i/4], Status: st, Input: json.RawMessage(`{}`), CreatedAt: at, UpdatedAt: at}
		must(t, "InsertRun", e.d.InsertRun(e.ctx, rec))
		want = append([]string{rec.ID}, want...)
	}
	// run-3 and run-2 share a time: descending id puts run-3 first, which the
	// reversed insertion order already has.
	var got []string
	after := journal.Cursor{}
	for range 10 {
		page, err := e.d.ListRuns(e.ctx, journal.RunQuery{After: after, Limit: 3})
		must(t, "ListRuns", err)
		if len(page) > 3 {
			t.Fatalf("page of %d runs, limit 3", len(page))
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		if len(page) < 3 {
			break
		}
		last := page[len(page)-1]
		after = journal.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	ids := func(q journal.RunQuery) []string {
		t.Helper()
		q.Limit = 100
		rs, err := e.d.ListRuns(e.ctx, q)
		must(t, "ListRuns", err)
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for name, c := range map[string]struct {
		q    journal.RunQuery
		want []string
	}{
		"status":           {journal.RunQuery{Status: journal.StatusCompleted}, []string{"run-6", "run-5", "run-2"}},
		"other status":     {journal.RunQuery{Status: "cancelled"}, []string{"run-4"}},
		"flow":             {journal.RunQuery{Flow: "b.y"}, []string{"run-5", "run-3", "run-1"}},
		"tenant":           {journal.RunQuery{Tenant: "t2"}, []string{"run-6", "run-5", "run-4"}},
		"all three":        {journal.RunQuery{Status: journal.StatusCompleted, Flow: "a.x", Tenant: "t2"}, []string{"run-6"}},
		"none match":       {journal.RunQuery{Flow: "nope"}, nil},
		"status after tie": {journal.RunQuery{Status: journal.StatusCompleted, After: journal.Cursor{CreatedAt: base.Add(2 * time.Second), ID: "run-3"}}, []string{"run-2"}},
		"after the last":   {journal.RunQuery{After: journal.Cursor{CreatedAt: base, ID: "run-0"}}, nil},
		"after a lost id":  {journal.RunQuery{After: journal.Cursor{CreatedAt: base.Add(5 * time.Second), ID: "gone"}}, []string{"run-4", "run-3", "run-2", "run-1", "run-0"}},
	} {
		if got := ids(c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	for _, n := range []int{0, -1} {
		if rs, err := e.d.ListRuns(e.ctx, journal.RunQuery{Limit: n}); err != nil || len(rs) != 0 {
			t.Fatalf("ListRuns with limit %d = %d runs, %v", n, len(rs), err)
		}
		if ps, err := e.d.PendingParks(e.ctx, journal.ParkQuery{Limit: n}); err != nil || len(ps) != 0 {
			t.Fatalf("PendingParks with limit %d = %d parks, %v", n, len(ps), err)
		}
	}
	rs, err := e.d.ListRuns(e.ctx, journal.RunQuery{Limit: 1})
	must(t, "ListRuns", err)
	if len(rs) != 1 || rs[0].Status != journal.StatusCompleted || rs[0].Tenant != "t2" || rs[0].Flow != "a.x" || !rs[0].CreatedAt.Equal(base.Add(6*time.Second)) {
		t.Fatalf("newest run = %+v", rs)
	}
}

// queriesPendingParksAreUndecidedDecisionsNewestFirst is the case "Queries/PendingParksAreUndecidedDecisionsNewestFirst": pending parks are undecided decisions newest first.
func queriesPendingParksAreUndecidedDecisionsNewestFirst(t *testing.T, e *env) {
	now := e.clock.Now()
	park := func(run, tenant string, keys ...string) {
		t.Helper()
		must(t, "InsertRun", e.d.InsertRun(e.ctx, journal.RunRecord{ID: run, Flow: "f", Tenant: tenant, Status: journal.StatusRunning,
			LeaseOwner: "a", LeaseExpires: now.Add(time.Hour), Epoch: 1, CreatedAt: now, UpdatedAt: now}))
		for _, k := range keys {
			e.clock.Advance(time.Second)
			p := journal.ParkRecord{RunID: run, Key: k, Deadline: now.Add(time.Hour), Payload: json.RawMessage(`{"tool":"x"}`), CreatedAt: e.clock.Now()}
			if k == "signal" {
				p.Topic = "paid/" + run
			}
			_, err := e.d.InsertPark(e.ctx, journal.Fence{RunID: run, Owner: "a", Epoch: 1}, p)
			must(t, "InsertPark", err)
		}
	}
	park("r1", "t1", "k1", "k2", "signal")
	park("r2", "t2", "k1")
	park("r3", "t1", "k1", "k2")
	_, err := e.d.Decide(e.ctx, "r3", "k1", "a", journal.Decision{Kind: journal.DecisionApprove, DecidedAt: e.clock.Now()}, e.clock.Now())
	must(t, "Decide", err)
	list := func(q journal.ParkQuery) []string {
		t.Helper()
		ps, err := e.d.PendingParks(e.ctx, q)
		must(t, "PendingParks", err)
		var out []string
		for _, p := range ps {
			if p.Decision != nil || p.Topic != "" || string(p.Payload) != `{"tool":"x"}` {
				t.Fatalf("pending park = %+v", p)
			}
			out = append(out, p.RunID+"/"+p.Key)
		}
		return out
	}
	if got, want := list(journal.ParkQuery{Limit: 10}), []string{"r3/k2", "r2/k1", "r1/k2", "r1/k1"}; !slices.Equal(got, want) {
		t.Fatalf("pending = %v, want %v", got, want)
	}
	if got, want := list(journal.ParkQuery{Tenant: "t1", Limit: 10}), []string{"r3/k2", "r1/k2", "r1/k1"}; !slices.Equal(got, want) {
		t.Fatalf("pending of t1 = %v, want %v", got, want)
	}
	first, err := e.d.PendingParks(e.ctx, journal.ParkQuery{Limit: 2})
	must(t, "PendingParks", err)
	last := first[len(first)-1]
	after := journal.Cursor{CreatedAt: last.CreatedAt, ID: last.RunID, Key: last.Key}
	if got, want := list(journal.ParkQuery{After: after, Limit: 2}), []string{"r1/k2", "r1/k1"}; !slices.Equal(got, want) {
		t.Fatalf("second page = %v, want %v", got, want)
	}
	if got := list(journal.ParkQuery{Tenant: "t3", Limit: 10}); len(got) != 0 {
		t.Fatalf("pending of an unknown tenant = %v", got)
	}
}

// queriesRunStreamsAndHeldLeases is the case "Queries/RunStreamsAndHeldLeases": run streams and held leases.
func queriesRunStreamsAndHeldLeases(t *testing.T, e *env) {
	now := e.clock.Now()
	for i, s := range []journal.Stream{{ID: "s2", RunID: "r1"}, {ID: "s1", RunID: "r1"}, {ID: "s3", RunID: "r2"}, {ID: "s4"}} {
		s.CreatedAt = now.Add(time.Duration(i) * time.Second)
		must(t, "CreateStream", e.d.CreateStream(e.ctx, s))
	}
	ss, err := e.d.RunStreams(e.ctx, "r1")
	must(t, "RunStreams", err)
	if len(ss) != 2 || ss[0].ID != "s2" || ss[1].ID != "s1" || ss[0].RunID != "r1" {
		t.Fatalf("streams of r1 = %+v", ss)
	}
	if ss, err := e.d.RunStreams(e.ctx, ""); err != nil || len(ss) != 0 {
		t.Fatalf("streams of no run = %+v, %v", ss, err)
	}
	for _, l := range []struct {
		name, owner string
		ttl         time.Duration
	}{{"scheduler", "i1", time.Minute}, {"clock", "i2", time.Minute}, {"old", "i3", -time.Second}} {
		ok, err := e.d.ClaimLease(e.ctx, l.name, l.owner, now.Add(-time.Hour), now.Add(l.ttl))
		if err != nil || !ok {
			t.Fatalf("ClaimLease %s: %v %v", l.name, ok, err)
		}
	}
	must(t, "ReleaseLease", e.d.ReleaseLease(e.ctx, "clock", "i2"))
	ok, err := e.d.ClaimLease(e.ctx, "clock", "i2", now, now.Add(30*time.Second))
	if err != nil || !ok {
		t.Fatalf("ClaimLease again: %v %v", ok, err)
	}
	for i, r := range []struct {
		owner string
		exp   time.Duration
		st    journal.Status
	}{{"i1", time.Minute, journal.StatusRunning}, {"i1", 2 * time.Minute, journal.StatusRunning},
		{"i2", -time.Second, journal.StatusRunning}, {"", 0, journal.StatusParked}, {"i3", time.Minute, journal.StatusRunning}} {
		must(t, "InsertRun", e.d.InsertRun(e.ctx, journal.RunRecord{ID: fmt.Sprintf("h%d", i), Flow: "f", Status: r.st,
			LeaseOwner: r.owner, LeaseExpires: now.Add(r.exp), CreatedAt: now, UpdatedAt: now}))
	}
	leases, owners, err := e.d.HeldLeases(e.ctx, now)
	must(t, "HeldLeases", err)
	if len(leases) != 2 || leases[0].Name != "clock" || leases[0].Owner != "i2" || !leases[0].Expires.Equal(now.Add(30*time.Second)) ||
		leases[1].Name != "scheduler" || leases[1].Owner != "i1" {
		t.Fatalf("leases = %+v", leases)
	}
	if len(owners) != 2 || owners[0] != (journal.OwnerRecord{Owner: "i1", Runs: 2, Expires: now.Add(2 * time.Minute)}) ||
		owners[1].Owner != "i3" || owners[1].Runs != 1 {
		t.Fatalf("owners = %+v", owners)
	}
}
