package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/clientx"
)

// TestMultiInstanceElements runs two real processes of this app on one Postgres database:
// ticks every second, each exactly once with none missed while one instance is killed and
// restarted; a signal sent through B wakes the run parked on A; messages published from
// both instances are read back from each with no loss, no duplicate and in order.
func TestMultiInstanceElements(t *testing.T) {
	dsn := os.Getenv("ENGINE_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("ENGINE_TEST_POSTGRES_DSN is not set: the multi-instance test needs Postgres (CI sets it)")
	}
	if testing.Short() {
		t.Skip("-short: the multi-instance test builds and starts processes")
	}
	dsn = isolatedSchema(t, dsn)
	bin := buildBinary(t)
	env := []string{
		"ENGINE_JOURNAL=" + dsn,
		"ENGINE_TICK=1s",
		"ENGINE_LEASE_TTL=2s",
		"ENGINE_JWT_KEY=multi-instance-test-key-0123456789abcdef",
	}
	a := startInstance(t, bin, "a", env)
	b := startInstance(t, bin, "b", env)
	ctx := t.Context()
	client := func(base, email string) *clientx.Client {
		c, err := clientx.New(base, clientx.WithHeaders(http.Header{"Authorization": {"Bearer " + signIn(t, base, email)}}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	aliceA, bobB := client(a.url, "alice@example.com"), client(b.url, "bob@example.com")

	// Signal: park on A, pay through B, poll A.
	placed := clientx.Call(ctx, aliceA, Place, PlaceIn{Item: "tea"})
	if !placed.Meta.Parked {
		t.Fatalf("orders.place on A: %+v %v", placed.Meta, placed.Error)
	}
	if r := clientx.Call(ctx, bobB, Pay, PayIn{RunID: placed.Meta.RunID}); r.Error != nil {
		t.Fatalf("orders.pay on B: %v", r.Error)
	}
	var st clientx.RunState
	for deadline := time.Now().Add(20 * time.Second); !st.Final() && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st = clientx.GetRun(ctx, aliceA, placed.Meta.RunID).Data
	}
	if st.Status != "completed" || !strings.Contains(string(st.Result), `"by":"bob@example.com"`) {
		t.Fatalf("the order paid through B, read on A: %+v (%s)", st, st.Result)
	}

	// Channel: 2 × 200 messages from both instances at once.
	const per = 200
	var wg sync.WaitGroup
	for _, p := range []struct {
		c    *clientx.Client
		name string
	}{{aliceA, "a"}, {client(b.url, "alice@example.com"), "b"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if r := clientx.Call(ctx, p.c, Post, PostIn{Room: "load", Text: fmt.Sprintf("%s-%d", p.name, i)}); r.Error != nil {
					t.Errorf("chat.post: %v", r.Error)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range []*clientx.Client{aliceA, bobB} {
		var all []ChatMessage
		for {
			h := clientx.Call(ctx, c, History, HistoryIn{Room: "load", After: int64(len(all))})
			if h.Error != nil {
				t.Fatalf("chat.history: %v", h.Error)
			}
			if len(h.Data.Messages) == 0 {
				break
			}
			all = append(all, h.Data.Messages...)
		}
		next := map[string]int{}
		for i, m := range all {
			if m.Seq != int64(i+1) {
				t.Fatalf("message %d has seq %d: a gap or a duplicate", i+1, m.Seq)
			}
			who, n, _ := strings.Cut(m.Text, "-")
			if k, _ := strconv.Atoi(n); k != next[who] {
				t.Fatalf("message %q after %s-%d: out of its poster's order", m.Text, who, next[who]-1)
			}
			next[who]++
		}
		if len(all) != 2*per {
			t.Fatalf("read %d messages, want %d", len(all), 2*per)
		}
	}

	// Clock: let ticks run, kill A, restart it, and check no tick is missing or doubled.
	ops := client(b.url, "ops@example.com")
	ticks := func() []TickRecord {
		r := clientx.Call(ctx, ops, Ticks, struct{}{})
		if r.Error != nil {
			t.Fatalf("admin.ticks: %v", r.Error)
		}
		return r.Data.Ticks
	}
	waitTicks := func(n int) {
		for deadline := time.Now().Add(time.Duration(n+20) * time.Second); len(ticks()) < n; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d ticks after waiting for %d", len(ticks()), n)
			}
		}
	}
	waitTicks(5)
	a.kill(t)
	waitTicks(9)
	startInstance(t, bin, "a", env)
	waitTicks(14)
	got := ticks()
	by := map[string]int{}
	for i, tk := range got {
		by[tk.Instance]++
		if i > 0 && !tk.Tick.Equal(got[i-1].Tick.Add(time.Second)) {
			t.Fatalf("tick %s follows %s: a tick was missed", tk.Tick, got[i-1].Tick)
		}
	}
	t.Logf("%d ticks, by instance: %v", len(got), by)
}
