package loop

import (
	"crypto/rand"
	"strings"
	"sync"
)

// idChars is the number of random characters of an id: 16 of base32's
// lower-case alphabet, 80 bits, as crypto/rand.Text's first 16 are.
const idChars = 16

// idBatch is the number of ids' randomness read from crypto/rand at once.
const idBatch = 32

// idAlphabet is RFC 4648's base32 alphabet in lower case.
const idAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// idSource holds randomness read from crypto/rand for the next ids: a
// thread's or turn's id is a client's handle on it and must stay
// unguessable, but one read of the system's randomness per id (and three
// allocations) was a noticeable part of a library turn, which makes two.
// The bytes not yet handed out are the next ids' secret; each is used
// once.
var idSource struct {
	mu   sync.Mutex
	buf  [idBatch * idChars]byte
	next int // the offset of the next id's bytes; len(buf): read again
}

func init() { idSource.next = len(idSource.buf) }

// NewID returns a fresh random id with a prefix, such as "turn_…": the
// prefix, "_", and 16 characters of base32 carrying 80 bits from
// crypto/rand.
func NewID(prefix string) string {
	var raw [idChars]byte
	idSource.mu.Lock()
	if idSource.next == len(idSource.buf) {
		rand.Read(idSource.buf[:])
		idSource.next = 0
	}
	copy(raw[:], idSource.buf[idSource.next:])
	clear(idSource.buf[idSource.next : idSource.next+idChars])
	idSource.next += idChars
	idSource.mu.Unlock()
	var b strings.Builder
	b.Grow(len(prefix) + 1 + idChars)
	b.WriteString(prefix)
	b.WriteByte('_')
	for _, c := range raw {
		b.WriteByte(idAlphabet[c%32])
	}
	return b.String()
}
