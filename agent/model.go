package agent

import (
	"fmt"

	"github.com/reinhq/rein/config"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/provider"
	"github.com/reinhq/rein/window"
)

// ApplyModel sets on o what is known of the model spec runs: its price
// (what keeps the cost budget) and its context window (the guard), from
// caps (nil when nothing is known), and the caps of the config file f's
// [stream] table (a table left out keeps the engine's defaults). A cost
// budget (o.Budget.Cost) without a price is refused with a *PriceError —
// never a budget silently not kept; a scripted model has none. Caps
// without a context window (a program's own model) leave the window
// guard off.
func ApplyModel(o *loop.Options, spec provider.Spec, caps *provider.Capabilities, f *config.File) error {
	if f != nil {
		o.MaxRoundOutput, o.MaxCallArgs = f.Stream.MaxRoundOutput, f.Stream.MaxCallArguments
	}
	if caps == nil || spec.Provider == "scripted" {
		if o.Budget.Cost > 0 {
			return &PriceError{Spec: spec, Unknowable: true}
		}
		return nil
	}
	o.Price = caps.LoopPrice()
	if o.Budget.Cost > 0 && o.Price == (loop.Price{}) {
		return &PriceError{Spec: spec}
	}
	c := *caps
	if c.ContextWindow == 0 {
		// Nothing known of the window (a program's own model, given
		// without one): no guard, as the engine runs without Window.
		return nil
	}
	// Reserve what a call may really produce, not the model's maximum.
	if o.MaxOutputTokens > 0 {
		c.MaxOutput = o.MaxOutputTokens
	} else if c.MaxOutput > 16_384 {
		c.MaxOutput = 16_384
	}
	w, err := Window(spec, c)
	if err != nil {
		return fmt.Errorf("context window for %s: %w", spec, err)
	}
	o.Window = w
	return nil
}

// PriceError is the refusal of a cost budget (loop.Budget.Cost) for a
// model whose price is not known: never a budget silently not kept.
type PriceError struct {
	Spec provider.Spec
	// Unknowable says no price can be known (a scripted model, or nothing
	// known of the model at all), so only another budget will do.
	Unknowable bool
}

func (e *PriceError) Error() string {
	if e.Unknowable {
		return fmt.Sprintf("a cost budget needs a price for %s, and none is known; budget the turn in tokens or time instead", e.Spec)
	}
	return fmt.Sprintf("a cost budget needs a price for %s; set one in the config file (rein models shows what is known)", e.Spec)
}

// SettingError is a tool switch (Tools) that cannot work, naming the
// setting, so that a door can say it in its own words (rein's flags).
type SettingError struct {
	// Setting is the setting: "capability", "exclusive" or "workspace".
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *SettingError) Unwrap() error { return e.Err }

// Window returns the context window keeper of a model, from what is known
// about it: the turn engine's loop.Options.Window.
func Window(spec provider.Spec, caps provider.Capabilities) (*window.Window, error) {
	return window.New(window.Config{
		Model:           spec.Model,
		Window:          caps.ContextWindow,
		WindowEstimated: caps.IsEstimated("context_window"),
		MaxOutput:       caps.MaxOutput,
	})
}
