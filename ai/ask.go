package ai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
)

// AskOptions are the options of [Ask].
type AskOptions struct {
	// Name names the prompt in errors and in the journal step.
	Name string
	// System is the system prompt.
	System string
	// MaxCostPerCall fails the call with [*BudgetExceededError] when its cost exceeds it;
	// zero means no limit.
	MaxCostPerCall float64
	// Retries is how many times [AskAs] asks again after a reply that does not validate:
	// zero means [DefaultOutputRetries], a negative value none. [Ask] ignores it.
	Retries int
}

// BudgetExceededError is returned by [Ask] when a prompt cost more than its
// MaxCostPerCall. Its name is AiBudgetExceededError, as the reference contract names it.
type BudgetExceededError struct {
	Prompt string
	Cost   float64
	Max    float64
}

// Name returns the error's name in the reference contract's vocabulary.
func (*BudgetExceededError) Name() string { return "AiBudgetExceededError" }

func (e *BudgetExceededError) Error() string {
	return fmt.Sprintf("ai: prompt %s exceeded maxCostPerCall", e.Prompt)
}

// Ask sends one prompt to model and returns the whole text reply. Inside a durable flow
// the reply is a journal step, so a replay does not call the model again.
func Ask(fx *engine.Fx, model *ModelDef, prompt string, opts AskOptions) (string, error) {
	if err := model.Validate(); err != nil {
		return "", err
	}
	name := opts.Name
	if name == "" {
		name = "ask"
	}
	type answer struct {
		Text string  `json:"text"`
		Cost float64 `json:"cost"`
	}
	a, err := durable.Step(fx, "ask:"+name, func(ctx context.Context) (answer, error) {
		reply, err := Collect(model.stream(ctx, Request{Model: model.ModelID(), Reasoning: model.reasoning, System: opts.System,
			Messages: []Message{{Role: RoleUser, Content: prompt}}}))
		if err != nil {
			return answer{}, err
		}
		cost, _ := model.Cost(reply.Usage)
		return answer{Text: reply.Text, Cost: cost}, nil
	})
	if err != nil {
		return "", err
	}
	if opts.MaxCostPerCall > 0 && a.Cost > opts.MaxCostPerCall {
		return "", &BudgetExceededError{Prompt: name, Cost: a.Cost, Max: opts.MaxCostPerCall}
	}
	return a.Text, nil
}

// StreamText is the text stream variant of a streaming flow: it writes model's reply to
// prompt to out as it arrives, each piece of text one data: frame holding a JSON string,
// and returns the whole text. The flow's events are strings:
//
//	var Story = engine.DefineStream[StoryIn, string, string](Chat, "story", engine.POST("/chat/story"))
//
//	engine.BindStream(Story, func(fx *engine.Fx, in StoryIn, out *engine.Stream[string]) (string, error) {
//		return ai.StreamText(fx, writer, in.Prompt, out)
//	})
//
// A provider failure ends the stream without data: [DONE], so the client can tell it
// apart from a complete reply.
func StreamText(fx *engine.Fx, model *ModelDef, prompt string, out *engine.Stream[string]) (string, error) {
	if err := model.Validate(); err != nil {
		return "", err
	}
	if out == nil {
		return "", fmt.Errorf("ai: StreamText: nil stream")
	}
	sse := out.SSE() // the response begins now, as the model is asked
	req := Request{Model: model.ModelID(), Reasoning: model.reasoning, Messages: []Message{{Role: RoleUser, Content: prompt}}}
	var text []byte
	for chunk, err := range model.stream(fx.Context(), req) {
		if err != nil {
			fx.Logger().Warn("ai: text stream failed", "err", err)
			return "", err
		}
		if chunk.Text == "" {
			continue
		}
		text = append(text, chunk.Text...)
		data, _ := json.Marshal(chunk.Text)
		if err := sse.WriteEvent(0, data); err != nil {
			return "", err
		}
	}
	return string(text), nil
}
