package agent_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// A flow that streams its agent run is called with Stream rather than clientx.Call,
// through the same client: its route, headers and token. The desk app's chat flow is
// declared as engine.DefineStream[DeskIn, agui.Event, ai.RunResult](desk, "chat", engine.POST("/desk/chat")),
// and its scripted model answers "Hello from the desk.".
func ExampleStream() {
	app, url, stop := startDesk()
	defer stop()
	signedIn := clientx.WithAuth(clientx.Auth{GetToken: func(context.Context) (string, error) { return "good", nil }})
	c, err := clientx.ForApp(app, url, signedIn)
	if err != nil {
		panic(err)
	}
	var text strings.Builder
	for f, err := range agent.Stream(context.Background(), c, deskChat, DeskIn{Message: "Hello?"}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch ev := f.Event.(type) {
		case agui.RunStarted:
			fmt.Println("started")
		case agui.TextMessageContent:
			text.WriteString(ev.Delta) // one frame per token
		case agui.RunFinished:
			fmt.Println("finished:", ev.Result.StopReason)
		}
	}
	fmt.Println(text.String())
	// Output:
	// started
	// finished: completed
	// Hello from the desk.
}

// A call refused before its stream starts ends the sequence with the envelope's error,
// as clientx.Call would report it: here the caller has no token.
func ExampleStream_refused() {
	app, url, stop := startDesk()
	defer stop()
	c, err := clientx.ForApp(app, url)
	if err != nil {
		panic(err)
	}
	for _, err := range agent.Stream(context.Background(), c, deskChat, DeskIn{Message: "Hello?"}) {
		if e := engine.AsError(err); e != nil {
			fmt.Println(e.Code, e.Status, clientx.IsTransportError(e))
		}
	}
	// Output:
	// Unauthorized 401 false
}
