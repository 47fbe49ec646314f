// Package think splits model output that carries its reasoning inline, as
// <think>…</think> or <thinking>…</thinking>, into content and thinking
// segments.
//
// Tags are matched case-insensitively. An open tag may carry attributes
// written as name=value pairs (<think type="brief">); prose such as
// "I <think this is right>" and names such as <thinker> or <think-tank> are
// not tags. Tags are recognised in both states and never nest: an open tag
// enters thinking, a close tag returns to content, and a tag that changes
// nothing (a stray </think> in content, a second <think> inside thinking) is
// dropped. Concatenating all segments therefore gives the input minus the
// tags.
//
// The [Filter] works on a stream and is correct at every split of the input,
// including splits inside a UTF-8 sequence: it holds back only a tail that can
// still become a tag (at most [MaxTagLen] bytes) and an incomplete UTF-8
// sequence, so ordinary text such as "a < b" is released at once.
package think

import (
	"strings"
	"unicode/utf8"
)

// Segment is a run of output of one kind.
type Segment struct {
	// Thinking is true for reasoning and false for content.
	Thinking bool
	Text     string
}

// Options configure a [Filter].
type Options struct {
	// StartInside makes the output begin in thinking. It is for models served
	// without a reasoning parser whose prompt template already opened the
	// block, so their output reads "reasoning…</think>answer". A model that
	// never closes the block produces only thinking.
	StartInside bool
}

// Filter splits a stream into content and thinking segments. The zero value
// is a filter that starts in content. A Filter is not safe for concurrent use.
type Filter struct {
	inside bool
	// keepTags leaves the tags in the segments (SplitRaw).
	keepTags bool
	// held is the tail of the input that is not decided yet: a prefix of a
	// possible tag or the first bytes of a UTF-8 sequence.
	held string
	// segs is reused by every Write: a stream is written in many small
	// chunks, and a slice per chunk was most of the filter's garbage.
	segs []Segment
}

// NewFilter returns a filter configured by o.
func NewFilter(o Options) *Filter {
	return &Filter{inside: o.StartInside}
}

// Write feeds the next chunk of the stream and returns the segments that are
// decided. Adjacent segments of one kind are merged and no segment is empty.
// The returned slice is overwritten by the next Write or Flush; copy the
// segments to keep them.
func (f *Filter) Write(chunk string) []Segment {
	f.segs = f.run(f.segs[:0], chunk, false)
	return f.segs
}

// Flush ends the stream and returns what was held back, in a slice that the
// next call overwrites. Text after an unclosed open tag stays thinking.
func (f *Filter) Flush() []Segment {
	f.segs = f.run(f.segs[:0], "", true)
	return f.segs
}

// Thinking reports whether the stream is inside a think block: where the next
// text would go.
func (f *Filter) Thinking() bool { return f.inside }

// Split splits a complete text into segments, as a Filter fed the whole text
// and flushed would.
func Split(s string, o Options) []Segment {
	f := Filter{inside: o.StartInside}
	return f.run(nil, s, true)
}

// SplitRaw splits a complete text as Split does but loses nothing: a
// thinking segment holds its open and close tags, and a tag that changes
// nothing stays in the text around it. Concatenating the segments gives s.
// It is for keeping a response as it was written while treating its
// content apart, such as removing call markup but not the reasoning.
func SplitRaw(s string, o Options) []Segment {
	f := Filter{inside: o.StartInside, keepTags: true}
	return f.run(nil, s, true)
}

// Strip returns the content of s: s without its thinking and without tags.
func Strip(s string, o Options) string {
	if !o.StartInside && strings.IndexByte(s, '<') < 0 {
		return s
	}
	segs := Split(s, o)
	var n int
	for _, sg := range segs {
		if !sg.Thinking {
			n += len(sg.Text)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, sg := range segs {
		if !sg.Thinking {
			b.WriteString(sg.Text)
		}
	}
	return b.String()
}

// run appends the segments decided by chunk to out.
func (f *Filter) run(out []Segment, chunk string, final bool) []Segment {
	s := chunk
	if f.held != "" {
		s = f.held + chunk
		f.held = ""
	}
	start := 0 // first byte not yet emitted
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			break
		}
		p := i + j
		n, open, st := matchTag(s[p:], final)
		switch st {
		case noTag:
			i = p + 1
			continue
		case partialTag:
			out = appendSegment(out, f.inside, s[start:p])
			// Clone so a short held tail does not pin a large chunk.
			f.held = strings.Clone(s[p:])
			return out
		}
		out = appendSegment(out, f.inside, s[start:p])
		switch {
		case !f.keepTags:
			start = p + n
		case !f.inside && open:
			start = p // the open tag begins the thinking segment
		case f.inside && !open:
			out = appendSegment(out, true, s[p:p+n]) // the close tag ends it
			start = p + n
		default:
			start = p // a tag that changes nothing stays where it is
		}
		f.inside = open
		i = p + n
	}
	rest := s[start:]
	if !final {
		k := completePrefix(rest)
		if k < len(rest) {
			f.held = strings.Clone(rest[k:])
			rest = rest[:k]
		}
	}
	return appendSegment(out, f.inside, rest)
}

// appendSegment appends text of a kind, merging it with the last segment when
// that has the same kind.
func appendSegment(out []Segment, thinking bool, text string) []Segment {
	if text == "" {
		return out
	}
	if n := len(out); n > 0 && out[n-1].Thinking == thinking {
		out[n-1].Text += text
		return out
	}
	return append(out, Segment{Thinking: thinking, Text: text})
}

// completePrefix returns the length of s without a trailing incomplete UTF-8
// sequence. Invalid bytes count as complete, so they are never held forever.
func completePrefix(s string) int {
	for k := len(s) - 1; k >= 0 && k >= len(s)-utf8.UTFMax+1; k-- {
		c := s[k]
		if c < utf8.RuneSelf {
			return len(s)
		}
		if utf8.RuneStart(c) {
			if utf8.FullRuneInString(s[k:]) {
				return len(s)
			}
			return k
		}
	}
	return len(s)
}
