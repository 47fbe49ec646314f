package textcall

import "strings"

// maxTagLen bounds a DSML tag, attributes included, and so what a [Filter]
// holds back while a tag may still be arriving.
const maxTagLen = 512

type tagKind uint8

const (
	// kindWrapper is any keyword other than invoke and parameter: tool_calls,
	// function_calls, tool_use and names not seen yet.
	kindWrapper tagKind = iota
	kindInvoke
	kindParameter
)

type tagStatus uint8

const (
	noTag tagStatus = iota
	partialTag
	fullTag
)

// tag is one DSML tag.
type tag struct {
	kind  tagKind
	close bool
	// known is true for the keywords of the format (tool_calls,
	// function_calls, tool_use, invoke, parameter).
	known bool
	// name is the name attribute of an open invoke or parameter tag.
	name string
	// raw is true for a parameter marked string="true".
	raw bool
	// n is the length of the tag in bytes.
	n int
}

// The bars the marker is written with: fullwidth vertical line U+FF5C, ASCII
// vertical line, double vertical line U+2016.
var bars = [...]string{"\uff5c", "|", "\u2016"}

// scanTag reports whether s begins with a DSML tag. s starts with '<'. Unless
// final, a string that ends while it can still become a tag is reported as
// partial, so a stream holds back only plausible tag prefixes.
//
//	tag    = "<" ["/"] bars "DSML" bars keyword rest
//	bars   = bar [bar]
//	rest   = ws* ">"                          (close tags)
//	       | { ws+ attr } ws* ">"             (open tags)
//	       | ws* &"<"                         (a wrapper open tag missing '>')
//	attr   = name ws* "=" ws* ( '"' [^"<]* '"' | "'" [^'<]* "'" | [^ws>"'<=]+ )
func scanTag(s string, final bool) (tag, tagStatus) {
	m := matcher{s: s, i: 1, final: final, st: fullTag}
	var t tag
	t.close = m.eat('/')
	if !m.bars() || !m.lit("dsml") || !m.bars() {
		return t, m.failed()
	}
	kw, ok := m.keyword()
	if !ok {
		return t, m.failed()
	}
	switch kw {
	case "invoke":
		t.kind, t.known = kindInvoke, true
	case "parameter":
		t.kind, t.known = kindParameter, true
	case "tool_calls", "function_calls", "tool_use":
		t.known = true
	}
	if t.close {
		m.spaces()
		if !m.eat('>') {
			return t, m.failed()
		}
		t.n = m.i
		return t, fullTag
	}
	for {
		sp := m.spaces()
		if m.eat('>') {
			t.n = m.i
			return t, fullTag
		}
		if b, ok := m.peek(); ok && b == '<' && t.kind == kindWrapper {
			t.n = m.i
			return t, fullTag
		}
		if sp == 0 {
			return t, m.failed()
		}
		name, val, ok := m.attr()
		if !ok {
			return t, m.failed()
		}
		switch strings.ToLower(name) {
		case "name":
			t.name = strings.Clone(val)
		case "string":
			t.raw = strings.EqualFold(strings.TrimSpace(val), "true")
		}
	}
}

// matcher walks a candidate tag. st stays fullTag while matching can go on;
// otherwise it says whether the input ended too early or did not match.
type matcher struct {
	s     string
	i     int
	final bool
	st    tagStatus
}

// peekAt returns the byte at m.i+k. At the end of the input or past
// maxTagLen it returns false and records whether the tag could complete.
func (m *matcher) peekAt(k int) (byte, bool) {
	if m.st != fullTag {
		return 0, false
	}
	j := m.i + k
	if j >= maxTagLen {
		m.st = noTag
		return 0, false
	}
	if j >= len(m.s) {
		if m.final {
			m.st = noTag
		} else {
			m.st = partialTag
		}
		return 0, false
	}
	return m.s[j], true
}

func (m *matcher) peek() (byte, bool) { return m.peekAt(0) }

// eat consumes c if it is next.
func (m *matcher) eat(c byte) bool {
	if b, ok := m.peek(); ok && b == c {
		m.i++
		return true
	}
	return false
}

// lit consumes want, compared without regard to ASCII case. A mismatch
// consumes nothing.
func (m *matcher) lit(want string) bool {
	for k := 0; k < len(want); k++ {
		b, ok := m.peekAt(k)
		if !ok || lower(b) != want[k] {
			return false
		}
	}
	m.i += len(want)
	return true
}

// bars consumes one or two marker bars.
func (m *matcher) bars() bool {
	n := 0
	for n < 2 {
		matched := false
		for _, b := range bars {
			if m.lit(b) {
				matched = true
				break
			}
			if m.st != fullTag {
				return false
			}
		}
		if !matched {
			break
		}
		n++
	}
	return n > 0
}

// keyword consumes a run of letters, digits and underscores and returns it in
// lower case. The run must end inside the tag.
func (m *matcher) keyword() (string, bool) {
	start := m.i
	for {
		b, ok := m.peek()
		if !ok {
			return "", false
		}
		if !isWordByte(b) {
			break
		}
		m.i++
	}
	if m.i == start {
		return "", false
	}
	return strings.ToLower(m.s[start:m.i]), true
}

// spaces consumes whitespace and returns how much.
func (m *matcher) spaces() int {
	n := 0
	for {
		b, ok := m.peek()
		if !ok || !isSpace(b) {
			return n
		}
		m.i++
		n++
	}
}

// attr consumes name=value and returns both, the value without quotes.
func (m *matcher) attr() (name, val string, ok bool) {
	start := m.i
	b, ok := m.peek()
	if !ok || !isNameStart(b) {
		return "", "", false
	}
	for {
		m.i++
		if b, ok = m.peek(); !ok {
			return "", "", false
		}
		if !isNameByte(b) {
			break
		}
	}
	name = m.s[start:m.i]
	m.spaces()
	if !m.eat('=') {
		return "", "", false
	}
	m.spaces()
	q, ok := m.peek()
	if !ok {
		return "", "", false
	}
	if q == '"' || q == '\'' {
		m.i++
		start = m.i
		for {
			b, ok := m.peek()
			if !ok || b == '<' {
				return "", "", false
			}
			if b == q {
				val = m.s[start:m.i]
				m.i++
				return name, val, true
			}
			m.i++
		}
	}
	start = m.i
	for {
		b, ok := m.peek()
		if !ok {
			return "", "", false
		}
		if isSpace(b) || b == '>' {
			break
		}
		if b == '"' || b == '\'' || b == '<' || b == '=' {
			return "", "", false
		}
		m.i++
	}
	if m.i == start {
		return "", "", false
	}
	return name, m.s[start:m.i], true
}

// failed returns the status of a match that cannot succeed now: partial if
// the input ran out, no tag otherwise.
func (m *matcher) failed() tagStatus {
	if m.st == fullTag {
		m.st = noTag
	}
	return m.st
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f'
}

func isWordByte(b byte) bool {
	b = lower(b)
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '_'
}

func isNameStart(b byte) bool {
	b = lower(b)
	return 'a' <= b && b <= 'z' || b == '_'
}

func isNameByte(b byte) bool {
	return isWordByte(b) || b == '-' || b == '.' || b == ':'
}
