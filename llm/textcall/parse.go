package textcall

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/think"
)

// Options configure [Parse] and [Filter].
type Options struct {
	// Catalog declares the parameter types; nil declares none.
	Catalog *Catalog
	// NewID returns a fresh call id, unique within the thread; nil means
	// [NewID].
	NewID func() string
	// Think says how the model writes inline reasoning. Parse reads calls
	// only outside it.
	Think think.Options
}

func (o Options) newID() func() string {
	if o.NewID != nil {
		return o.NewID
	}
	return NewID
}

// NewID returns a random call id, "call_txt_" and 24 hex digits. Ids must not
// repeat across rounds: some providers reject a replayed id that is not
// unique.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "call_txt_" + hex.EncodeToString(b[:])
}

// Parse reads the calls a model wrote as text in a complete response. It
// returns the visible text, which is the text without its inline reasoning,
// without complete markup and trimmed, with bytes that are not UTF-8
// dropped, and the calls in order. Markup inside
// a <think> block is reasoning: it is neither parsed nor returned.
//
// A think.Filter followed by a [Filter] fed the same text in any chunks
// produces the same content and calls.
func Parse(text string, o Options) (visible string, calls []llm.Call) {
	if !o.Think.StartInside && strings.IndexByte(text, '<') < 0 {
		// Neither reasoning nor markup: only the trimming applies, and
		// invalid bytes go as in the filter (see Filter.emit).
		return strings.TrimSpace(strings.ToValidUTF8(text, "")), nil
	}
	f := NewFilter(o)
	var b strings.Builder
	for _, s := range think.Split(text, o.Think) {
		if !s.Thinking {
			t, cs := f.Write(s.Text)
			b.WriteString(t)
			calls = append(calls, cs...)
		}
	}
	t, cs := f.Flush()
	if b.Len() == 0 {
		return t, append(calls, cs...)
	}
	b.WriteString(t)
	return b.String(), append(calls, cs...)
}
