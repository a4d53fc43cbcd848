package scripted_test

import (
	"context"
	"fmt"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/scripted"
)

// A two-turn script: the model first calls a tool, then answers with the result. The turn played depends only on
// how many assistant messages the request holds.
func Example() {
	model := ai.Model("assistant", scripted.New(
		scripted.Turn{ToolCalls: []ai.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"city":"Paris"}`}}},
		scripted.Turn{Text: "It is sunny in Paris.", Usage: ai.Usage{InputTokens: ptr[int64](30), OutputTokens: ptr[int64](6)}},
	), "scripted-1", ai.WithPricing(1, 2))

	req := ai.Request{Model: model.ModelID(), Messages: []ai.Message{{Role: ai.RoleUser, Content: "Weather in Paris?"}}}
	first, _ := ai.Collect(model.Provider().Stream(context.Background(), req))
	fmt.Println(first.FinishReason, first.ToolCalls[0].Name, first.ToolCalls[0].Arguments)

	req.Messages = append(req.Messages,
		ai.Message{Role: ai.RoleAssistant, ToolCalls: first.ToolCalls},
		ai.Message{Role: ai.RoleTool, ToolCallID: "call_1", Content: `{"sky":"sunny"}`},
	)
	second, _ := ai.Collect(model.Provider().Stream(context.Background(), req))
	cost, ok := model.Cost(second.Usage)
	fmt.Println(second.Text)
	fmt.Printf("cost %.6f %v\n", cost, ok)
	// Output:
	// tool_calls lookup {"city":"Paris"}
	// It is sunny in Paris.
	// cost 0.000042 true
}

func ptr[T any](v T) *T { return &v }
