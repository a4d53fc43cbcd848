package ai_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

type FanIn struct {
	N int `json:"n"`
}

var (
	fanUnit  = engine.NewUnit("fan")
	fanTool  = engine.Define[FanIn, bool](fanUnit, "out", engine.Public())
	fanAgent = engine.DefineStream[ai.Input, agui.Event, ai.RunResult](fanUnit, "chat", engine.POST("/fan/chat"), engine.Public())
)

// A tool that sets the state from several goroutines at once: every change is emitted,
// and the client, applying the deltas in the order it gets them, ends with the state the
// server holds (the model's next turn is shown it). Run with -race, as CI does.
func TestSetStateFromGoroutinesKeepsTheClientInStep(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []openaitest.Request
	fake := openaitest.NewServerFunc(func(req openaitest.Request) openaitest.Turn {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req)
		if len(seen) == 1 {
			return openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "c1", Name: "fan_out", Arguments: `{"n":16}`}}}
		}
		return openaitest.Turn{Text: "done"}
	})
	t.Cleanup(fake.Close)
	prov, err := openai.New(openai.Options{BaseURL: fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	agent := ai.Agent("fan", ai.Model("m", prov, "gpt"), ai.Tools(fanTool), 0)
	app, err := engine.New(engine.WithLogger(slog.New(slog.DiscardHandler)),
		engine.Bind(fanTool, func(fx *engine.Fx, in FanIn) (bool, error) {
			var wg sync.WaitGroup
			for i := range in.N {
				wg.Go(func() {
					// Every goroutine writes "last", so the order of the patches decides it.
					if err := ai.SetState(fx, "last", i); err != nil {
						t.Error(err)
					}
					if err := ai.SetState(fx, fmt.Sprint("k", i), i); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			return true, nil
		}),
		engine.BindStream(fanAgent, func(fx *engine.Fx, in ai.Input, out *engine.Stream[agui.Event]) (ai.RunResult, error) {
			return ai.Stream(fx, agent, in, out, ai.RunOptions{})
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	res, err := http.Post(srv.URL+"/fan/chat", "application/json",
		strings.NewReader(`{"state":{"a":1},"messages":[{"role":"user","content":"go"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	state := map[string]json.RawMessage{}
	deltas := 0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Type     string          `json:"type"`
			Snapshot json.RawMessage `json:"snapshot"`
			Delta    json.RawMessage `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("frame %s: %v", data, err)
		}
		switch ev.Type {
		case "STATE_SNAPSHOT":
			state = map[string]json.RawMessage{}
			if err := json.Unmarshal(ev.Snapshot, &state); err != nil {
				t.Fatal(err)
			}
		case "STATE_DELTA":
			var patch []struct {
				Op    string          `json:"op"`
				Path  string          `json:"path"`
				Value json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal(ev.Delta, &patch); err != nil {
				t.Fatal(err)
			}
			for _, op := range patch {
				if op.Op != "add" {
					t.Fatalf("patch op %q", op.Op)
				}
				state[strings.TrimPrefix(op.Path, "/")] = op.Value
				deltas++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if deltas != 32 {
		t.Fatalf("%d patches, want 32 (two per goroutine)", deltas)
	}
	client, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d model calls, want 2", len(seen))
	}
	if got, want := seen[1].Messages[0].Text(), "Shared state (JSON): "+string(client); got != want {
		t.Fatalf("the server's state and the client's differ:\nserver %s\nclient %s", got, want)
	}
}
