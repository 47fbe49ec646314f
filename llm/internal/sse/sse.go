// Package sse reads server-sent events (the text/event-stream format of the
// WHATWG HTML standard, §9.2) as the model providers send them: "data:"
// lines joined by newlines, an optional "event:" name, comments and unknown
// fields ignored, an event dispatched by a blank line.
//
// It exists instead of the SDKs' decoders because a turn reads thousands of
// events a second: a Reader allocates nothing per event once its buffers have
// grown, and the data it returns is only valid until the next call of Next.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxEventSize bounds one event's data, and what the stream may send
// before it (comments, blank lines, events without data). Providers send
// events of a few hundred bytes; a Responses completion event repeats the
// whole output and can reach megabytes, so the bound is generous and only
// stops a stream that never ends its line, or sends keep-alives for ever.
const MaxEventSize = 32 << 20

// ErrTooLarge is returned by Err when an event, a line, or what comes
// before an event exceeds MaxEventSize.
var ErrTooLarge = errors.New("sse: event (or what came before it) larger than 32 MiB")

// Reader reads events from a stream. The zero value is not usable; make one
// with NewReader.
type Reader struct {
	br    *bufio.Reader
	line  []byte // a line longer than the bufio buffer, assembled
	data  []byte
	event []byte
	err   error
	read  int64 // bytes of the stream read so far
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 8<<10)}
}

// Next reads up to the end of the next event that carries data and reports
// whether there was one. An event cut off by the end of the stream is not
// returned, as the standard says: a stream that ends mid-event was cut.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	r.data = r.data[:0]
	r.event = r.event[:0]
	hasData := false
	start := r.read
	for {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			return false
		}
		if r.read-start > MaxEventSize {
			r.err = ErrTooLarge
			return false
		}
		if len(line) == 0 {
			if hasData {
				return true
			}
			r.event = r.event[:0]
			continue
		}
		if line[0] == ':' {
			continue // a comment, such as a keep-alive
		}
		name, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > MaxEventSize {
				r.err = ErrTooLarge
				return false
			}
			r.data = append(r.data, value...)
			hasData = true
		case "event":
			r.event = append(r.event[:0], value...)
		}
	}
}

// Read returns how many bytes of the stream were read so far: events,
// comments and blank lines alike.
func (r *Reader) Read() int64 { return r.read }

// Data is the current event's data, its lines joined by "\n". It is valid
// until the next call of Next.
func (r *Reader) Data() []byte { return r.data }

// Event is the current event's name, empty when the event gave none (the
// standard's "message"). It is valid until the next call of Next.
func (r *Reader) Event() []byte { return r.event }

// Err is the error that stopped Next, or nil when the stream ended cleanly
// at an event boundary or in the middle of one.
func (r *Reader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// readLine returns the next line without its terminator (LF or CRLF; no
// provider ends lines with a lone CR). The line is valid until the next
// call. A last line without a terminator belongs to an event that was
// never dispatched, so it reads as the end of the stream.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.line = append(r.line[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			if len(r.line)+len(line) > MaxEventSize {
				return nil, ErrTooLarge
			}
			r.line = append(r.line, line...)
		}
		line = r.line
	}
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("sse: %w", err)
	}
	r.read += int64(len(line))
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
