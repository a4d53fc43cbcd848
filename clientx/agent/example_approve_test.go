package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/scripted"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// A run parks on a tool that needs approval: its stream ends with the interrupt. The
// application shows the tool and its arguments, approves with the interrupt id, and
// follows the run's log from the stream's last id to the end of the resumed run. The
// bank app's chat flow is durable and streams; its transfer tool needs approval above
// 100, and its scripted model asks for a transfer of 500 to bob.
func Example_approveAndFollow() {
	url, stop := startBank()
	defer stop()
	ctx := context.Background()
	c, err := clientx.New(url)
	if err != nil {
		panic(err)
	}
	var runID string
	var last int64 // the id of the last stored row the stream carried
	var pending []agui.Interrupt
	for f, err := range agent.Stream(ctx, c, bankChat, DeskIn{Message: "Send bob 500."}) {
		if err != nil {
			panic(err)
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
	for _, in := range pending {
		fmt.Println("approve", in.Payload.Tool, string(in.Payload.Args), "?")
		// ErrConflict: someone decided first, which is fine here.
		if err := agent.Approve(ctx, c, in.ID, nil); err != nil && !errors.Is(err, agent.ErrConflict) {
			panic(err)
		}
	}
	var text strings.Builder
	for f, err := range agent.Follow(ctx, c, runID, agent.FollowOptions{LastEventID: last}) {
		if err != nil {
			panic(err)
		}
		switch ev := f.Event.(type) {
		case agui.ToolCallResult:
			fmt.Println("tool:", ev.Content)
		case agui.TextMessageContent:
			text.WriteString(ev.Delta) // the log stores deltas coalesced
		case agui.RunFinished:
			fmt.Println("finished:", ev.Result.StopReason)
		}
	}
	fmt.Println(text.String())
	// Output:
	// approve bank.transfer {"to":"bob","amount":500} ?
	// tool: {"ok":true,"to":"bob","amount":500}
	// finished: completed
	// Sent 500 to bob.
}

// The bank app of the approval example.
var (
	bankUnit     = engine.NewUnit("bank")
	bankChat     = engine.DefineStream[DeskIn, agui.Event, ai.RunResult](bankUnit, "chat", engine.POST("/bank/chat"), engine.Public(), engine.Durable())
	bankTransfer = engine.Define[TransferIn, TransferOut](bankUnit, "transfer", engine.Public())
)

// TransferIn is the input of the bank's transfer tool.
type TransferIn struct {
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// TransferOut is the output of the bank's transfer tool.
type TransferOut struct {
	OK     bool    `json:"ok"`
	To     string  `json:"to"`
	Amount float64 `json:"amount"`
}

// startBank serves the bank app on the memory journal: its URL and how to stop it.
func startBank() (string, func()) {
	model := ai.Model("bank", scripted.Func(func(req ai.Request) scripted.Turn {
		if last := req.Messages[len(req.Messages)-1]; last.Role == ai.RoleTool {
			return scripted.Turn{Text: "Sent 500 to bob."}
		}
		return scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "bank_transfer", Arguments: `{"to":"bob","amount":500}`}}}
	}), "scripted-1")
	teller := ai.Agent("teller", model, ai.Tools(bankTransfer), 0)
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		panic(err)
	}
	app, err := engine.New(
		engine.WithLogger(slog.New(slog.DiscardHandler)),
		durable.With(j),
		ai.Install(ai.Options{PublicApprovals: true}), // an example without sign-in
		engine.Bind(bankTransfer, func(_ *engine.Fx, in TransferIn) (TransferOut, error) {
			return TransferOut{OK: true, To: in.To, Amount: in.Amount}, nil
		}, ai.Approval(func(in TransferIn) bool { return in.Amount > 100 })),
		engine.BindStream(bankChat, func(fx *engine.Fx, in DeskIn, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, teller, in.Message, out, ai.RunOptions{})
		}),
	)
	if err != nil {
		panic(err)
	}
	if err := app.Start(context.Background()); err != nil {
		panic(err)
	}
	srv := httptest.NewServer(app.Handler())
	return srv.URL, func() {
		srv.Close()
		_ = app.Close(context.Background())
	}
}
