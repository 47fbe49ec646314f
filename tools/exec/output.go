package exec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capped keeps the head and the tail of a command's output, each up to
// half the limit, and counts what falls between: the start of the output
// usually says what ran and the end how it finished. Memory stays bounded
// however much a command prints. Not safe for concurrent use; os/exec
// never writes stdout and stderr concurrently to one writer.
type capped struct {
	half  int
	head  []byte
	tail  []byte // a ring of up to half bytes once full
	next  int    // where the ring writes next
	total int
}

func newCapped(limit int) *capped { return &capped{half: max(limit/2, 1)} }

func (c *capped) Write(b []byte) (int, error) {
	n := len(b)
	c.total += n
	if room := c.half - len(c.head); room > 0 {
		k := min(room, len(b))
		c.head = append(c.head, b[:k]...)
		b = b[k:]
	}
	if len(b) >= c.half {
		c.tail = append(c.tail[:0], b[len(b)-c.half:]...)
		c.next = 0
		return n, nil
	}
	for len(b) > 0 {
		if len(c.tail) < c.half {
			k := min(c.half-len(c.tail), len(b))
			c.tail = append(c.tail, b[:k]...)
			b = b[k:]
			continue
		}
		k := copy(c.tail[c.next:], b)
		c.next = (c.next + k) % c.half
		b = b[k:]
	}
	return n, nil
}

// cut is how many bytes were left out.
func (c *capped) cut() int { return c.total - len(c.head) - len(c.tail) }

// String returns the output kept, with a line saying how much was cut from
// the middle. A cut that splits a UTF-8 character drops its pieces; other
// invalid bytes become U+FFFD, so the model gets valid text.
func (c *capped) String() string {
	tail := c.tail
	if c.next > 0 {
		tail = append(append([]byte(nil), c.tail[c.next:]...), c.tail[:c.next]...)
	}
	cut := c.cut()
	if cut == 0 {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	head := c.head
	for i := 0; i < utf8.UTFMax && len(head) > 0; i++ {
		r, size := utf8.DecodeLastRune(head)
		if r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n[… %d bytes of output cut here …]\n", cut) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
