package fs

import (
	"bytes"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// sniffLen is how much of a file decides whether it is text, as git does.
const sniffLen = 8000

// isBinary reports whether head, the start of a file, is not text: it has a
// NUL byte, or more than a tenth of it is control bytes or invalid UTF-8.
func isBinary(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// A rune cut by the end of head is not a fault of the file.
			if len(head)-i < utf8.UTFMax && !utf8.FullRune(head[i:]) {
				i = len(head)
				continue
			}
			bad++
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f' && r != '\v' && r != '\b' && r != 0x1b:
			bad++
		}
		i += size
	}
	return bad*10 > len(head)
}

// binaryMessage says why a binary file is not shown.
func binaryMessage(rel string, head []byte, size int64) string {
	return fmt.Sprintf("%s is a binary file (%s, %d bytes); only text files can be read or edited", quote(rel), http.DetectContentType(head), size)
}

// clipLine cuts line, the start of a line total bytes long, to at most max
// bytes at a rune boundary and says how long it was.
func clipLine(line []byte, total, max int) []byte {
	if total <= max {
		return line
	}
	cut := min(max, len(line))
	for cut > 0 && cut < len(line) && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return fmt.Appendf(line[:cut], "… [line cut, %d bytes]", total)
}
