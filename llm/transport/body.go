package transport

import (
	"errors"
	"io"
)

// MaxBody bounds a whole (not streamed) response body, as sse.MaxEventSize
// bounds one streamed event: an answer is a few hundred kilobytes at most,
// and a body that never ends must not fill memory.
const MaxBody = 32 << 20

// ErrBodyTooLarge is the error of a response body longer than MaxBody.
var ErrBodyTooLarge = errors.New("the provider's response body is larger than 32 MiB; it was not read further")

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
