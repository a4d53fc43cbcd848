package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
)

// elementParts builds an app of the auth, admin, journal and elements parts over a
// private in-memory database, with ticks every tick, served over loopback HTTP.
func elementParts(t *testing.T, tick string) *httptest.Server {
	t.Helper()
	t.Setenv("ENGINE_TICK", tick)
	e := memoryEnv(t)
	e.Instance = "solo"
	_, srv := serveParts(t, e, "auth", "admin", "journal", "elements")
	return srv
}

// as returns a client signed in as email.
func as(t *testing.T, base, email string) *clientx.Client {
	t.Helper()
	c, err := clientx.New(base, clientx.WithHeaders(http.Header{"Authorization": {"Bearer " + signIn(t, base, email)}}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServerElementsOverHTTP(t *testing.T) {
	srv := elementParts(t, "50ms")
	alice, bob := as(t, srv.URL, "alice@example.com"), as(t, srv.URL, "bob@example.com")
	carol, ops := as(t, srv.URL, "carol@example.com"), as(t, srv.URL, "ops@example.com")
	ctx := t.Context()

	t.Run("clock", func(t *testing.T) {
		deadline := time.Now().Add(20 * time.Second)
		var res clientx.Result[TicksOut]
		for {
			res = clientx.Call(ctx, ops, Ticks, struct{}{})
			if res.Error != nil {
				t.Fatalf("admin.ticks: %v", res.Error)
			}
			if len(res.Data.Ticks) >= 3 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(res.Data.Ticks) < 3 {
			t.Fatalf("%d ticks appended", len(res.Data.Ticks))
		}
		for i, tk := range res.Data.Ticks {
			if tk.Instance != "solo" || tk.Runs != 1 || (i > 0 && !tk.Tick.After(res.Data.Ticks[i-1].Tick)) {
				t.Fatalf("ticks %+v", res.Data.Ticks)
			}
		}
		if r := clientx.Call(ctx, bob, Ticks, struct{}{}); r.Error == nil || r.Error.Code != engine.CodeForbidden {
			t.Fatalf("admin.ticks as a user: %v, want Forbidden", r.Error)
		}
		if r := clientx.Call(ctx, ops, TickJob, durable.Tick{At: time.Now()}); r.Error == nil || r.Error.Code != engine.CodeNotFound {
			t.Fatalf("calling jobs.tick: %v, want NotFound (a scheduled flow has no route)", r.Error)
		}
	})

	t.Run("signal", func(t *testing.T) {
		res := clientx.Call(ctx, alice, Place, PlaceIn{Item: "tea"})
		if res.Status != http.StatusAccepted || !res.Meta.Parked || res.Meta.RunID == "" {
			t.Fatalf("orders.place: %d %+v %v", res.Status, res.Meta, res.Error)
		}
		id := res.Meta.RunID
		if st := clientx.GetRun(ctx, alice, id); st.Error != nil || st.Data.Status != "parked" {
			t.Fatalf("the parked run: %+v %v", st.Data, st.Error)
		}
		if st := clientx.GetRun(ctx, carol, id); st.Status != http.StatusNotFound {
			t.Fatalf("another tenant reads the run: %d %v", st.Status, st.Error)
		}
		if r := clientx.Call(ctx, carol, Pay, PayIn{RunID: id}); r.Error == nil || r.Error.Code != engine.CodeNotFound {
			t.Fatalf("another tenant pays: %v, want NotFound", r.Error)
		}
		if r := clientx.Call(ctx, bob, Pay, PayIn{RunID: "no-such-run"}); r.Error == nil || r.Error.Code != engine.CodeNotFound {
			t.Fatalf("paying an unknown run: %v, want NotFound", r.Error)
		}
		if r := clientx.Call(ctx, bob, Pay, PayIn{RunID: id}); r.Error != nil || !r.Data.OK {
			t.Fatalf("orders.pay: %+v %v", r.Data, r.Error)
		}
		var st clientx.RunState
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if st = clientx.GetRun(ctx, alice, id).Data; st.Final() {
				break
			}
		}
		var out PlaceOut
		if st.Status != "completed" || json.Unmarshal(st.Result, &out) != nil || out != (PlaceOut{Item: "tea", Paid: true, By: "bob@example.com"}) {
			t.Fatalf("the paid order: %+v (%s)", st, st.Result)
		}
		if r := clientx.Call(ctx, bob, Pay, PayIn{RunID: id}); r.Error == nil || r.Error.Code != engine.CodeConflict {
			t.Fatalf("a second payment: %v, want Conflict", r.Error)
		}
	})

	t.Run("channel", func(t *testing.T) {
		// A receiver parked before the first message gets the first two of its tenant's room.
		recv := clientx.Call(ctx, bob, Collect, CollectIn{Room: "lobby", Count: 2})
		if recv.Status != http.StatusAccepted || !recv.Meta.Parked {
			t.Fatalf("chat.collect with an empty room: %d %+v %v", recv.Status, recv.Meta, recv.Error)
		}
		for _, p := range []struct {
			c    *clientx.Client
			text string
		}{{alice, "hello"}, {carol, "other tenant"}, {bob, "hi alice"}, {alice, "bye"}} {
			if r := clientx.Call(ctx, p.c, Post, PostIn{Room: "lobby", Text: p.text}); r.Error != nil {
				t.Fatalf("chat.post: %v", r.Error)
			}
		}
		h := clientx.Call(ctx, bob, History, HistoryIn{Room: "lobby"})
		want := []ChatMessage{{1, "hello", "alice@example.com"}, {2, "hi alice", "bob@example.com"}, {3, "bye", "alice@example.com"}}
		if h.Error != nil || len(h.Data.Messages) != len(want) {
			t.Fatalf("chat.history: %+v %v", h.Data, h.Error)
		}
		for i := range want {
			if h.Data.Messages[i] != want[i] {
				t.Fatalf("chat.history: %+v, want %+v", h.Data.Messages, want)
			}
		}
		after := clientx.Call(ctx, alice, History, HistoryIn{Room: "lobby", After: 2})
		if after.Error != nil || len(after.Data.Messages) != 1 || after.Data.Messages[0].Seq != 3 {
			t.Fatalf("chat.history after 2: %+v %v", after.Data, after.Error)
		}
		other := clientx.Call(ctx, carol, History, HistoryIn{Room: "lobby"})
		if other.Error != nil || len(other.Data.Messages) != 1 || other.Data.Messages[0].Text != "other tenant" {
			t.Fatalf("the other tenant's room: %+v %v", other.Data, other.Error)
		}
		var st clientx.RunState
		for deadline := time.Now().Add(10 * time.Second); !st.Final() && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			st = clientx.GetRun(ctx, bob, recv.Meta.RunID).Data
		}
		var got CollectOut
		if st.Status != "completed" || json.Unmarshal(st.Result, &got) != nil || len(got.Messages) != 2 ||
			got.Messages[0] != want[0] || got.Messages[1] != want[1] {
			t.Fatalf("chat.collect: %+v (%s), want %+v", st, st.Result, want[:2])
		}
		if r := clientx.Call(ctx, bob, Collect, CollectIn{Room: "lobby"}); r.Error == nil || r.Error.Code != engine.CodeValidation {
			t.Fatalf("chat.collect of 0 messages: %v, want ValidationError", r.Error)
		}
	})
}
