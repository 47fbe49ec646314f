package llm

import "testing"

func TestPriceCost(t *testing.T) {
	p := Price{InputPerM: 2, OutputPerM: 8, CachedPerM: 0.5}
	for _, tc := range []struct {
		name string
		p    Price
		u    Usage
		want float64
	}{
		{"input and output", p, Usage{InputTokens: 1_000_000, OutputTokens: 500_000}, 2 + 4},
		{"cached input at the cached price", p, Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000}, 0.6*2 + 0.4*0.5},
		{"no cached price: the input price", Price{InputPerM: 2}, Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000}, 2},
		{"more cached than input counts the input only", p, Usage{InputTokens: 100_000, CachedInputTokens: 300_000}, 0.1 * 0.5},
		{"zero price", Price{}, Usage{InputTokens: 5, OutputTokens: 5}, 0},
	} {
		if got := tc.p.Cost(tc.u); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%s: Cost = %v, want %v", tc.name, got, tc.want)
		}
	}
}
