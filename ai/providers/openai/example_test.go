package openai_test

import (
	"context"
	"fmt"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/openai"
	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
)

// The provider works against any OpenAI-compatible server; here the in-process fake stands in for one, with no key.
func Example() {
	srv := openaitest.NewServer(openaitest.Turn{Text: "Hello from the fake.", Usage: &openaitest.Usage{PromptTokens: 8, CompletionTokens: 5}})
	defer srv.Close()

	p, err := openai.New(openai.Options{BaseURL: srv.URL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := ai.Request{Model: "local-model", Messages: []ai.Message{{Role: ai.RoleUser, Content: "Hi"}}}
	for chunk, err := range p.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if chunk.Text != "" {
			fmt.Printf("%q\n", chunk.Text)
		}
		if chunk.Usage != nil {
			fmt.Println("tokens:", *chunk.Usage.InputTokens, *chunk.Usage.OutputTokens)
		}
	}
	// Output:
	// "Hello "
	// "from "
	// "the "
	// "fake."
	// tokens: 8 5
}
