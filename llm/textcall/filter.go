package textcall

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/jsontext"
)

// state says where in the markup the filter is.
type state uint8

const (
	inText    state = iota // prose
	inWrapper              // after a wrapper open tag, between invokes
	inInvoke               // after an invoke open tag
	inParam                // inside a parameter value
)

// Filter removes DSML markup from a stream of visible text and reads the
// calls in it. Prose is released as soon as it cannot be the start of a tag;
// only a tail that can still become a DSML tag, an incomplete UTF-8 sequence
// and trailing white space are held. A block of markup is held until it is
// complete, then dropped and its calls returned.
//
// Feed it visible text only: the content segments of a think.Filter, never
// reasoning. A think.Filter followed by a Filter, fed a response in any
// chunks, returns the same text and calls (ids aside) as [Parse] of the whole
// response. A Filter is not safe for concurrent use.
type Filter struct {
	catalog *Catalog
	newID   func() string

	// pend is the input not yet released. In a block it starts at the
	// block's first byte, so an incomplete block can be released verbatim.
	pend string
	// back stores pend once it has to grow; pend is then a suffix of back.
	back   strings.Builder
	backed bool

	st   state
	pos  int  // next byte of pend to scan, in a block
	bare bool // the block is an invoke written without a wrapper
	last int  // in a wrapper: end of its last tag, where prose cuts it off
	done []invoke
	cur  invoke
	par  struct {
		name  string
		raw   bool
		start int
	}

	// Visible output: white space at the start is dropped, at the end held.
	started bool
	ws      []byte
	out     sink
	calls   []llm.Call
}

type invoke struct {
	name   string
	params []param
}

type param struct {
	name, value string
	raw         bool
}

// set records a parameter; a repeated name replaces the earlier value in its
// place.
func (v *invoke) set(p param) {
	for i := range v.params {
		if v.params[i].name == p.name {
			v.params[i] = p
			return
		}
	}
	v.params = append(v.params, p)
}

// NewFilter returns a filter that types values by o.Catalog and names calls
// with o.NewID. o.Think is not used: the filter is fed text without reasoning.
func NewFilter(o Options) *Filter {
	return &Filter{catalog: o.Catalog, newID: o.newID()}
}

// Write feeds the next chunk of visible text. It returns the text to show now
// and the calls of the blocks this chunk completed.
func (f *Filter) Write(chunk string) (text string, calls []llm.Call) {
	f.grow(chunk)
	f.run(false)
	return f.take()
}

// Flush ends the stream: it releases held text, releases an incomplete block
// verbatim without making calls, and drops trailing white space. The filter
// is then ready for a new stream.
func (f *Filter) Flush() (text string, calls []llm.Call) {
	f.run(true)
	switch {
	case f.st == inWrapper && len(f.done) > 0:
		// Calls whose wrapper was never closed still count: the model
		// finished them and stopped.
		f.complete(f.last)
		f.run(true)
	case f.st != inText:
		f.emit(f.pend)
		f.drop(len(f.pend))
		f.st, f.done, f.cur = inText, nil, invoke{}
	}
	text, calls = f.take()
	f.started, f.ws = false, f.ws[:0]
	return text, calls
}

// grow appends chunk to pend without copying pend each time.
func (f *Filter) grow(chunk string) {
	switch {
	case chunk == "":
	case f.pend == "":
		f.pend = chunk
	default:
		if !f.backed {
			f.back.Reset()
			f.back.WriteString(f.pend)
			f.backed = true
		}
		f.back.WriteString(chunk)
		all := f.back.String()
		f.pend = all[len(all)-len(f.pend)-len(chunk):]
	}
}

// drop removes the first n bytes of pend.
func (f *Filter) drop(n int) {
	f.pend = f.pend[n:]
	if f.pend == "" && f.backed {
		f.back.Reset()
		f.backed = false
	}
}

func (f *Filter) run(final bool) {
	for {
		var more bool
		switch f.st {
		case inText:
			more = f.text(final)
		case inWrapper:
			more = f.wrapper(final)
		case inInvoke:
			more = f.invoke(final)
		case inParam:
			more = f.param(final)
		}
		if !more {
			return
		}
	}
}

// text releases prose up to the next DSML tag and opens a block there. Each
// state method reports whether it made progress.
func (f *Filter) text(final bool) bool {
	s := f.pend
	j := strings.IndexByte(s, '<')
	if j < 0 {
		k := len(s)
		if !final {
			k = completePrefix(s)
		}
		f.emit(s[:k])
		f.drop(k)
		return false
	}
	t, st := scanTag(s[j:], final)
	switch st {
	case noTag:
		f.emit(s[:j+1])
		f.drop(j + 1)
		return true
	case partialTag:
		f.emit(s[:j])
		f.drop(j)
		return false
	}
	f.emit(s[:j])
	f.drop(j)
	switch {
	case !t.close && t.kind == kindWrapper:
		f.st, f.pos, f.last = inWrapper, t.n, t.n
	case !t.close && t.kind == kindInvoke:
		f.st, f.pos, f.bare = inInvoke, t.n, true
		f.cur = invoke{name: t.name}
	default:
		f.drop(t.n) // an orphan
	}
	return true
}

