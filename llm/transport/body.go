package transport

import (
	"errors"
	"io"

	"github.com/reinhq/rein/internal/sse"
	"github.com/reinhq/rein/llm"
)

// MaxBody bounds a whole (not streamed) response body: an answer is a few
// hundred kilobytes, a megabyte or two with encrypted reasoning, and a
// body that never ends must not fill memory (reading it up to the bound
// costs some twice the bound).
const MaxBody = 16 << 20

// ErrBodyTooLarge is the error of a response body longer than MaxBody.
var ErrBodyTooLarge = errors.New("the provider's response body is larger than 16 MiB; it was not read further")

// TooLarge returns the llm.TooLarge error of provider for err when err
// says a response passed a bound on its size (a whole body over MaxBody,
// an event over sse.MaxEventSize), or nil.
func TooLarge(provider string, err error) error {
	if errors.Is(err, ErrBodyTooLarge) || errors.Is(err, sse.ErrTooLarge) {
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
