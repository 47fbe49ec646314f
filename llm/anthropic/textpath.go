package anthropic

import (
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
	"github.com/reinhq/rein/llm/think"
)

// textPath filters the deltas of one text block for display: inline
// <think> reasoning becomes reasoning events, DSML call markup is removed
// and its calls collected. The block keeps its raw text for history.
type textPath struct {
	think   *think.Filter
	dsml    *textcall.Filter
	visible strings.Builder // the text shown, for a block whose markup made calls
	calls   []llm.Call      // calls written as DSML text
	catalog *textcall.Catalog
	thought bool // inline reasoning came: history keeps it as written
}

func newTextPath(cat *textcall.Catalog) *textPath {
	return &textPath{
		think:   think.NewFilter(think.Options{}),
		dsml:    textcall.NewFilter(textcall.Options{Catalog: cat}),
		catalog: cat,
	}
}

func (t *textPath) write(s string, emit func(llm.Event)) {
	for _, seg := range t.think.Write(s) {
		t.segment(seg, emit)
	}
}

// flush releases what the filters held back at the end of the block.
func (t *textPath) flush(emit func(llm.Event)) {
	for _, seg := range t.think.Flush() {
		t.segment(seg, emit)
	}
	text, calls := t.dsml.Flush()
	t.show(text, emit)
	t.calls = append(t.calls, calls...)
}

func (t *textPath) segment(seg think.Segment, emit func(llm.Event)) {
	if seg.Thinking {
		t.thought = true
		// Calls are never read from reasoning.
		emit(llm.Event{Kind: llm.EventReasoning, Delta: seg.Text})
		return
	}
	text, calls := t.dsml.Write(seg.Text)
	t.show(text, emit)
	t.calls = append(t.calls, calls...)
}

func (t *textPath) show(text string, emit func(llm.Event)) {
	if text == "" {
		return
	}
	t.visible.WriteString(text)
	emit(llm.Event{Kind: llm.EventText, Delta: text})
}
