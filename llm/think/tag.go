package think

// MaxTagLen is the longest tag recognised, attributes included. It bounds
// what a [Filter] holds back while a tag may still be arriving.
const MaxTagLen = 32

type tagStatus uint8

const (
	noTag tagStatus = iota
	partialTag
	fullTag
)

// matchTag reports whether s begins with a think tag: its length and whether
// it opens a block. s starts with '<'. Unless final, a string that ends while
// it can still become a tag is reported as partial.
//
// The grammar is deliberately narrow so prose is not mistaken for a tag:
//
//	open  = "<" name { ws+ attr } ws* ">"
//	close = "</" name ws* ">"
//	name  = "think" | "thinking"              (any case)
//	attr  = attr-name "=" ( '"' [^"<>]* '"' | "'" [^'<>]* "'" | unquoted )
//
// Requiring name=value attributes is what tells <think type="x"> from
// "<think this is right>".
func matchTag(s string, final bool) (n int, open bool, st tagStatus) {
	m := matcher{s: s, i: 1, final: final, st: fullTag}
	open = !m.eat('/')
	if !m.name() {
		return 0, false, m.st
	}
	if !open {
		m.spaces()
		if m.eat('>') {
			return m.i, false, fullTag
		}
		return 0, false, m.failed()
	}
	for {
		// name and attr leave the matcher before whitespace or '>', so
		// attributes are always separated by whitespace.
		m.spaces()
		if m.eat('>') {
			return m.i, true, fullTag
		}
		if !m.attr() {
			return 0, false, m.failed()
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

// peek returns the next byte. At the end of the input or past MaxTagLen it
// returns false and records whether the tag could still complete.
func (m *matcher) peek() (byte, bool) {
	if m.st != fullTag {
		return 0, false
	}
	if m.i >= MaxTagLen {
		m.st = noTag
		return 0, false
	}
	if m.i >= len(m.s) {
		if m.final {
			m.st = noTag
		} else {
			m.st = partialTag
		}
		return 0, false
	}
	return m.s[m.i], true
}

// eat consumes c if it is next.
func (m *matcher) eat(c byte) bool {
	b, ok := m.peek()
	if ok && b == c {
		m.i++
		return true
	}
	return false
}

// fail records a mismatch unless the input already ran out.
func (m *matcher) fail() bool {
	if m.st == fullTag {
		m.st = noTag
	}
	return false
}

// failed returns the status of a match that cannot succeed now.
func (m *matcher) failed() tagStatus {
	m.fail()
	return m.st
}

// name matches "think" or "thinking" followed by a byte that ends a name.
func (m *matcher) name() bool {
	for _, c := range []byte("think") {
		b, ok := m.peek()
		if !ok || lower(b) != c {
			return m.fail()
		}
		m.i++
	}
	b, ok := m.peek()
	if !ok {
		return false
	}
	if lower(b) == 'i' {
		for _, c := range []byte("ing") {
			b, ok := m.peek()
			if !ok || lower(b) != c {
				return m.fail()
			}
			m.i++
		}
		if b, ok = m.peek(); !ok {
			return false
		}
	}
	if b != '>' && !isSpace(b) {
		return m.fail()
	}
	return true
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

// attr matches name=value.
func (m *matcher) attr() bool {
	b, ok := m.peek()
	if !ok || !isNameStart(b) {
		return m.fail()
	}
	m.i++
	for {
		if b, ok = m.peek(); !ok {
			return false
		}
		if !isNameByte(b) {
			break
		}
		m.i++
	}
	if b != '=' {
		return m.fail()
	}
	m.i++
	q, ok := m.peek()
	if !ok {
		return false
	}
	if q == '"' || q == '\'' {
		m.i++
		for {
			b, ok := m.peek()
			if !ok {
				return false
			}
			m.i++
			if b == q {
				break
			}
			if b == '<' || b == '>' {
				return m.fail()
			}
		}
	} else {
		n := 0
		for {
			b, ok := m.peek()
			if !ok {
				return false
			}
			if isSpace(b) || b == '>' {
				break
			}
			if b == '"' || b == '\'' || b == '<' || b == '=' || b == '`' {
				return m.fail()
			}
			m.i++
			n++
		}
		if n == 0 {
			return m.fail()
		}
	}
	// A value must be followed by whitespace or the end of the tag.
	if b, ok = m.peek(); !ok {
		return false
	}
	if b != '>' && !isSpace(b) {
		return m.fail()
	}
	return true
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

func isNameStart(b byte) bool {
	b = lower(b)
	return 'a' <= b && b <= 'z' || b == '_' || b == ':'
}

func isNameByte(b byte) bool {
	return isNameStart(b) || '0' <= b && b <= '9' || b == '-' || b == '.'
}
