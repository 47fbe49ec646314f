package session

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/loop"
	"github.com/reinhq/rein/tool"
)

// StartOutput starts a turn of input, as Start does, that asks for a
// structured answer: the model's answer is a JSON object matching out's
// schema, checked by the engine (loop.Options.Output) and recorded as the
// turn's Output. out is this turn's alone, over whatever the thread's
// Setup asks for; a pause keeps it, so the turn resumed asks for the same
// answer. A nil out is Start.
func (s *Scheduler) StartOutput(ctx context.Context, threadID string, input llm.Item, out *llm.Output) (Turn, error) {
	if err := checkInput(&input); err != nil {
		return Turn{}, err
	}
	return s.start(ctx, threadID, []llm.Item{input}, out)
}

// RunTurnOutput runs a turn that asks for a structured answer (see
// StartOutput) and waits for its end or pause, as RunTurn does.
func (s *Scheduler) RunTurnOutput(ctx context.Context, threadID string, input llm.Item, out *llm.Output) (Turn, error) {
	if err := checkInput(&input); err != nil {
		return Turn{}, err
	}
	return s.runTurn(ctx, threadID, []llm.Item{input}, out)
}

// withOutput sets the structured answer a run asks for: the turn's own
// (StartOutput; its record keeps it, so a turn queued or taken over from
// another node asks for it too), else the one its paused state kept when it resumes, else
// the thread's (record.Settings.Output) for a turn of input (a compaction
// answers in text), else what the run's options say. A structured answer
// not of the options runs on a copy of their tool set, which the engine may
// add the output's tool to: the set is the thread's (or shared by
// threads), and their other turns must not be offered it. (A tool
// load_tools loads during such a turn joins the thread's set, for its next
// turns.)
func withOutput(o *loop.Options, t *turnRun, state *loop.State, thread json.RawMessage) error {
	out := t.rec.OutputSpec
	switch {
	case out != nil:
	case state != nil:
		out = state.Output
	case len(t.input) > 0 && len(thread) > 0:
		var err error
		if out, err = llm.OutputFromSchema(thread, "answer"); err != nil {
			return fmt.Errorf("the thread's output schema: %w", err)
		}
	}
	if out == nil {
		return nil
	}
	o.Output = out
	if o.Tools != nil {
		o.Tools = tool.NewSet(o.Tools.Tools()...)
	}
	return nil
}
