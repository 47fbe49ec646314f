package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/reinhq/rein/event"
)

// Read decodes events written as JSON Lines (rein run --events FILE, or
// the output of rein run --json). Lines that are not events, such as the
// outcome line of --json, are skipped.
func Read(r io.Reader) ([]event.Event, error) {
	dec := json.NewDecoder(r)
	var out []event.Event
	for n := 1; ; n++ {
		var e event.Event
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("trace: event %d (byte %d): %w", n, dec.InputOffset(), err)
		}
		if known(e.Type) {
			out = append(out, e)
		}
	}
}

func known(t event.Type) bool {
	switch t {
	case event.TurnStarted, event.TurnCompleted, event.RoundStarted, event.RoundCompleted,
		event.TextDelta, event.ThinkingDelta, event.CallStarted, event.CallDelta, event.CallCompleted,
		event.ToolStarted, event.ToolOutput, event.Result, event.ItemAdded, event.PauseRequested, event.PauseResolved,
		event.Retry, event.Warning, event.Usage, event.Context, event.Subagent:
		return true
	}
	return false
}
