package fs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/reinhq/rein/sandbox"
)

// Bounds of the diff write_file gives the UIs when it replaces a file.
const (
	// maxMetaDiffInput: a file (before or after) larger than this gets no
	// diff; diffing it would cost more than the card is worth.
	maxMetaDiffInput = 128 << 10
	// maxMetaDiff bounds the diff itself; a longer one is cut at a line
	// and says so.
	maxMetaDiff = 32 << 10
)

// WriteMeta is the Meta of a write_file result that replaced a file: the
// unified diff of the change, for the UIs' tool cards (never sent to the
// model, which wrote the content; the dispatcher redacts it as it redacts
// every result).
type WriteMeta struct {
	Diff string `json:"diff"`
}

// replacedMeta returns the Meta of a write that replaced before (nil: not
// read, or too large) with after, or nil when there is no text diff to
// show: a binary file, or no change.
func replacedMeta(rel string, before []byte, after string) json.RawMessage {
	if before == nil || !isText(before) || !isText([]byte(after)) || string(before) == after {
		return nil
	}
	d := udiff.Unified("a/"+rel, "b/"+rel, string(before), after)
	if d == "" {
		return nil
	}
	if len(d) > maxMetaDiff {
		cut := strings.LastIndexByte(d[:maxMetaDiff], '\n') + 1
		d = d[:cut] + fmt.Sprintf("… (diff cut: %d more bytes)\n", len(d)-cut)
	}
	b, err := json.Marshal(WriteMeta{Diff: d})
	if err != nil {
		return nil
	}
	return b
}

// readBounded reads the file at rel for the diff, nil when it cannot be
// read or has grown past limit since its size was looked at (it is read
// through a limit, never whole).
func readBounded(ws *sandbox.Workspace, rel string, limit int64) []byte {
	f, err := ws.Open(rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(b)) > limit {
		return nil
	}
	return b
}

// isText says b is UTF-8 without NUL bytes, as a diff can show it.
func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }
