package transport

import (
	"errors"
	"io"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/internal/sse"
)

// MaxBody bounds a whole (not streamed) response body: an answer is a few
// hundred kilobytes, a megabyte or two with encrypted reasoning, and a
// body that never ends must not fill memory (reading it up to the bound
// costs some twice the bound).
const MaxBody = 16 << 20

// MaxSilent bounds the bytes of one streamed answer that carry nothing the
// engine sees — keep-alives, events the adapter ignores, signatures and
// other payloads it keeps without an event, the "done" events that repeat
// what was streamed. The engine's caps bound what it does see (package
// loop); this bounds the rest, so a stream of nothing but keep-alives or
// an endless signature ends too. An honest answer stays well below it:
// its silent events repeat its text some four times at most.
const MaxSilent = 32 << 20

// ErrSilentTooLarge is the error of a stream past MaxSilent.
var ErrSilentTooLarge = errors.New("the provider's stream sent more than 32 MiB that carried no output (keep-alives, ignored events or payloads); it was cut")

// Silence counts a stream's silent bytes against MaxSilent. The zero value
// is ready to use.
type Silence struct{ n int64 }

// Add counts n more silent bytes and returns ErrSilentTooLarge once the
// stream has sent more than MaxSilent of them.
func (s *Silence) Add(n int64) error {
	s.n += n
	if s.n > MaxSilent {
		return ErrSilentTooLarge
	}
	return nil
}

// Output reports whether an event carries output the engine counts.
func Output(ev llm.Event) bool {
	switch ev.Kind {
	case llm.EventText, llm.EventReasoning, llm.EventCallStart, llm.EventCallDelta, llm.EventCallDone, llm.EventDone:
		return true
	}
	return false
}

// ErrBodyTooLarge is the error of a response body longer than MaxBody.
var ErrBodyTooLarge = errors.New("the provider's response body is larger than 16 MiB; it was not read further")

// TooLarge returns the llm.TooLarge error of provider for err when err
// says a response passed a bound on its size (a whole body over MaxBody,
// an event over sse.MaxEventSize), or nil.
func TooLarge(provider string, err error) error {
	if errors.Is(err, ErrBodyTooLarge) || errors.Is(err, sse.ErrTooLarge) || errors.Is(err, ErrSilentTooLarge) {
		return &llm.Error{Kind: llm.TooLarge, Provider: provider, Message: err.Error(), Err: err}
	}
	return nil
}

// ReadAll reads a whole response body of at most MaxBody bytes.
func ReadAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, ErrBodyTooLarge
	}
	return b, nil
}
