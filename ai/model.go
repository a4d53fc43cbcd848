package ai

import (
	"errors"
	"fmt"
)

// ModelDef names a model of a [Provider] under an application-chosen name, with the prices used to turn token counts
// into spend when the provider does not report its own cost. Agents and prompts refer to models through it, so
// switching vendor is a one-line change.
type ModelDef struct {
	name      string
	provider  Provider
	modelID   string
	pricing   *pricing
	reasoning *ReasoningOptions
	maxReply  int64 // bytes of one reply; 0 means DefaultMaxReplyBytes
}

// pricing is the price of a million tokens, input and output.
type pricing struct{ in, out float64 }

// ModelOption configures a [ModelDef].
type ModelOption func(*ModelDef)

// WithPricing sets the price, in the application's currency, of one million input and one million output tokens.
// [ModelDef.Cost] uses it when the provider reports token counts but no cost.
func WithPricing(inPerMillion, outPerMillion float64) ModelOption {
	return func(m *ModelDef) { m.pricing = &pricing{in: inPerMillion, out: outPerMillion} }
}

// Model declares the model id model of provider p under name. It never fails so declarations read as plain
// values; [ModelDef.Validate] reports bad input, and agent declarations call it.
func Model(name string, p Provider, model string, opts ...ModelOption) *ModelDef {
	m := &ModelDef{name: name, provider: p, modelID: model}
	for _, opt := range opts {
		if opt != nil {
			opt(m)
		}
	}
	return m
}

// Name is the application-chosen name of the model.
func (m *ModelDef) Name() string { return m.name }

// Provider is the provider that serves the model.
func (m *ModelDef) Provider() Provider { return m.provider }

// ModelID is the provider's id of the model, sent as [Request.Model].
func (m *ModelDef) ModelID() string { return m.modelID }

// Validate reports a declaration that cannot work: no name, no provider, no model id, or negative prices.
func (m *ModelDef) Validate() error {
	if m == nil {
		return errors.New("ai: model is nil")
	}
	var errs []error
	if m.name == "" {
		errs = append(errs, errors.New("ai: model has no name"))
	}
	if m.provider == nil {
		errs = append(errs, fmt.Errorf("ai: model %q has no provider", m.name))
	}
	if m.modelID == "" {
		errs = append(errs, fmt.Errorf("ai: model %q has no model id", m.name))
	}
	if m.maxReply < 0 {
		errs = append(errs, fmt.Errorf("ai: model %q: MaxReplyBytes must not be negative", m.name))
	}
	if p := m.pricing; p != nil && (p.in < 0 || p.out < 0) {
		errs = append(errs, fmt.Errorf("ai: model %q has a negative price", m.name))
	}
	if err := m.reasoning.validate(m.name); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Cost is the spend of one turn. The provider-reported cost wins when present; otherwise the reported token counts
// are priced with [WithPricing] (a count not reported adds nothing). Without a reported cost, or without pricing
// and counts, it returns (0, false): spend is never guessed.
func (m *ModelDef) Cost(u Usage) (float64, bool) {
	if u.Cost != nil {
		return *u.Cost, true
	}
	if m == nil || m.pricing == nil || (u.InputTokens == nil && u.OutputTokens == nil) {
		return 0, false
	}
	var cost float64
	if u.InputTokens != nil {
		cost += float64(*u.InputTokens) * m.pricing.in / 1e6
	}
	if u.OutputTokens != nil {
		cost += float64(*u.OutputTokens) * m.pricing.out / 1e6
	}
	return cost, true
}
