package durable_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bbc28f59/engine/internal/testenv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

type (
	PayIn struct {
		RunID string `json:"runId"`
	}
	Paid struct {
		By string `json:"by"`
	}
	WaitOut struct {
		Item string `json:"item"`
		By   string `json:"by"`
	}
	PostIn struct {
		Room string `json:"room"`
		Text string `json:"text"`
	}
	Posted struct {
		Seq int64 `json:"seq"`
	}
	CollectOut struct {
		Texts []string `json:"texts"`
	}
)

var (
	paidSignal = durable.NewSignal[Paid]("paid", durable.Once())
	roomChan   = durable.NewChannel[string]("room", durable.PerTenant())

	elems       = engine.NewUnit("elems")
	waitFlow    = engine.Define[PlaceIn, WaitOut](elems, "wait", engine.Durable())
	payFlow     = engine.Define[PayIn, struct{}](elems, "pay")
	postFlow    = engine.Define[PostIn, Posted](elems, "post")
	collectFlow = engine.Define[PostIn, CollectOut](elems, "collect", engine.Durable())
)

// newElements serves flows that wait for a signal, set it, publish to a channel and
// receive from it, with callers named by headerAuth.
func newElements(t *testing.T) (*httptest.Server, *journal.Journal) {
	t.Helper()
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.Serve(t, durable.With(j), engine.WithAuthenticator(headerAuth{}),
		engine.Bind(waitFlow, func(fx *engine.Fx, in PlaceIn) (WaitOut, error) {
			p, err := paidSignal.Wait(fx, durable.RunOf(fx).ID, time.Time{})
			if errors.Is(err, durable.ErrTimedOut) {
				return WaitOut{}, engine.NewError(engine.CodeConflict, map[string]any{"message": "not paid in time"})
			}
			return WaitOut{Item: in.Item, By: p.By}, err
		}),
		engine.Bind(payFlow, func(fx *engine.Fx, in PayIn) (struct{}, error) {
			return struct{}{}, paidSignal.Set(fx, in.RunID, Paid{By: fx.Principal().ID})
		}),
		engine.Bind(postFlow, func(fx *engine.Fx, in PostIn) (Posted, error) {
			seq, err := roomChan.Publish(fx, in.Room, in.Text)
			return Posted{Seq: seq}, err
		}),
		engine.Bind(collectFlow, func(fx *engine.Fx, in PostIn) (CollectOut, error) {
			var out CollectOut
			for len(out.Texts) < 2 {
				m, err := roomChan.Receive(fx, in.Room, time.Time{})
				if err != nil {
					return CollectOut{}, err
				}
				out.Texts = append(out.Texts, m.Value)
			}
			return out, nil
		}))
	return srv, j
}

func asClient(t *testing.T, srv *httptest.Server, as string) *clientx.Client {
	t.Helper()
	c, err := clientx.New(srv.URL, clientx.WithHeaders(http.Header{"X-As": {as}}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pollRun polls the run's state until it ends, as a client would.
func pollRun(t *testing.T, c *clientx.Client, id string) clientx.RunState {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res := clientx.GetRun(t.Context(), c, id)
		if res.Error != nil {
			t.Fatalf("GetRun: %v", res.Error)
		}
		if res.Data.Final() {
			return res.Data
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("run %s did not end", id)
	return clientx.RunState{}
}

// A parked flow waits for its signal; another caller's flow sets it; the first caller
// polls the run's end. A second value of a once signal is Conflict.
func TestSignalResumesAParkedFlow(t *testing.T) {
	t.Parallel()
	srv, _ := newElements(t)
	alice, bob := asClient(t, srv, "alice,acme"), asClient(t, srv, "bob,acme")
	res := clientx.Call(t.Context(), alice, waitFlow, PlaceIn{Item: "tea"})
	if !res.OK() || !res.Meta.Parked {
		t.Fatalf("wait did not park: %+v %v", res.Meta, res.Error)
	}
	if st := clientx.GetRun(t.Context(), alice, res.Meta.RunID); st.Data.Status != "parked" {
		t.Fatalf("before the signal: %+v %v", st.Data, st.Error)
	}
	if pay := clientx.Call(t.Context(), bob, payFlow, PayIn{RunID: res.Meta.RunID}); pay.Error != nil {
		t.Fatalf("pay: %v", pay.Error)
	}
	st := pollRun(t, alice, res.Meta.RunID)
	var out WaitOut
	if st.Status != "completed" || json.Unmarshal(st.Result, &out) != nil || out != (WaitOut{Item: "tea", By: "bob"}) {
		t.Fatalf("after the signal: %+v (%s)", st, st.Result)
	}
	again := clientx.Call(t.Context(), bob, payFlow, PayIn{RunID: res.Meta.RunID})
	if again.Error == nil || again.Error.Code != engine.CodeConflict {
		t.Fatalf("second pay: %v, want Conflict", again.Error)
	}
}

// Every receiving run gets every message of its tenant's room once, in order; another
// tenant's room of the same name is another channel.
func TestChannelDeliversToEachReceivingRunInOrder(t *testing.T) {
	t.Parallel()
	srv, _ := newElements(t)
	alice, carol := asClient(t, srv, "alice,acme"), asClient(t, srv, "carol,globex")
	var runs []string
	for range 2 {
		res := clientx.Call(t.Context(), alice, collectFlow, PostIn{Room: "r"})
		if !res.Meta.Parked {
			t.Fatalf("collect did not park: %+v %v", res.Meta, res.Error)
		}
		runs = append(runs, res.Meta.RunID)
	}
	for _, p := range []struct {
		c    *clientx.Client
		text string
	}{{carol, "other tenant"}, {alice, "one"}, {alice, "two"}, {alice, "three"}} {
		if res := clientx.Call(t.Context(), p.c, postFlow, PostIn{Room: "r", Text: p.text}); res.Error != nil {
			t.Fatalf("post: %v", res.Error)
		}
	}
	for _, id := range runs {
		st := pollRun(t, alice, id)
		var out CollectOut
		if st.Status != "completed" || json.Unmarshal(st.Result, &out) != nil || len(out.Texts) != 2 || out.Texts[0] != "one" || out.Texts[1] != "two" {
			t.Fatalf("run %s: %+v (%s)", id, st, st.Result)
		}
	}
}
