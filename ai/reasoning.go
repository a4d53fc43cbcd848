package ai

import (
	"fmt"
	"strings"

	"github.com/bbc28f59/engine/ai/agui"
)

// ReasoningOptions ask a model to reason before it answers and to stream its reasoning
// ([WithReasoning]). Providers take the part they understand, and their packages say
// how: an OpenAI-compatible server takes an effort (reasoning_effort), Anthropic a
// budget of thinking tokens. Set both to switch vendor without touching the model's
// declaration.
type ReasoningOptions struct {
	// Effort is how hard the model reasons: "minimal", "low", "medium" or "high" (what
	// the server accepts is the server's to say). Empty leaves the server's default.
	Effort string
	// BudgetTokens is how many tokens the model may spend thinking. Anthropic requires
	// at least 1024; zero lets a provider that needs a budget derive it from Effort.
	BudgetTokens int
}

// WithReasoning asks the model to reason, and to stream its reasoning, on every turn.
// The run's reasoning streams as AG-UI REASONING_* events, is kept in the run's log like
// text, and the tokens it cost are counted in RUN_FINISHED.usage (reasoningTokens,
// where the provider reports them).
func WithReasoning(r ReasoningOptions) ModelOption {
	return func(m *ModelDef) { m.reasoning = &r }
}

// Reasoning returns the reasoning the model asks for, or nil ([WithReasoning]).
func (m *ModelDef) Reasoning() *ReasoningOptions { return m.reasoning }

func (r *ReasoningOptions) validate(model string) error {
	if r != nil && r.BudgetTokens < 0 {
		return fmt.Errorf("ai: model %q: reasoning BudgetTokens %d is negative", model, r.BudgetTokens)
	}
	return nil
}

// Reasoning is one reasoning message of a model turn. An assistant [Message] carries
// the turn's reasoning so that providers which check it (Anthropic wants a turn's
// thinking blocks back, signed, with its tool results) get it back unchanged.
type Reasoning struct {
	// Text is the readable reasoning: a summary or the model's thinking; it may be empty
	// when the provider shows none.
	Text string `json:"text,omitempty"`
	// Signature is the provider's opaque check of Text (Anthropic's thinking signature).
	Signature string `json:"signature,omitempty"`
	// Redacted is reasoning the provider encrypted whole (the data of Anthropic's
	// redacted_thinking block); Text is empty then.
	Redacted string `json:"redacted,omitempty"`
}

// encrypted is the opaque value that travels as REASONING_ENCRYPTED_VALUE.
func (r Reasoning) encrypted() string {
	if r.Redacted != "" {
		return r.Redacted
	}
	return r.Signature
}

// ReasoningDelta is a piece of a reasoning message. Pieces of the same message share
// Index, which counts reasoning messages within the turn from zero; a piece with another
// Index begins the next message. Signature and Redacted, when sent, come whole, usually
// once at the message's end.
type ReasoningDelta struct {
	Index     int
	Text      string
	Signature string
	Redacted  string
}

// reasoningBuilder assembles a turn's reasoning messages and streams each as a span of
// one AG-UI reasoning message (see package agui), its id taken from the run's message
// numbering.
type reasoningBuilder struct {
	open  bool
	index int
	id    string
	text  strings.Builder
	cur   Reasoning
}

// reason streams one reasoning piece, opening its message when it is the first.
func (b *turnBuilder) reason(d ReasoningDelta) {
	if b.thinking == nil {
		b.thinking = &reasoningBuilder{}
	}
	rb := b.thinking
	if rb.open && rb.index != d.Index {
		b.endReasoning()
	}
	if !rb.open {
		b.endText()
		b.endCall()
		rb.open, rb.index, rb.cur = true, d.Index, Reasoning{}
		rb.text.Reset()
		rb.id = b.s.ids.next()
		b.s.em.emit(agui.ReasoningStart{MessageID: rb.id})
		b.s.em.emit(agui.ReasoningMessageStart{MessageID: rb.id})
	}
	if d.Text != "" {
		rb.text.WriteString(d.Text)
		b.s.em.delta(agui.TypeReasoningMessageContent, rb.id, d.Text)
	}
	if d.Signature != "" {
		rb.cur.Signature = d.Signature
	}
	if d.Redacted != "" {
		rb.cur.Redacted = d.Redacted
	}
}

// endReasoning closes the open reasoning message, with the provider's encrypted value
// when it sent one, and keeps it in the turn.
func (b *turnBuilder) endReasoning() {
	rb := b.thinking
	if rb == nil || !rb.open {
		return
	}
	rb.open = false
	rb.cur.Text = rb.text.String()
	b.s.em.emit(agui.ReasoningMessageEnd{MessageID: rb.id})
	if v := rb.cur.encrypted(); v != "" {
		b.s.em.emit(agui.ReasoningEncryptedValue{Subtype: agui.EncryptedMessage, EntityID: rb.id, EncryptedValue: v})
	}
	b.s.em.emit(agui.ReasoningEnd{MessageID: rb.id})
	b.t.Reasoning = append(b.t.Reasoning, rb.cur)
}
