package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// A run waits for the approval of a transfer; the person changes their mind and presses
// Stop. The run ends cancelled (its followers see the same RUN_FINISHED), and the
// approval can no longer be given. The bank app is the approval example's.
func ExampleStop() {
	url, stop := startBank()
	defer stop()
	ctx := context.Background()
	c, err := clientx.New(url)
	if err != nil {
		panic(err)
	}
	var runID string
	var pending []agui.Interrupt
	for f, err := range agent.Stream(ctx, c, bankChat, DeskIn{Message: "Send bob 500."}) {
		if err != nil {
			panic(err)
		}
		switch ev := f.Event.(type) {
		case agui.RunStarted:
			runID = ev.RunID
		case agui.RunFinished:
			if ev.Outcome != nil {
				pending = ev.Outcome.Interrupts
			}
		}
	}
	if err := agent.Stop(ctx, c, runID); err != nil {
		panic(err)
	}
	for f, err := range agent.Follow(ctx, c, runID, agent.FollowOptions{}) {
		if err != nil {
			panic(err)
		}
		if ev, ok := f.Event.(agui.RunFinished); ok && ev.Outcome != nil && ev.Outcome.Type == agui.OutcomeCancelled {
			fmt.Println("finished:", ev.Outcome.Type, ev.Result.StopReason)
		}
	}
	err = agent.Approve(ctx, c, pending[0].ID, nil)
	fmt.Println("approve after the stop is a conflict:", errors.Is(err, agent.ErrConflict))
	fmt.Println("stop again is a conflict:", errors.Is(agent.Stop(ctx, c, runID), agent.ErrConflict))
	// Output:
	// finished: cancelled cancelled
	// approve after the stop is a conflict: true
	// stop again is a conflict: true
}
