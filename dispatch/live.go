package dispatch

import (
	"bytes"
	"strings"

	"github.com/reinhq/rein/event"
)

// maxLive bounds the output of one call sent as tool_output events: enough
// to follow a build or a test run as it goes; the result has the rest.
const maxLive = 64 << 10

// maxLiveLine is the longest piece of a line held back waiting for its end:
// output without newlines (a progress bar) still shows.
const maxLiveLine = 4 << 10

// live sends what a running tool writes to its Partial as tool_output
// events, a line at a time — whole lines, so that the redactor sees a
// secret whole, never split across two events. It is guarded by the
// partial's lock.
type live struct {
	send func(string)
	buf  []byte
	sent int
	cut  bool // maxLive was reached and said so
}

// write takes b, written by the tool, and sends the complete lines in it.
func (l *live) write(b []byte) {
	if l.cut {
		return
	}
	l.buf = append(l.buf, b...)
	for {
		i := bytes.LastIndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) < maxLiveLine {
				return
			}
			i = len(l.buf) - 1
		}
		chunk := string(l.buf[:i+1])
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
		if !l.emit(chunk) {
			return
		}
		if len(l.buf) < maxLiveLine {
			return
		}
	}
}

// emit sends chunk unless the call's share is spent; false once it is.
func (l *live) emit(chunk string) bool {
	if l.sent+len(chunk) > maxLive {
		l.cut, l.buf = true, nil
		l.send("[… more output; the result shows how it ended …]\n")
		return false
	}
	l.sent += len(chunk)
	l.send(strings.ToValidUTF8(chunk, ""))
	return true
}

// flush sends what is left of an unfinished line.
func (l *live) flush() {
	if !l.cut && len(l.buf) > 0 {
		l.emit(string(l.buf))
	}
	l.buf = nil
}

// watchOutput makes k's output go out as tool_output events while it runs.
//
//go:noinline
func (r *Round) watchOutput(k *call) {
	id, name, index := k.llm.ID, k.llm.Name, k.index
	k.partial.mu.Lock()
	k.partial.live = &live{send: func(s string) {
		r.emit(event.Event{Type: event.ToolOutput, CallID: id, Name: name, Index: index, Delta: r.d.redact(s)})
	}}
	k.partial.mu.Unlock()
}

// unwatch sends what is left of k's output and stops sending it: after
// its result, a call's output is not news.
func (p *partial) unwatch() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		p.live.flush()
		p.live = nil
	}
}
