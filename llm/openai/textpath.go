package openai

import (
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/textcall"
	"github.com/reinhq/rein/llm/think"
)

// textPath turns the content deltas of one response into events: inline
// <think> reasoning becomes reasoning events, DSML call markup is hidden and
// its calls collected, the rest is visible text. The raw text is kept whole
// for history: the model gets back what it wrote.
//
// The filters are made on the first text: a round that only calls tools
// (most rounds of a working turn) never needs them.
type textPath struct {
	tools   []llm.ToolSpec
	think   *think.Filter
	dsml    *textcall.Filter
	catalog *textcall.Catalog
	raw     strings.Builder
	visible strings.Builder
	calls   []llm.Call
	// thought says inline reasoning came: history then keeps it.
	thought bool
}

func newTextPath(tools []llm.ToolSpec) textPath {
	return textPath{tools: tools}
}

func (t *textPath) write(delta string, emit func(llm.Event)) {
	if delta == "" {
		return
	}
	if t.think == nil {
		t.think = think.NewFilter(think.Options{})
		t.catalog = textcall.NewCatalog(t.tools)
		t.dsml = textcall.NewFilter(textcall.Options{Catalog: t.catalog})
	}
	t.raw.WriteString(delta)
	for _, seg := range t.think.Write(delta) {
		t.segment(seg, emit)
	}
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

// finish flushes what the filters held back and returns the text to keep in
// history and the calls written as text. When the text held calls, history
// keeps the text without the markup (DESIGN §5.2): the calls are kept as
// call parts instead. Inline reasoning stays in it as written, as in a
// round of native calls.
func (t *textPath) finish(emit func(llm.Event)) (text string, calls []llm.Call) {
	if t.think == nil {
		return "", nil // no text came
	}
	for _, seg := range t.think.Flush() {
		t.segment(seg, emit)
	}
	rest, more := t.dsml.Flush()
	t.show(rest, emit)
	t.calls = append(t.calls, more...)
	for i := range t.calls {
		t.calls[i].Format = llm.CallText
	}
	if len(t.calls) > 0 {
		if t.thought {
			return textcall.Clean(t.raw.String(), textcall.Options{Catalog: t.catalog}), t.calls
		}
		return t.visible.String(), t.calls
	}
	return t.raw.String(), nil
}
