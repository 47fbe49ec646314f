package agent

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
)

// TestApplyModel: a known price and window reach the options, the output
// reserve is what a call may produce, the config's stream caps apply to
// every model, and a cost budget without a price is refused.
func TestApplyModel(t *testing.T) {
	price := &loop.Price{InputPerM: 1, OutputPerM: 2}
	real := provider.Spec{Provider: "openai", Model: "gpt-test"}
	script := provider.Spec{Provider: "scripted", Model: "/tmp/s.yaml"}
	cfg, err := config.Parse("[stream]\nmax_round_output = 1000\nmax_call_arguments = 500\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		spec    provider.Spec
		caps    *provider.Capabilities
		cost    float64
		wantErr string
		priced  bool
	}{
		{"priced, with a budget", real, &provider.Capabilities{ContextWindow: 100_000, MaxOutput: 50_000, Price: price}, 1, "", true},
		{"unpriced, without a budget", real, &provider.Capabilities{ContextWindow: 100_000}, 0, "", false},
		{"unpriced, with a budget", real, &provider.Capabilities{ContextWindow: 100_000}, 1, "a cost budget needs a price", false},
		{"scripted, with a budget", script, nil, 1, "a cost budget needs a price for scripted:", false},
		{"scripted, without one", script, nil, 0, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := loop.Options{Budget: loop.Budget{Cost: tt.cost}}
			err := ApplyModel(&o, tt.spec, tt.caps, cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				// The door names its own flag (rein: --max-cost).
				if _, ok := err.(*PriceError); !ok || strings.Contains(err.Error(), "--") {
					t.Errorf("err %v (%T): want a *PriceError naming no flag", err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (o.Price == *price) != tt.priced {
				t.Errorf("price %+v", o.Price)
			}
			if (o.Window != nil) != (tt.caps != nil) {
				t.Errorf("window %v with caps %v", o.Window, tt.caps)
			}
			if o.MaxRoundOutput != 1000 || o.MaxCallArgs != 500 {
				t.Errorf("stream caps %d, %d; want the config's", o.MaxRoundOutput, o.MaxCallArgs)
			}
		})
	}
}
