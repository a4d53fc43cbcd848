package ai_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/bbc28f59/engine/internal/testenv"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// The capabilities document says a run is resumable (followed again from a seq) only
// when the follow route exists: a journal keeps the log, and ai.Install serves the route.
// Interrupts need the journal only: resume is in the agent's own protocol.
func TestCapabilitiesResumableNeedsFollowRoute(t *testing.T) {
	t.Parallel()
	model := openaitest.NewServer()
	t.Cleanup(model.Close)
	prov, err := openai.New(openai.Options{BaseURL: model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	agent := ai.Agent("solo", ai.Model("default", prov, "gpt-test"), ai.Tools(), 0)
	solo := engine.DefineStream[ai.Input, agui.Event, ai.RunResult](engine.NewUnit("solo"), "chat", engine.POST("/solo/chat"), engine.Public())
	chat := func(fx *engine.Fx, in ai.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
		return ai.Stream(fx, agent, in, out, ai.RunOptions{})
	}
	cases := []struct {
		name                 string
		journal, install     bool
		resumable, approvals bool
	}{
		{"journal and Install", true, true, true, true},
		{"journal without Install", true, false, false, true},
		{"Install without journal", false, true, false, false},
		{"neither", false, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := []engine.Option{engine.WithLogger(slog.New(slog.DiscardHandler)),
				engine.BindStream(solo, chat), ai.ServeCapabilities("/solo/capabilities", agent, solo)}
			if c.journal {
				j, err := journal.New(memory.New(), journal.Options{})
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, durable.With(j))
			}
			if c.install {
				opts = append(opts, ai.Install(ai.Options{}))
			}
			srv := testenv.Serve(t, opts...)
			res, err := http.Get(srv.URL + "/solo/capabilities")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var got ai.Capabilities
			if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d: %v", res.StatusCode, err)
			}
			eq(t, "resumable", got.Transport.Resumable, c.resumable)
			eq(t, "streaming", got.Transport.Streaming, true)
			eq(t, "interrupts", got.HumanInTheLoop.Interrupts, c.approvals)
		})
	}
}
