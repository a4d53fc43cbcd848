package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/httpx"
	"github.com/google/jsonschema-go/jsonschema"
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
		reply, err := Collect(model.Provider().Stream(ctx, Request{Model: model.ModelID(), System: opts.System,
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

// TextStream is the text stream variant: returned from a handler, it answers
// text/event-stream whose frames are JSON strings of plain text, then data: [DONE].
type TextStream struct {
	model  *ModelDef
	prompt string
	system string
}

// StreamText streams model's reply to prompt as plain text frames.
func StreamText(fx *engine.Fx, model *ModelDef, prompt string) (*TextStream, error) {
	if err := model.Validate(); err != nil {
		return nil, err
	}
	return &TextStream{model: model, prompt: prompt}, nil
}

// JSONSchema describes the stream for the descriptor.
func (*TextStream) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: "text/event-stream whose frames are JSON strings of text, ending with data: [DONE]"}
}

// Respond streams the reply. A provider failure mid-stream ends the stream without
// [DONE], so the client can tell it apart from a complete reply.
func (t *TextStream) Respond(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	sse := httpx.NewSSEWriter(w, httpx.SSEOptions{})
	defer sse.Close()
	req := Request{Model: t.model.ModelID(), System: t.system, Messages: []Message{{Role: RoleUser, Content: t.prompt}}}
	for chunk, err := range t.model.Provider().Stream(r.Context(), req) {
		if err != nil {
			fx.Logger().Warn("ai: text stream failed", "err", err)
			return
		}
		if chunk.Text == "" {
			continue
		}
		data, _ := json.Marshal(chunk.Text)
		if sse.WriteEvent(0, data) != nil {
			return
		}
	}
	_ = sse.WriteDone()
}
