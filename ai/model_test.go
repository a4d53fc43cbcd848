package ai_test

import (
	"context"
	"iter"
	"math"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/ai"
)

// nopProvider is the smallest [ai.Provider], for declarations that never stream.
type nopProvider struct{}

func (nopProvider) Name() string { return "nop" }
func (nopProvider) Stream(context.Context, ai.Request) iter.Seq2[ai.Chunk, error] {
	return func(func(ai.Chunk, error) bool) {}
}

func TestModelAccessors(t *testing.T) {
	t.Parallel()
	p := nopProvider{}
	m := ai.Model("fast", p, "gpt-4o-mini", ai.WithPricing(0.15, 0.6))
	if m.Name() != "fast" || m.Provider() != p || m.ModelID() != "gpt-4o-mini" {
		t.Fatalf("model = %q %v %q", m.Name(), m.Provider(), m.ModelID())
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestModelValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		model *ai.ModelDef
		want  string
	}{
		{"nil", nil, "model is nil"},
		{"no name", ai.Model("", nopProvider{}, "id"), "no name"},
		{"no provider", ai.Model("m", nil, "id"), "no provider"},
		{"no model id", ai.Model("m", nopProvider{}, ""), "no model id"},
		{"negative price", ai.Model("m", nopProvider{}, "id", ai.WithPricing(-1, 1)), "negative price"},
	}
	for _, tt := range tests {
		err := tt.model.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

func TestModelCost(t *testing.T) {
	t.Parallel()
	priced := ai.Model("p", nopProvider{}, "id", ai.WithPricing(3, 15)) // per million tokens
	unpriced := ai.Model("u", nopProvider{}, "id")
	tests := []struct {
		name   string
		model  *ai.ModelDef
		usage  ai.Usage
		want   float64
		wantOK bool
	}{
		{"nothing reported", priced, ai.Usage{}, 0, false},
		{"provider cost wins over pricing", priced, ai.Usage{InputTokens: i64(1_000_000), OutputTokens: i64(1_000_000), Cost: f64(0.25)}, 0.25, true},
		{"provider cost without pricing", unpriced, ai.Usage{Cost: f64(0.01)}, 0.01, true},
		{"provider cost of zero is a cost", priced, ai.Usage{InputTokens: i64(10), Cost: f64(0)}, 0, true},
		{"priced from counts", priced, ai.Usage{InputTokens: i64(2_000), OutputTokens: i64(500)}, 0.006 + 0.0075, true},
		{"only input reported", priced, ai.Usage{InputTokens: i64(1_000_000)}, 3, true},
		{"only output reported", priced, ai.Usage{OutputTokens: i64(100_000)}, 1.5, true},
		{"counts without pricing", unpriced, ai.Usage{InputTokens: i64(10), OutputTokens: i64(10)}, 0, false},
		{"zero counts are free, not unknown", priced, ai.Usage{InputTokens: i64(0), OutputTokens: i64(0)}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tt.model.Cost(tt.usage)
			if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-12 {
				t.Fatalf("Cost = (%v, %v), want (%v, %v)", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
