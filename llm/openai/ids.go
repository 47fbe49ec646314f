package openai

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// newCallID returns a fresh call id for a call the provider sent without one
// or that was parsed from text. Ids must be unique in a thread, never the
// call_0 a round-local counter would repeat every round.
func newCallID() string {
	var b [15]byte
	rand.Read(b[:])
	return "call_" + strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}
