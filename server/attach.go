package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reinhq/rein/protocol"
)

// Attached files. An input part of type file is a text file the user
// attached (the page's file picker): it becomes part of the user's
// message, a header naming it and its content in a code fence longer than
// any run of backticks in it, so the file cannot end the block early.
// Nothing is written into the workspace. What is refused: an empty or
// control-character name, more than protocol.MaxAttachmentSize bytes,
// text that is not UTF-8 or holds NUL (a binary file).

// attachment returns input part i, an attached file, as message text.
func attachment(i int, p protocol.InputPart) (string, error) {
	name := p.Name
	if k := strings.LastIndexAny(name, `/\`); k >= 0 {
		name = name[k+1:]
	}
	if name == "" || len(name) > protocol.MaxAttachmentName || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "", invalidParams("input[%d]: an attached file needs a name of 1 to %d bytes of text without control characters", i, protocol.MaxAttachmentName)
	}
	if len(p.Text) > protocol.MaxAttachmentSize {
		return "", invalidParams("input[%d]: %s is %d bytes; attach text files of at most %d KiB", i, clip(name), len(p.Text), protocol.MaxAttachmentSize>>10)
	}
	if !utf8.ValidString(p.Text) || strings.IndexByte(p.Text, 0) >= 0 {
		return "", invalidParams("input[%d]: %s is not text (not UTF-8, or it holds NUL bytes); attach text files only", i, clip(name))
	}
	quoted, _ := json.Marshal(name) // a string always marshals
	fence := strings.Repeat("`", max(3, longestRun(p.Text, '`')+1))
	return fmt.Sprintf("\n\nAttached file %s (%d bytes):\n%s\n%s\n%s\n", quoted, len(p.Text), fence, strings.TrimSuffix(p.Text, "\n"), fence), nil
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