// wrapper reads between invokes. Prose there means the model left the
// wrapper open: the block ends after its last tag and the prose shows.
func (f *Filter) wrapper(final bool) bool {
	s := f.pend[f.pos:]
	k := 0
	for k < len(s) && isSpace(s[k]) {
		k++
	}
	f.pos += k
	if k == len(s) {
		return false
	}
	if s[k] != '<' {
		f.complete(f.last)
		return true
	}
	t, st := scanTag(s[k:], final)
	switch st {
	case partialTag:
		return false
	case noTag:
		f.complete(f.last)
		return true
	}
	f.pos += t.n
	switch {
	case !t.close && t.kind == kindInvoke:
		f.st, f.cur = inInvoke, invoke{name: t.name}
	case t.close && t.kind == kindWrapper:
		f.complete(f.pos)
	default:
		f.last = f.pos // an orphan inside the wrapper
	}
	return true
}

// invoke reads between parameters; text there is dropped.
func (f *Filter) invoke(final bool) bool {
	s := f.pend[f.pos:]
	j := strings.IndexByte(s, '<')
	if j < 0 {
		f.pos = len(f.pend)
		return false
	}
	t, st := scanTag(s[j:], final)
	switch st {
	case partialTag:
		f.pos += j
		return false
	case noTag:
		f.pos += j + 1
		return true
	}
	f.pos += j + t.n
	switch {
	case !t.close && t.kind == kindParameter:
		f.st = inParam
		f.par.name, f.par.raw, f.par.start = t.name, t.raw, f.pos
	case !t.close && t.kind == kindInvoke:
		// The previous invoke was not closed; the new one closes it.
		f.push()
		f.cur = invoke{name: t.name}
	case t.close && t.kind == kindInvoke:
		f.endInvoke()
	case t.close && t.kind == kindWrapper:
		f.push()
		f.complete(f.pos)
	}
	return true
}

// param reads a value up to the close tag of the parameter, its invoke or its
// wrapper. Anything else in it, DSML open tags included, is part of the value.
func (f *Filter) param(final bool) bool {
	s := f.pend[f.pos:]
	j := strings.IndexByte(s, '<')
	if j < 0 {
		f.pos = len(f.pend)
		return false
	}
	t, st := scanTag(s[j:], final)
	if st == partialTag {
		f.pos += j
		return false
	}
	if st == noTag || !t.close || !t.known {
		f.pos += j + 1
		return true
	}
	f.cur.set(param{name: f.par.name, value: f.pend[f.par.start : f.pos+j], raw: f.par.raw})
	f.pos += j + t.n
	switch t.kind {
	case kindParameter:
		f.st = inInvoke
	case kindInvoke:
		f.endInvoke()
	default:
		f.push()
		f.complete(f.pos)
	}
	return true
}

// push ends the current invoke; one without a name makes no call.
func (f *Filter) push() {
	if strings.TrimSpace(f.cur.name) != "" {
		f.done = append(f.done, f.cur)
	}
	f.cur = invoke{}
}

// endInvoke handles an invoke close tag: a bare invoke is a block of its own.
func (f *Filter) endInvoke() {
	f.push()
	if f.bare {
		f.complete(f.pos)
		return
	}
	f.st, f.last = inWrapper, f.pos
}

// complete ends the block at pend[end], drops its markup and makes its calls.
func (f *Filter) complete(end int) {
	for _, v := range f.done {
		f.calls = append(f.calls, llm.Call{
			ID:     f.newID(),
			Name:   strings.TrimSpace(v.name),
			Args:   f.args(&v),
			Format: llm.CallText,
		})
	}
	f.drop(end)
	f.st, f.pos, f.bare, f.last, f.done = inText, 0, false, 0, nil
}

func (f *Filter) args(v *invoke) string {
	b := make([]byte, 0, 64)
	b = append(b, '{')
	for i, p := range v.params {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, p.name)
		b = append(b, ':')
		b = appendValue(b, f.catalog.types(v.name, p.name), p.raw, p.value)
	}
	return string(append(b, '}'))
}

// emit adds visible text, dropping white space at the start of the stream
// and holding it at the end until more text follows.
//
// Bytes that are not UTF-8 are dropped: the pieces are cut around markup,
// and invalid bytes on both sides of a removed tag would otherwise join
// into a new character — white space, say, after the end was trimmed.
func (f *Filter) emit(s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	if !f.started {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return
		}
		f.started = true
	}
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	if body == "" {
		f.ws = append(f.ws, s...)
		return
	}
	if len(f.ws) > 0 {
		f.out.addBytes(f.ws)
		f.ws = f.ws[:0]
	}
	f.out.add(body)
	f.ws = append(f.ws, s[len(body):]...)
}

func (f *Filter) take() (string, []llm.Call) {
	calls := f.calls
	f.calls = nil
	return f.out.take(), calls
}

// sink collects output, copying only when there is more than one piece.
type sink struct {
	one  string
	buf  []byte
	many bool
}

func (s *sink) add(x string) {
	if x == "" {
		return
	}
	if !s.many {
		if s.one == "" {
			s.one = x
			return
		}
		s.buf = append(s.buf[:0], s.one...)
		s.many = true
	}
	s.buf = append(s.buf, x...)
}

func (s *sink) addBytes(x []byte) {
	if !s.many {
		s.buf = append(s.buf[:0], s.one...)
		s.many = true
	}
	s.buf = append(s.buf, x...)
}

func (s *sink) take() string {
	r := s.one
	if s.many {
		r = string(s.buf)
		s.buf = s.buf[:0]
	}
	s.one, s.many = "", false
	return r
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
