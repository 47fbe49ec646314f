package dispatch

import (
	"fmt"
	"strings"
	"sync"
)

// partial is the writer a tool reports its output so far to (tool.Call's
// Partial). It keeps the head and the tail of what was written, each up to
// half the limit, so a tool streaming megabytes costs a bounded amount and
// the aborted result still shows how the output began and where it stopped.
type partial struct {
	mu sync.Mutex
	// half is the cap of head and of tail; set before the first Write.
	half  int
	head  []byte
	tail  []byte // the last bytes after head; trimmed to half when read
	total int
	// live sends the output as events while the call runs (live.go);
	// nil when no one watches.
	live *live
}

func newPartial(limit int) *partial {
	return &partial{half: limit / 2}
}

// Write keeps what fits in head and the latest bytes in tail. It never
// fails.
func (p *partial) Write(b []byte) (int, error) {
	n := len(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		p.live.write(b)
	}
	p.total += n
	if p.half < 1 {
		p.half = 1
	}
	if room := p.half - len(p.head); room > 0 {
		take := min(room, len(b))
		p.head = append(p.head, b[:take]...)
		b = b[take:]
	}
	if len(b) == 0 {
		return n, nil
	}
	if len(b) >= p.half {
		p.tail = append(p.tail[:0], b[len(b)-p.half:]...)
		return n, nil
	}
	p.tail = append(p.tail, b...)
	// Trim only when tail reaches twice the cap, so writes stay amortised
	// O(1) per byte.
	if len(p.tail) >= 2*p.half {
		k := copy(p.tail, p.tail[len(p.tail)-p.half:])
		p.tail = p.tail[:k]
	}
	return n, nil
}

// String returns what was kept, with a marker where bytes were dropped.
// Cuts can split a UTF-8 sequence; the broken bytes are dropped so the
// model gets valid text.
func (p *partial) String() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	tail := p.tail
	if len(tail) > p.half {
		tail = tail[len(tail)-p.half:]
	}
	dropped := p.total - len(p.head) - len(tail)
	if dropped <= 0 {
		return strings.ToValidUTF8(string(p.head)+string(tail), "")
	}
	return strings.ToValidUTF8(string(p.head), "") +
		fmt.Sprintf("\n[… %d bytes omitted …]\n", dropped) +
		strings.ToValidUTF8(string(tail), "")
}
