package kb

import (
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/store"
)

// Chunk sizes, in bytes of text. A chunk is small enough that a few of them
// fit a seed of 4000 characters, and large enough to hold a paragraph or a
// function with its context.
const (
	// ChunkTarget is the size a chunk grows to before it ends at the next
	// blank line or heading.
	ChunkTarget = 1200
	// ChunkMax is the size at which a chunk ends whatever the next line.
	ChunkMax = 2000
)

// Chunk cuts text into chunks of whole lines, each with its 1-based line
// range. A chunk ends before a Markdown heading, at a blank line once it
// has grown to ChunkTarget, and always before it would pass ChunkMax; a
// single line longer than ChunkMax is cut into pieces that share its line
// number. Blank chunks are dropped.
func Chunk(text string) []store.KBChunk {
	var out []store.KBChunk
	var b strings.Builder
	start := 0 // first line of the chunk being built, 0 when none
	end := 0
	flush := func() {
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, store.KBChunk{StartLine: start, EndLine: end, Text: strings.TrimRight(b.String(), "\n")})
		}
		b.Reset()
		start = 0
	}
	line := 0
	for rest := text; rest != ""; {
		var l string
		l, rest, _ = strings.Cut(rest, "\n")
		line++
		l = strings.TrimRight(l, "\r")
		blank := strings.TrimSpace(l) == ""
		switch {
		case isHeading(l) && b.Len() > 0:
			flush()
		case b.Len()+len(l)+1 > ChunkMax:
			flush()
		}
		for len(l) > ChunkMax {
			cut := ChunkMax
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			if start == 0 {
				start = line
			}
			b.WriteString(l[:cut])
			end = line
			flush()
			l = l[cut:]
		}
		if start == 0 {
			if blank {
				continue
			}
			start = line
		}
		b.WriteString(l)
		b.WriteByte('\n')
		end = line
		if blank && b.Len() >= ChunkTarget {
			flush()
		}
	}
	flush()
	return out
}

// isHeading reports a Markdown ATX heading ("# Title" … "###### Title").
func isHeading(l string) bool {
	n := 0
	for n < len(l) && n < 7 && l[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (len(l) == n || l[n] == ' ')
}
