package anthropic_test

import (
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
	"github.com/bbc28f59/engine/ai/providers/anthropic"
	"github.com/bbc28f59/engine/ai/providers/anthropic/anthropictest"
)

// BenchmarkStream measures one 200-delta text turn through the real provider and the wire fake over loopback HTTP:
// the floor under every agent step.
func BenchmarkStream(b *testing.B) {
	srv := anthropictest.NewServer(anthropictest.Turn{Text: strings.Repeat("token ", 200),
		Usage: &anthropictest.Usage{InputTokens: 10, OutputTokens: 200}})
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{BaseURL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	req := ai.Request{Model: "m", Messages: []ai.Message{{Role: ai.RoleUser, Content: "go"}}}
	b.ReportAllocs()
	for b.Loop() {
		reply, err := ai.Collect(p.Stream(b.Context(), req))
		if err != nil || len(reply.Text) != 1200 {
			b.Fatalf("reply %d bytes, err %v", len(reply.Text), err)
		}
	}
}
