package openai

import (
	"strings"

	"github.com/reinhq/rein/llm"
)

// textPath turns the content deltas of one response into events: the raw
// text is kept whole for history, while the events carry only what the user
// should see.
//
// TODO(issue 3): route deltas through the inline think filter (llm/think)
// and the DSML stream filter (llm/textcall) once those packages land; finish
// then returns the text without DSML markup and the parsed calls.
type textPath struct {
	raw strings.Builder
}

func (t *textPath) write(delta string, emit func(llm.Event)) {
	if delta == "" {
		return
	}
	t.raw.WriteString(delta)
	emit(llm.Event{Kind: llm.EventText, Delta: delta})
}

// finish flushes what the filters held back and returns the text to keep in
// history and the calls written as text.
func (t *textPath) finish(emit func(llm.Event)) (text string, calls []llm.Call) {
	return t.raw.String(), nil
}
