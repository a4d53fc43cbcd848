package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
)

type tickIn struct {
	N    int    `json:"n"`
	Fail string `json:"fail,omitempty"` // "before", "after", "done", "park-before", "park-after", "panic-before", "panic-after"
}

type tick struct {
	I int `json:"i"`
}

type tickSum struct {
	Sum int `json:"sum"`
}

var errTicks = engine.NewCode[struct {
	At int `json:"at"`
}]("TicksFailed", http.StatusConflict)

// streamApp serves a streaming flow whose handler sends n events and ends as in.Fail
// says, behind an interceptor that records each call's result.
func streamApp(t *testing.T) (*httptest.Server, *engine.App, *[]string) {
	t.Helper()
	u := engine.NewUnit("ticks")
	f := engine.DefineStream[tickIn, tick, tickSum](u, "count", engine.POST("/ticks"), engine.Public(), engine.Errors(errTicks))
	var seen []string
	record := func(def *engine.FlowDef, next engine.HandlerFunc) engine.HandlerFunc {
		return func(fx *engine.Fx, in any) (any, error) {
			out, err := next(fx, in)
			seen = append(seen, fmt.Sprintf("%s %v %v", def.ID(), out, err))
			return out, err
		}
	}
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.Intercept(record),
		engine.BindStream(f, func(fx *engine.Fx, in tickIn, out *engine.Stream[tick]) (tickSum, error) {
			switch in.Fail {
			case "before":
				return tickSum{}, errTicks.New(struct {
					At int `json:"at"`
				}{0})
			case "park-before":
				return tickSum{}, fmt.Errorf("waiting: %w", engine.ErrParked)
			case "panic-before":
				panic("boom")
			}
			sum := 0
			for i := 1; i <= in.N; i++ {
				if err := out.Send(tick{I: i}); err != nil {
					return tickSum{}, err
				}
				sum += i
			}
			switch in.Fail {
			case "after":
				return tickSum{}, errors.New("lost the counter")
			case "done":
				if err := out.Done(); err != nil {
					return tickSum{}, err
				}
				if err := out.Send(tick{I: 99}); err == nil {
					return tickSum{}, errors.New("a send after Done went through")
				}
				return tickSum{}, errTicks.New(struct {
					At int `json:"at"`
				}{in.N})
			case "park-after":
				return tickSum{}, engine.ErrParked
			case "panic-after":
				panic("boom")
			}
			return tickSum{Sum: sum}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	return srv, app, &seen
}

// TestAStreamingFlowAnswersWithItsEvents checks each way a streaming call ends on the
// wire: events then [DONE]; an envelope when nothing was sent; a stream cut short
// (no [DONE]) when the handler fails after sending; [DONE] when it called Done first.
func TestAStreamingFlowAnswersWithItsEvents(t *testing.T) {
	t.Parallel()
	srv, _, seen := streamApp(t)
	cases := []struct {
		body, header string
		status       int
		want         string
	}{
		{`{"n":3}`, "", 200, "data: {\"i\":1}\n\ndata: {\"i\":2}\n\ndata: {\"i\":3}\n\ndata: [DONE]\n\n"},
		{`{"n":0}`, "", 200, "data: [DONE]\n\n"},
		{`{"n":2}`, "1", 200, "data: {\"i\":1}\n\ndata: {\"i\":2}\n\n"},
		{`{"n":2}`, "0", 200, "data: {\"i\":1}\n\ndata: {\"i\":2}\n\ndata: [DONE]\n\n"},
		{`{"n":1,"fail":"before"}`, "", 409, `{"data":null,"error":{"code":"TicksFailed","data":{"at":0}}}`},
		{`{"n":"x"}`, "", 400, `"code":"ValidationError"`},
		{`{"n":2,"fail":"after"}`, "", 200, "data: {\"i\":1}\n\ndata: {\"i\":2}\n\n"},
		{`{"n":2,"fail":"done"}`, "", 200, "data: {\"i\":1}\n\ndata: {\"i\":2}\n\ndata: [DONE]\n\n"},
		{`{"n":1,"fail":"park-before"}`, "", 202, `{"data":null,"error":null,"meta":{"parked":true}}`},
		{`{"n":1,"fail":"park-after"}`, "", 200, "data: {\"i\":1}\n\ndata: [DONE]\n\n"},
		{`{"n":1,"fail":"panic-before"}`, "", 500, `"code":"InternalError"`},
		{`{"n":1,"fail":"panic-after"}`, "", 200, "data: {\"i\":1}\n\n"},
	}
	for _, c := range cases {
		var header []string
		if c.header != "" {
			header = []string{engine.HeaderOmitDone, c.header}
		}
		status, body := do(t, srv, "POST", "/ticks", c.body, header...)
		if status != c.status || (c.status == 200 && body != strings.TrimSpace(c.want)) || (c.status != 200 && !strings.Contains(body, c.want)) {
			t.Errorf("%s (omit %q): HTTP %d %q, want %d %q", c.body, c.header, status, body, c.status, c.want)
		}
	}
	if len(*seen) == 0 || (*seen)[0] != "ticks.count {6} <nil>" {
		t.Errorf("the interceptor saw %q first, want the result {6}", *seen)
	}
}

// TestAStreamingFlowCalledInProcess checks that an in-process call of a streaming flow
// returns its result (its events go nowhere), and the descriptor's entry for it.
func TestAStreamingFlowCalledInProcess(t *testing.T) {
	t.Parallel()
	srv, app, _ := streamApp(t)
	out, err := app.Invoke(context.Background(), "ticks.count", nil, json.RawMessage(`{"n":4}`))
	if err != nil || string(out) != `{"sum":10}` {
		t.Fatalf("Invoke: %s, %v", out, err)
	}
	if _, err := app.Invoke(context.Background(), "ticks.count", nil, json.RawMessage(`{"n":4,"fail":"after"}`)); !engine.IsCode(err, engine.CodeInternal) {
		t.Fatalf("Invoke of a failing stream: %v", err)
	}
	def, _ := app.Lookup("ticks.count")
	if !def.Streaming() || def.EventType().String() != "engine_test.tick" || def.ResultSchema().Properties["sum"] == nil {
		t.Fatalf("declaration: streaming %v, events %v, result %v", def.Streaming(), def.EventType(), def.ResultSchema())
	}
	_, body := do(t, srv, "GET", "/_engine/client.json", "")
	var d engine.Descriptor
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	f := d.Units[0].Flows[0]
	if !f.Stream || f.Events.Properties["i"] == nil || f.Result.Properties["sum"] == nil || !strings.HasPrefix(f.Output.Description, "text/event-stream") {
		t.Fatalf("descriptor: %+v", f)
	}
}

// A streaming flow's handler names its protocol in a response header before the stream
// opens; a header set after the first event is not sent.
func TestStreamHeader(t *testing.T) {
	t.Parallel()
	u := engine.NewUnit("hdr")
	f := engine.DefineStream[struct{}, tick, tickSum](u, "s", engine.POST("/hdr"), engine.Public())
	app, err := engine.New(engine.WithLogger(discardLogger()),
		engine.BindStream(f, func(fx *engine.Fx, _ struct{}, out *engine.Stream[tick]) (tickSum, error) {
			out.Header().Set("X-Protocol", "v1")
			if err := out.Send(tick{I: 1}); err != nil {
				return tickSum{}, err
			}
			out.Header().Set("X-Late", "yes")
			return tickSum{Sum: 1}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	res, err := http.Post(srv.URL+"/hdr", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if got := res.Header.Get("X-Protocol"); got != "v1" {
		t.Errorf("X-Protocol = %q, want v1", got)
	}
	if got := res.Header.Get("X-Late"); got != "" {
		t.Errorf("a header set after the stream opened went out: X-Late = %q", got)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q", ct)
	}
}
