package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// A run parks on a tool that needs approval: the reply that carried the interrupt has
// ended. The application shows the tool and its arguments, approves with the interrupt
// id, and follows the run's log from where the live stream stopped to the run's end.
func Example_approveAndFollow() {
	ctx := context.Background()
	c, err := clientx.New("https://app.example.com", clientx.WithHeaders(http.Header{"Authorization": {"Bearer …"}}))
	if err != nil {
		panic(err)
	}
	res, err := http.Post(c.BaseURL()+"/chat", "application/json", strings.NewReader(`{"message":"send bob 500"}`))
	if err != nil {
		panic(err)
	}
	var runID string
	var last int64
	var pending []agui.Interrupt
	for f, err := range agent.ReadFrames(res.Body) {
		if err != nil {
			break
		}
		last = max(last, f.Seq)
		switch ev := f.Event.(type) {
		case agui.RunStarted:
			runID = ev.RunID
		case agui.RunFinished:
			if ev.Outcome != nil && ev.Outcome.Type == agui.OutcomeInterrupt {
				pending = ev.Outcome.Interrupts
			}
		}
	}
	res.Body.Close()
	for _, in := range pending {
		fmt.Println("approve", in.Payload.Tool, string(in.Payload.Args), "?")
		// ErrConflict: someone decided first, which is fine here.
		if err := agent.Approve(ctx, c, in.ID, nil); err != nil && !errors.Is(err, agent.ErrConflict) {
			panic(err)
		}
	}
	for f, err := range agent.Follow(ctx, agent.FollowURL(c.BaseURL(), runID), agent.FollowOptions{
		Header: http.Header{"Authorization": {"Bearer …"}}, LastEventID: last,
	}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(f.Seq, f.Event.Type())
	}
}
