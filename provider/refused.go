package provider

import (
	"fmt"
	"log/slog"
	"sync"
)

// refusedTools holds the models whose server refused tool definitions in
// this process (an openai-chat adapter's switch to text tool mode), keyed
// by base URL and model: later models of the same server start in text
// tool mode instead of being refused again, as `rein serve` opens a model
// per thread.
var refusedTools sync.Map

func refusedKey(baseURL, model string) string { return baseURL + "\x00" + model }

// toolsRefused returns the adapter's hook for r's switch to text tool
// mode: it remembers the switch and warns, once per model and process.
func (r *Resolved) toolsRefused(c Config) func(error) {
	key := refusedKey(r.BaseURL, r.Spec.Model)
	return func(err error) {
		if _, seen := refusedTools.LoadOrStore(key, struct{}{}); seen {
			return
		}
		msg := fmt.Sprintf("%s refused tool definitions (%v); switched to text tool mode for this model: tools go in the prompt and calls are read from the text. "+
			"To skip the refused request next time, set tool_mode = \"text\" under [providers.%s]", r.Spec, err, r.Spec.Provider)
		if c.Warn != nil {
			c.Warn(msg)
			return
		}
		slog.Warn(msg)
	}
}
